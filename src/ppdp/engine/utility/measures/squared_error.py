"""Attribute-level squared error (ARX's QualityModelColumnOrientedSquaredError): per QID the sum
over rows of the largest squared distance between the input's ordinal and the ends of the
published value's ordinal span, capped at the largest possible distance; reported as quality,
1 - result / the sum of those caps. Ordinals are hierarchy row indexes (measures/_arx.py)."""

from __future__ import annotations

from typing import Any

from ppdp.engine.utility.base import UtilityInput, UtilityMeasure, column_quality, register


def _column(inp: UtilityInput, i: int) -> tuple[float, float]:
    h = inp.arx[i]
    ords = [(h.ordinal[c.inputs[i]], h.ordinal[inp.shown(c)[i]], c.count) for c in inp.cells]
    lo = min(min(a) for a, _, _ in ords)
    hi = max(max(a) for a, _, _ in ords)
    result = top = 0.0
    for (x, _), (o1, o2), n in ords:
        cap = max((x - lo) ** 2, (x - hi) ** 2)
        result += n * min(max((x - o1) ** 2, (x - o2) ** 2), cap)
        top += n * cap
    return float(result), float(top)


def squared_error(inp: UtilityInput) -> dict[str, Any]:
    result, maximum = [], []
    for i in range(len(inp.columns)):
        try:
            r, m = _column(inp, i)
        except KeyError:
            r, m = float("nan"), float("nan")
        result.append(r)
        maximum.append(m)
    return column_quality(inp.columns, [0.0] * len(result), result, maximum)


register(UtilityMeasure("squared-error", "attribute-level squared error", squared_error,
                        arx="getAttributeLevelSquaredError", order=70))
