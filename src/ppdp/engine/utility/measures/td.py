"""Transparency degree and query precision (docs/design/paper_notes.md §1): TD = sum over
published rows and QIDs of 1/|v| (|v|: the leaves under the published value); query precision
= 100 TD / (rows x QIDs), withheld rows counting 0. Higher is better."""

from __future__ import annotations

from ppdp.engine.utility.base import UtilityInput, UtilityMeasure, register


def transparency(inp: UtilityInput) -> float:
    arx = inp.arx
    total = 0.0
    for cell in inp.cells:
        if cell.outputs is None:
            continue
        total += cell.count * sum(1.0 / h.leaves_under.get(v, h.domain) for h, v in zip(arx, cell.outputs, strict=True))
    return total


def query_precision(inp: UtilityInput) -> float:
    return 100.0 * transparency(inp) / (inp.rows * len(inp.columns))


register(UtilityMeasure("td", "transparency degree", transparency, order=1))
register(UtilityMeasure("query-precision", "query precision (%)", query_precision, order=2))
