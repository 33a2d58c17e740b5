"""ARX's Loss of each leaf at each level, two ways that must agree (tests/methods/hierarchies/test_auto_builders.py).

``from_definition``: from the builder's parameters (the functional definition). An interval
builder gives the generalized value's bounds [a, b); its loss is the share of the domain
[min, max] of the leaves that it covers, |[a, b) ∩ [min, max]| / (max - min) (ARX's Loss of an
interval; Iyengar 2002, eq. LM). A categorical builder has no bounds; its loss is ARX's
``(|leaves below| - 1) / (|leaves| - 1)``, counted from the definition's groups.

``from_tree``: from the materialized tree alone, reading interval bounds back from its labels
(``[a, b)``, ``<b``, ``>=a``; dates by their calendar period) and counting leaves per
generalized value otherwise.

Both return a (levels, leaves) float array in the tree's row order, except that the priority
builder's definition says how many values each level merges, not which: its rows are sorted
ascending. Level 0 loses 0, the root 1.
"""

from __future__ import annotations

import datetime as dt
import math
import re

import numpy as np

from ppdp.engine.core.builders import builders, temporal
from ppdp.engine.core.hierarchy import Hierarchy


def _share(lo: float, hi: float, dmin: float, dmax: float) -> float:
    if dmax <= dmin:
        return 1.0
    a, b = max(lo, dmin), min(hi, dmax)
    return max(b - a, 0.0) / (dmax - dmin)


def _categorical(groups: list[list[str]]) -> np.ndarray:
    n = len(groups[0])
    out = np.zeros((len(groups), n))
    for j, g in enumerate(groups):
        counts: dict[str, int] = {}
        for v in g:
            counts[v] = counts.get(v, 0) + 1
        out[j] = [(counts[v] - 1) / (n - 1) if n > 1 else 0.0 for v in g]
    return out


def from_definition(h: Hierarchy) -> np.ndarray:
    d = h.definition
    assert d is not None, "a built hierarchy carries its definition"
    module = builders()[d.builder]
    params = dict(d.params)
    leaves = h.leaves
    levels = h.height + 1
    if module.bounds(params, leaves[0], 1) is None:  # categorical
        if d.builder == "codes":
            groups = [[module.group(params, v, j) for v in leaves] for j in range(levels - 1)]
            groups.append(["*"] * len(leaves))
            return _categorical(groups)
        # priority: level j merges the merged[j-1] rarest values (which ones the data say, not the
        # definition), so the definition gives each level's losses as a sorted multiset
        n = len(leaves)
        out = np.zeros((levels, n))
        for j, m in enumerate(params["merged"][: levels - 2], start=1):
            out[j, n - m:] = (m - 1) / (n - 1)
        out[levels - 1] = 1.0
        return out
    points = [module.bounds(params, v, 0)[0] for v in leaves]
    dmin, dmax = min(points), max(points)
    out = np.zeros((levels, len(leaves)))
    for j in range(1, levels):
        out[j] = [1.0 if j == levels - 1 else _share(*_bounds(module, params, v, j), dmin, dmax) for v in leaves]
    return out


def _bounds(module, params: dict, leaf: str, level: int) -> tuple[float, float]:
    b = module.bounds(params, leaf, level)
    assert b is not None, "an interval builder"
    return b


_NUM = r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?"


def _label_bounds(text: str) -> tuple[float, float] | None:
    """Bounds a label states, or None for a categorical value."""
    if m := re.fullmatch(rf"\[({_NUM}), ({_NUM})\)", text):
        return float(m[1]), float(m[2])
    if m := re.fullmatch(rf"<({_NUM})", text):
        return -math.inf, float(m[1])
    if m := re.fullmatch(rf">=({_NUM})", text):
        return float(m[1]), math.inf
    return _period(text)


def _period(text: str) -> tuple[float, float] | None:
    s = temporal.seconds
    try:
        if m := re.fullmatch(r"(\d{4})-(\d{4})", text):
            a, b = int(m[1]), int(m[2])
            last = dt.datetime(b + 1, 1, 1) if b < 9999 else None
            return s(dt.datetime(max(a, 1), 1, 1)), (s(last) if last else s(dt.datetime(9999, 12, 31, 23, 59, 59)) + 1.0)
        if m := re.fullmatch(r"(\d{4})", text):
            y = int(m[1])
            return s(dt.datetime(y, 1, 1)), s(dt.datetime(y + 1, 1, 1))
        if m := re.fullmatch(r"(\d{4})-Q([1-4])", text):
            y, q = int(m[1]), int(m[2])
            end = dt.datetime(y + 1, 1, 1) if q == 4 else dt.datetime(y, 3 * q + 1, 1)
            return s(dt.datetime(y, 3 * q - 2, 1)), s(end)
        if m := re.fullmatch(r"(\d{4})-(\d{2})", text):
            y, mo = int(m[1]), int(m[2])
            end = dt.datetime(y + 1, 1, 1) if mo == 12 else dt.datetime(y, mo + 1, 1)
            return s(dt.datetime(y, mo, 1)), s(end)
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            day = dt.datetime.fromisoformat(text)
            return s(day), s(day) + 86400.0
        if m := re.fullmatch(r"(\d{4}-\d{2}-\d{2}) (\d{2})h", text):
            hour = dt.datetime.fromisoformat(f"{m[1]} {m[2]}:00")
            return s(hour), s(hour) + 3600.0
        if re.fullmatch(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}", text):
            minute = dt.datetime.fromisoformat(text)
            return s(minute), s(minute) + 60.0
    except ValueError:
        return None
    return None


def _point(v: str) -> float:
    """A leaf as a point: a number is itself, a date or timestamp its instant."""
    if re.fullmatch(_NUM, v):
        return float(v)
    return temporal.seconds(temporal.parse(v))


def from_tree(h: Hierarchy) -> np.ndarray:
    levels, n = h.height + 1, len(h.rows)
    numeric = h.height >= 2 and _label_bounds(h.rows[0][1]) is not None
    if not numeric:
        return _categorical([[r[j] for r in h.rows] for j in range(levels)])
    points = [_point(v) for v in h.leaves]
    dmin, dmax = min(points), max(points)
    out = np.zeros((levels, n))
    for j in range(1, levels):
        for i, r in enumerate(h.rows):
            b = _label_bounds(r[j]) if j < levels - 1 else None
            out[j, i] = 1.0 if b is None else _share(b[0], b[1], dmin, dmax)
    return out
