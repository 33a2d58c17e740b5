"""SSE/SST (ARX's QualityModelRowOrientedSSESST): the sum of squared distances between each row's
input and published midpoints (SSE), over the sum of squared distances of the published
midpoints to the input centroid (SST); reported as 1 - SSE/SST, clamped. Ordinals as in
squared_error.py."""

from __future__ import annotations

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


def sse_sst(inp: UtilityInput) -> dict[str, Any]:
    q = len(inp.columns)
    try:
        spans = [ordinals(inp, i) for i in range(q)]
    except KeyError:
        return {"value": float("nan")}
    n = float(inp.rows)
    k = inp.counts
    mid = lambda span: (span[:, 0] + span[:, 1]) / 2.0  # noqa: E731
    # per row, the squared distances summed over QIDs
    within = np.zeros(len(k))
    between = np.zeros(len(k))
    for x, o in spans:
        centroid = ordered_sum(k * mid(x)) / n
        within += (mid(x) - mid(o)) ** 2
        between += (mid(o) - centroid) ** 2
    sse = ordered_sum(k * within)
    sst = ordered_sum(k * between)
    return {"value": row_quality(0.0, sse, sst), "sse": sse, "sst": sst}


register(UtilityMeasure("sse-sst", "SSE/SST", sse_sst, arx="getSSESST", order=90))
