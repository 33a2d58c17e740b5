"""SSE/SST (ARX's QualityModelRowOrientedSSESST): the sum of squared distances between each row's
input and published midpoints (SSE), over the sum of squared distances of the published
midpoints to the input centroid (SST); reported as 1 - SSE/SST, clamped. Ordinals as in
squared_error.py."""

from __future__ import annotations

from typing import Any

from ppdp.engine.utility.base import UtilityInput, UtilityMeasure, register, row_quality


def sse_sst(inp: UtilityInput) -> dict[str, Any]:
    arx, q = inp.arx, len(inp.columns)
    try:
        rows = [([h.ordinal[c.inputs[i]] for i, h in enumerate(arx)], [h.ordinal[inp.shown(c)[i]] for i, h in enumerate(arx)],
                 c.count) for c in inp.cells]
    except KeyError:
        return {"value": float("nan")}
    n = float(inp.rows)
    mid = lambda span: (span[0] + span[1]) / 2.0  # noqa: E731
    centroid = [sum(k * mid(x[i]) for x, _, k in rows) / n for i in range(q)]
    sse = sum(k * sum((mid(x[i]) - mid(o[i])) ** 2 for i in range(q)) for x, o, k in rows)
    sst = sum(k * sum((mid(o[i]) - centroid[i]) ** 2 for i in range(q)) for _, o, k in rows)
    return {"value": row_quality(0.0, sse, sst), "sse": sse, "sst": sst}


register(UtilityMeasure("sse-sst", "SSE/SST", sse_sst, arx="getSSESST", order=90))
