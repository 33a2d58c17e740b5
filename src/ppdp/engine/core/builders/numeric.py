"""Numbers: a ladder of intervals over cut points, with top and bottom coding of the tails.

``cuts`` c_0 < c_1 < ... < c_m are the level-1 bounds (ARX's interval builder). Level 1 holds
the bins [c_i, c_{i+1}); values below c_1 are bottom-coded as ``<c_1`` and values at or above
c_{m-1} are top-coded as ``>=c_{m-1}`` (so the tails beyond c_0 and c_m join the first and last
bin). Level j >= 2 joins 2^(j-1) neighbouring bins (ARX's fanout 2), until one group would
remain or ``MAX_LEVELS`` levels are built: then the root ``*``. ``method`` says how the cuts were chosen ("width": a round width over the
1 %..99 % quantile range; "depth": round quantiles, equal-depth), for the record only: the cuts
define the hierarchy. A value that parses as no finite number is refused.
"""

from __future__ import annotations

import math
from typing import Any

from ppdp.engine.core.hierarchy import Hierarchy, from_rows
from ppdp.errors import HierarchyError

NAME = "numeric"
BASE_BINS = 12  # equal width: about this many bins between the 1 % and 99 % quantiles
MAX_LEVELS = 3  # levels below the root (a deeper ladder multiplies the lattice every optimizer searches)
DEPTH_QUANTILES = (0.01, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 0.99)


def nice(x: float, step: float, up: bool) -> float:
    """``x`` rounded down (or up) to a multiple of ``step``."""
    k = math.ceil(x / step - 1e-9) if up else math.floor(x / step + 1e-9)
    return float(round(k * step, 12))


def nice_width(span: float, bins: int) -> float:
    """A round width (1, 2, 2.5 or 5 times a power of ten) near ``span / bins``."""
    raw = span / max(bins, 1)
    if not raw > 0:
        return 1.0
    exp = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if m * exp >= raw * 0.999:
            return m * exp
    return 10 * exp


def width_cuts(q_low: float, q_high: float, *, integral: bool, bins: int = BASE_BINS) -> list[float]:
    """Equal-width cut points: a round width, bounds at its multiples covering [q_low, q_high]."""
    w = nice_width(q_high - q_low, bins)
    if integral:
        w = max(w, 1.0)
    lo, hi = nice(q_low, w, False), nice(q_high, w, True)
    if hi <= lo:
        hi = lo + w
    n = int(round((hi - lo) / w))
    return [float(round(lo + i * w, 12)) for i in range(n + 1)]


def depth_cuts(quantiles: list[float], *, integral: bool) -> list[float]:
    """Equal-depth cut points: the quantiles ``DEPTH_QUANTILES`` rounded to a step of about a
    hundredth of their range (integers: at least 1), duplicates dropped."""
    span = max(quantiles) - min(quantiles)
    step = nice_width(span, 100) if span > 0 else 1.0
    if integral:
        step = max(step, 1.0)
    out: list[float] = []
    for i, q in enumerate(quantiles):
        c = nice(q, step, up=i == len(quantiles) - 1)
        if not out or c > out[-1]:
            out.append(c)
    if len(out) < 2:
        out.append(out[-1] + step)
    return out


def levels(cuts: list[float]) -> int:
    """Levels below the root: level j has ceil(bins / 2^(j-1)) groups, kept while >= 2."""
    bins, j = len(cuts) - 1, 1
    while math.ceil(bins / 2 ** (j - 1)) >= 2:
        j += 1
    return min(max(j - 1, 0), MAX_LEVELS)


def _group(cuts: list[float], x: float, level: int) -> tuple[int, int]:
    """(group index, groups) of ``x`` at ``level`` >= 1."""
    bins = len(cuts) - 1
    k = 0
    while k < bins - 1 and x >= cuts[k + 1]:
        k += 1
    size = 2 ** (level - 1)
    return k // size, math.ceil(bins / size)


def bounds(params: dict[str, Any], leaf: str, level: int) -> tuple[float, float]:
    """[a, b) of ``leaf``'s group at ``level`` (level 0: the point itself; the root: everything)."""
    cuts = list(params["cuts"])
    x = number(leaf, "?")
    if level == 0:
        return x, x
    if level > levels(cuts):
        return -math.inf, math.inf
    g, groups = _group(cuts, x, level)
    size = 2 ** (level - 1)
    lo = -math.inf if g == 0 else cuts[g * size]
    hi = math.inf if g == groups - 1 else cuts[min((g + 1) * size, len(cuts) - 1)]
    return lo, hi


def fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def label(lo: float, hi: float) -> str:
    if lo == -math.inf and hi == math.inf:
        return "*"
    if lo == -math.inf:
        return f"<{fmt(hi)}"
    if hi == math.inf:
        return f">={fmt(lo)}"
    return f"[{fmt(lo)}, {fmt(hi)})"


def number(v: str, attribute: str) -> float:
    try:
        x = float(v)
    except ValueError:
        raise HierarchyError(f"The auto hierarchy of {attribute!r} is numeric, but the column holds {v!r}, which is no number. "
                             'Hint: give a hierarchy of another type, e.g. hierarchy = "flat".') from None
    if not math.isfinite(x):
        raise HierarchyError(f"The auto hierarchy of {attribute!r} is numeric, but the column holds {v!r}. "
                             'Hint: set such values to NULL (with null_policy = "suppress").')
    return x


def build(attribute: str, leaves: list[str], params: dict[str, Any], counts: dict[str, int]) -> Hierarchy:
    cuts = [float(c) for c in params["cuts"]]
    if len(cuts) < 2 or any(b <= a for a, b in zip(cuts, cuts[1:], strict=False)):
        raise HierarchyError(f"The numeric hierarchy of {attribute!r} needs at least two increasing cut points, got {cuts}.")
    for v in leaves:
        number(v, attribute)
    height = levels(cuts)
    rows = [[v] + [label(*bounds(params, v, j)) for j in range(1, height + 1)] + ["*"] for v in sorted(set(leaves))]
    return from_rows(attribute, rows, source=f"auto: numeric ({params.get('method', 'cuts')}), {len(cuts) - 1} bins")
