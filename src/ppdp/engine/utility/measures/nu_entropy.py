"""Non-uniform entropy (ARX's QualityModelColumnOrientedNonUniformEntropy; Gionis & Tassa 2009,
De Waal & Willenborg 1999): per QID, -sum over rows of log2 P(input value | published value),
taken level by level as ARX does for rows generalized to different levels (local recoding,
withheld rows at the top); between 0 and the entropy of the source column."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ppdp.engine.utility.base import (
    Codes,
    UtilityInput,
    UtilityMeasure,
    column_quality,
    ordered_sum,
    register,
)


def _generalized(inputs: Codes, generalize: dict[str, str]) -> np.ndarray:
    """Per distinct input value, its generalization (``generalize``) as an id of the
    generalized values; KeyError for an input outside the hierarchy."""
    ids: dict[str, int] = {}
    return np.array([ids.setdefault(generalize[v], len(ids)) for v in inputs.values], dtype=np.int64)


def _column(inp: UtilityInput, i: int) -> float:
    h = inp.arx[i]
    gen = h.generalize
    inputs = inp.input_codes[i]
    rows = inp.counts.astype(np.float64)
    # per cell, the level of the published value
    level = inp.shown_codes[i].map(h.first_level.__getitem__, np.int64)
    levels = np.unique(level).tolist()
    result = 0.0
    for index, current in enumerate(levels):
        previous = levels[index - 1] if index > 0 else current
        live = level >= current
        # per distinct input value, its value before and after this level's step
        a = np.arange(len(inputs.values)) if index == 0 else _generalized(inputs, gen[previous])
        b = _generalized(inputs, gen[current])
        v, n = inputs.index[live], rows[live]
        before = np.bincount(a[v], weights=n)
        after = np.bincount(b[v], weights=n)
        # log2 P(before | after) per distinct input value with live rows (math.log2: np.log2
        # may differ from it in the last bit)
        seen = np.unique(v)
        log_p = np.zeros(len(inputs.values))
        log_p[seen] = [math.log2(p) for p in (before[a[seen]] / after[b[seen]]).tolist()]
        result = ordered_sum(n * log_p[v], start=result)
    return -result


def _maximum(inp: UtilityInput, i: int) -> float:
    freq = np.bincount(inp.input_codes[i].index, weights=inp.counts.astype(np.float64))
    n = float(inp.rows)
    return -sum(f * math.log2(f / n) for f in freq.tolist())


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
