"""Attribute-level squared error (ARX's QualityModelColumnOrientedSquaredError): per QID the sum
over rows of the largest squared distance between the input's ordinal and the ends of the
published value's ordinal span, capped at the largest possible distance; reported as quality,
1 - result / the sum of those caps. Ordinals are hierarchy row indexes (measures/_arx.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ppdp.engine.utility.base import UtilityInput, UtilityMeasure, column_quality, register
from ppdp.engine.utility.measures._arx import ordinals


def _column(inp: UtilityInput, i: int) -> tuple[float, float]:
    spans, shown = ordinals(inp, i)
    lo, hi = spans.min(), spans.max()
    x, o1, o2 = spans[:, 0], shown[:, 0], shown[:, 1]
    cap = np.maximum((x - lo) ** 2, (x - hi) ** 2)
    far = np.maximum((x - o1) ** 2, (x - o2) ** 2)
    # integer sums, exact as the loop over cells adds them
    result = sum((inp.counts * np.minimum(far, cap)).tolist())
    top = sum((inp.counts * cap).tolist())
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
