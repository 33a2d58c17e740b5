"""Transparency degree and query precision (docs/design/paper_notes.md §1): TD = sum over
published rows and QIDs of 1/|v| (|v|: the leaves under the published value); query precision
= 100 TD / (rows x QIDs), withheld rows counting 0. Higher is better."""

from __future__ import annotations

import numpy as np

from ppdp.engine.utility.base import UtilityInput, UtilityMeasure, ordered_sum, register


def transparency(inp: UtilityInput) -> float:
    per_row = np.zeros(len(inp.cells))
    for h, shown in zip(inp.arx, inp.shown_codes, strict=True):
        per_row += 1.0 / shown.get(h.leaves_under, h.domain)
    kept = inp.kept
    return ordered_sum(inp.counts[kept] * per_row[kept])


def query_precision(inp: UtilityInput) -> float:
    return 100.0 * transparency(inp) / (inp.rows * len(inp.columns))


register(UtilityMeasure("td", "transparency degree", transparency, order=1))
register(UtilityMeasure("query-precision", "query precision (%)", query_precision, order=2))
