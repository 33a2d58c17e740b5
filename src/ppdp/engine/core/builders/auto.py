"""``hierarchy = "auto"``: which builder, with which parameters, from a column's profile.

- no non-NULL value: refused (nothing to generalize); a single value: ``priority`` with no
  merge levels, i.e. value -> ``*``.
- NULL is not a leaf: NULL rows follow ``source.null_policy`` ("error" refuses the run,
  "suppress" withholds those rows), as with every other hierarchy; ``ppdp suggest`` writes
  ``null_policy = "suppress"`` when a chosen QID holds NULLs.
- numbers with more than ``FEW`` values: ``numeric``, with the ``CANDIDATES`` cuts all built
  (equal width with about 12 and about 6 bins, equal depth at the octiles), tails beyond the 1 % and 99 % quantiles top/bottom-coded, and the
  ladder kept that loses least per separation given up (``select.score``: the area under ARX's
  Loss against the generalized column's entropy; ties keep equal-width).
- dates and timestamps: ``temporal`` with the granularities that tell the extremes apart.
- text that is code-shaped (at least ``CODE_SHARE`` of the values; ZIP, ICD, phone numbers) with
  more than ``FEW`` values, and any text with more than ``MAX_CATEGORIES`` values: ``codes``
  (redaction from the right).
- other text, booleans and numbers with at most ``FEW`` values: ``priority``.
- more than ``MAX_LEAVES`` distinct values: refused (a near-identifier: drop it or give a file).

Overrides (``{ type = "auto", builder = "numeric", method = "depth" }``, ``cuts``, ``ladder``,
``keep``, ``merged``) replace the chosen builder or parameters.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ppdp.engine.core.builders import Definition, codes, numeric, priority, select, temporal
from ppdp.engine.core.builders.profile import ColumnProfile
from ppdp.errors import HierarchyError

FEW = 12
MAX_CATEGORIES = 200
MAX_LEAVES = 100_000
CODE_SHARE = 0.95
# candidate numeric ladders (method, equal-width bins); ties keep the first
CANDIDATES = (("width", numeric.BASE_BINS), ("width", numeric.BASE_BINS // 2), ("depth", 0))
OVERRIDES = ("builder", "method", "cuts", "ladder", "keep", "merged", "rebuild")


def check(p: ColumnProfile) -> None:
    """Refuse before any value is read: a column of NULLs only, or one with far more distinct
    values than a hierarchy holds (the profile's count is approximate: a margin of 5 %)."""
    if p.rows and p.nonnull == 0:
        raise HierarchyError(f"Column {p.name!r} holds only NULL values: there is nothing to generalize. "
                             "Hint: drop it (source.drop) instead of making it a quasi-identifier.")
    if p.distinct > 1.05 * MAX_LEAVES:
        raise HierarchyError(f"Column {p.name!r} has about {p.distinct:,} distinct values (more than {MAX_LEAVES:,}): it is close "
                             "to an identifier, not a quasi-identifier. Hint: drop it, or give a hierarchy file.")


def choose(p: ColumnProfile, counts: dict[str, int], overrides: dict[str, Any] | None = None) -> Definition:
    """The definition of ``p``'s hierarchy; ``counts`` are its values' rows (text -> rows)."""
    o = dict(overrides or {})
    o.pop("rebuild", None)
    if p.nonnull == 0 or not counts:
        raise HierarchyError(f"Column {p.name!r} holds only NULL values: there is nothing to generalize. "
                             "Hint: drop it (source.drop) instead of making it a quasi-identifier.")
    if len(counts) > MAX_LEAVES:
        raise HierarchyError(f"Column {p.name!r} has {len(counts):,} distinct values (more than {MAX_LEAVES:,}): it is close "
                             "to an identifier, not a quasi-identifier. Hint: drop it, or give a hierarchy file.")
    builder = o.pop("builder", None) or _builder(p, counts)
    if builder == "numeric":
        method = o.pop("method", None)
        if method is None and "cuts" not in o:
            points = np.array([numeric.number(v, p.name) for v in counts])
            weights = np.array(list(counts.values()), dtype=float)
            return min((Definition.of("numeric", method=m, cuts=_cuts(p, m, bins), **o) for m, bins in CANDIDATES),
                       key=lambda d: select.score(select.numeric_curve(points, weights, list(d.param("cuts")))))
        method = method or "width"
        if "cuts" not in o:
            o["cuts"] = _cuts(p, method)
        return Definition.of("numeric", method=method, **o)
    if builder == "temporal":
        if "ladder" not in o:
            o["ladder"] = temporal.ladder_for(min(counts), max(counts), timestamp=p.kind == "timestamp")
        return Definition.of("temporal", **o)
    if builder == "codes":
        if "keep" not in o:
            lens = [len(v) for v in counts]
            o["keep"] = codes.keep_for(min(lens), max(lens))
        return Definition.of("codes", **o)
    if builder == "priority":
        if "merged" not in o:
            o["merged"] = priority.merged_for(counts)
        return Definition.of("priority", **o)
    raise HierarchyError(f"Unknown builder {builder!r} for {p.name!r}. Known: numeric, temporal, codes, priority.")


def _builder(p: ColumnProfile, counts: dict[str, int]) -> str:
    n = len(counts)
    if p.kind in ("date", "timestamp"):
        return "temporal"
    if p.kind == "number" and n > FEW:
        return "numeric"
    if p.kind == "text" and n > FEW and (p.code_share >= CODE_SHARE or n > MAX_CATEGORIES):
        return "codes"
    return "priority"


def _cuts(p: ColumnProfile, method: str, bins: int = numeric.BASE_BINS) -> list[float]:
    ends = [float(v) for v in (p.vmin, p.vmax) if isinstance(v, int | float)]
    integral = all(float(q).is_integer() for q in (*p.quantiles, *ends))
    if method == "depth":
        return numeric.depth_cuts([p.quantile(q) for q in numeric.DEPTH_QUANTILES], integral=integral)
    return numeric.width_cuts(p.quantile(0.01), p.quantile(0.99), integral=integral, bins=bins)
