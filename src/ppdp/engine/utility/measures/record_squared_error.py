"""Record-level squared error (ARX's QualityModelRowOrientedSquaredError): the mean over rows of
the Euclidean distance, in units of each QID's standard deviation, between a row's input
ordinals and the far end of its published spans; between 0 and the same distance to the ends of
each QID's whole range. Ordinals as in squared_error.py."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ppdp.engine.utility.base import (
    UtilityInput,
    UtilityMeasure,
    ordered_sum,
    register,
    row_quality,
)
from ppdp.engine.utility.measures._arx import ordinals


def _far(x: np.ndarray, o1: np.ndarray | float, o2: np.ndarray | float, sd: float) -> np.ndarray:
    """Per row, the squared distance in standard deviations from ``x`` to the farther end of (o1, o2)."""
    far = np.where((o2 - x) > (x - o1), o2, o1)
    t = np.zeros(len(x)) if sd == 0.0 else (x - far) / sd
    return t * t


def record_squared_error(inp: UtilityInput) -> dict[str, Any]:
    q = len(inp.columns)
    try:
        spans = [ordinals(inp, i) for i in range(q)]
    except KeyError:
        return {"value": float("nan")}
    n = float(inp.rows)
    k = inp.counts
    real_sq = np.zeros(len(k))
    top_sq = np.zeros(len(k))
    for x_span, o in spans:
        x = x_span[:, 0]
        mean = sum((x * k).tolist()) / n
        sd = math.sqrt(ordered_sum(k * (x - mean) ** 2) / n)
        lo, hi = float(min(x_span.min(), o.min())), float(max(x_span.max(), o.max()))
        real_sq += _far(x, o[:, 0], o[:, 1], sd)
        top_sq += _far(x, lo, hi, sd)
    real = ordered_sum(k * np.sqrt(real_sq)) / q / n
    top = ordered_sum(k * np.sqrt(top_sq)) / q / n
    return {"value": row_quality(0.0, real, top), "distance": real}


register(UtilityMeasure("record-squared-error", "record-level squared error", record_squared_error,
                        arx="getRecordLevelSquaredError", order=80))
