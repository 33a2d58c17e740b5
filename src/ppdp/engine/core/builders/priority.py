"""Low-cardinality categories: merge the least frequent values first (ARX's priority builder).

The values are ordered by their number of rows, rarest first (ties by value). Level j puts the
first ``merged[j-1]`` of them into one group labelled ``other (m values)`` (``merged`` increases strictly,
each at least 2 and below the number of values), the others stay as they are; then the root
``*``. The label names the group's size, so each level's group has its own label (a value's
share of the domain is looked up by its label, as ARX's quality models do). The merge order is recomputed from the rows of the version being built, so a stored
definition rebuilds the same tree when the frequencies' order is the same (a new version keeps
its published tree: see release/stages/validate.py). Categorical: its loss is ARX's leaf share.
"""

from __future__ import annotations

from typing import Any

from ppdp.engine.core.hierarchy import Hierarchy, from_rows
from ppdp.errors import HierarchyError

NAME = "priority"
SHARES = (0.05, 0.25)  # merge the rarest values holding up to these shares of the rows


def order(leaves: list[str], counts: dict[str, int]) -> list[str]:
    return sorted(set(leaves), key=lambda v: (counts.get(v, 0), v))


def merged_for(counts: dict[str, int]) -> list[int]:
    """How many of the rarest values each level merges: the most whose rows stay within each
    share of ``SHARES``, at least 2, strictly increasing, fewer than all values."""
    ranked = sorted(counts.values())
    total, n = sum(ranked), len(ranked)
    out: list[int] = []
    for share in SHARES:
        cum, m = 0, 0
        for c in ranked:
            if cum + c > share * total:
                break
            cum += c
            m += 1
        m = max(m, 2)
        if m < n and (not out or m > out[-1]):
            out.append(m)
    return out


def other_label(leaves: list[str], m: int) -> str:
    label = f"other ({m} values)"
    while label in leaves:
        label = f"({label})"
    return label


def bounds(params: dict[str, Any], leaf: str, level: int) -> None:
    """Categorical: no interval."""
    return None


def build(attribute: str, leaves: list[str], params: dict[str, Any], counts: dict[str, int]) -> Hierarchy:
    merged = [int(m) for m in params["merged"]]
    if any(m < 2 for m in merged) or any(b <= a for a, b in zip(merged, merged[1:], strict=False)):
        raise HierarchyError(f"The priority hierarchy of {attribute!r} needs merge counts that increase, each >= 2; got {merged}.")
    ranked = order(leaves, counts)
    merged = [m for m in merged if m < len(ranked)]  # a version with fewer values keeps the levels it can fill
    rank = {v: i for i, v in enumerate(ranked)}
    other = {m: other_label(ranked, m) for m in merged}
    rows = [[v] + [other[m] if rank[v] < m else v for m in merged] + ["*"] for v in sorted(ranked)]
    return from_rows(attribute, rows, source=f"auto: priority (merge {merged} rarest)")
