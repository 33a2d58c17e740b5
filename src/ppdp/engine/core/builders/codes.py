"""Codes (ZIP, ICD, postal, phone-like strings): a redaction ladder, ARX's redaction builder.

Level j keeps the first ``keep[j-1]`` characters and replaces the rest by ``*``, keeping the
length (``10027`` -> ``1002*`` -> ``100**`` -> ...), so codes of different lengths stay apart
and every level nests in the next; a code shorter than the kept length stays whole. ``keep``
decreases strictly; then the root ``*``. Categorical: its loss is ARX's leaf share.
"""

from __future__ import annotations

from typing import Any

from ppdp.engine.core.hierarchy import Hierarchy, from_rows
from ppdp.errors import HierarchyError

NAME = "codes"
MAX_LEVELS = 4


def keep_for(min_len: int, max_len: int) -> list[int]:
    """Kept prefix lengths: one character fewer per level from the longest code, at most
    ``MAX_LEVELS`` levels spread evenly, down to 1 character."""
    top = max(max_len - 1, 1)
    steps = list(range(top, 0, -1))
    if len(steps) > MAX_LEVELS:
        pick = {round(i * (len(steps) - 1) / (MAX_LEVELS - 1)) for i in range(MAX_LEVELS)}
        steps = [s for i, s in enumerate(steps) if i in pick]
    return steps


def redact(v: str, keep: int) -> str:
    return v if keep >= len(v) else v[:keep] + "*" * (len(v) - keep)


def bounds(params: dict[str, Any], leaf: str, level: int) -> None:
    """Categorical: no interval."""
    return None


def group(params: dict[str, Any], leaf: str, level: int) -> str:
    """``leaf``'s generalized value at ``level`` (the root above the ladder)."""
    keep = list(params["keep"])
    if level == 0:
        return leaf
    return "*" if level > len(keep) else redact(leaf, keep[level - 1])


def build(attribute: str, leaves: list[str], params: dict[str, Any], counts: dict[str, int]) -> Hierarchy:
    keep = [int(k) for k in params["keep"]]
    if any(k < 1 for k in keep) or any(b >= a for a, b in zip(keep, keep[1:], strict=False)):
        raise HierarchyError(f"The code hierarchy of {attribute!r} needs kept lengths that decrease, each >= 1; got {keep}.")
    rows = [[v] + [group(params, v, j) for j in range(1, len(keep) + 1)] + ["*"] for v in sorted(set(leaves))]
    return from_rows(attribute, rows, source=f"auto: codes (keep {keep})")
