"""Non-uniform entropy (ARX's QualityModelColumnOrientedNonUniformEntropy; Gionis & Tassa 2009,
De Waal & Willenborg 1999): per QID, -sum over rows of log2 P(input value | published value),
taken level by level as ARX does for rows generalized to different levels (local recoding,
withheld rows at the top); between 0 and the entropy of the source column."""

from __future__ import annotations

import math
from typing import Any

from ppdp.engine.utility.base import UtilityInput, UtilityMeasure, column_quality, register


def _column(inp: UtilityInput, i: int) -> float:
    h = inp.arx[i]
    gen = h.generalize
    # (input value, level of the published value, rows) per cell
    pairs = [(c.inputs[i], h.first_level[inp.shown(c)[i]], c.count) for c in inp.cells]
    levels = sorted({lv for _, lv, _ in pairs})
    result = 0.0
    for index, current in enumerate(levels):
        previous = levels[index - 1] if index > 0 else current
        live = [(v, n) for v, lv, n in pairs if lv >= current]
        before: dict[str, float] = {}
        after: dict[str, float] = {}
        for v, n in live:
            a = v if index == 0 else gen[previous][v]
            before[a] = before.get(a, 0.0) + n
            b = gen[current][v]
            after[b] = after.get(b, 0.0) + n
        for v, n in live:
            a = v if index == 0 else gen[previous][v]
            result += n * math.log2(before[a] / after[gen[current][v]])
    return -result


def _maximum(inp: UtilityInput, i: int) -> float:
    freq: dict[str, float] = {}
    for c in inp.cells:
        freq[c.inputs[i]] = freq.get(c.inputs[i], 0.0) + c.count
    n = float(inp.rows)
    return -sum(f * math.log2(f / n) for f in freq.values())


def nu_entropy(inp: UtilityInput) -> dict[str, Any]:
    result, maximum = [], []
    for i in range(len(inp.columns)):
        try:
            result.append(_column(inp, i))
        except KeyError:  # a value outside the hierarchy: ARX reports the column as unavailable
            result.append(float("nan"))
        maximum.append(_maximum(inp, i))
    out = column_quality(inp.columns, [0.0] * len(result), result, maximum)
    return out | {"entropy": sum(r for r in result if r == r)}  # noqa: PLR0124


register(UtilityMeasure("nu-entropy", "non-uniform entropy", nu_entropy, arx="getNonUniformEntropy", order=30))
