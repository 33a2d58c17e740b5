"""Record-level squared error (ARX's QualityModelRowOrientedSquaredError): the mean over rows of
the Euclidean distance, in units of each QID's standard deviation, between a row's input
ordinals and the far end of its published spans; between 0 and the same distance to the ends of
each QID's whole range. Ordinals as in squared_error.py."""

from __future__ import annotations

import math
from typing import Any

from ppdp.engine.utility.base import UtilityInput, UtilityMeasure, register, row_quality


def _far(x: float, o1: float, o2: float, sd: float) -> float:
    far = o2 if (o2 - x) > (x - o1) else o1
    t = 0.0 if sd == 0.0 else (x - far) / sd
    return t * t


def record_squared_error(inp: UtilityInput) -> dict[str, Any]:
    arx, q = inp.arx, len(inp.columns)
    try:
        rows = [([h.ordinal[c.inputs[i]] for i, h in enumerate(arx)], [h.ordinal[inp.shown(c)[i]] for i, h in enumerate(arx)],
                 c.count) for c in inp.cells]
    except KeyError:
        return {"value": float("nan")}
    n = float(inp.rows)
    sd, lo, hi = [], [], []
    for i in range(q):
        mean = sum(x[i][0] * k for x, _, k in rows) / n
        sd.append(math.sqrt(sum(k * (x[i][0] - mean) ** 2 for x, _, k in rows) / n))
        lo.append(float(min(min(min(x[i]), min(o[i])) for x, o, _ in rows)))
        hi.append(float(max(max(max(x[i]), max(o[i])) for x, o, _ in rows)))
    real = top = 0.0
    for x, o, k in rows:
        real += k * math.sqrt(sum(_far(x[i][0], o[i][0], o[i][1], sd[i]) for i in range(q)))
        top += k * math.sqrt(sum(_far(x[i][0], lo[i], hi[i], sd[i]) for i in range(q)))
    real, top = real / q / n, top / q / n
    return {"value": row_quality(0.0, real, top), "distance": real}


register(UtilityMeasure("record-squared-error", "record-level squared error", record_squared_error,
                        arx="getRecordLevelSquaredError", order=80))
