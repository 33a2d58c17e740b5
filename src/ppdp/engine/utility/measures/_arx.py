"""ARX's view of one hierarchy, as its quality models read it (aggregates/quality/QualityModel.java
and QualityDomainShareRaw.java of ARX 3.9.2): string-keyed maps over every level, a later level
overwriting an earlier one where a value repeats, exactly as ARX builds them.

The hierarchy's rows are in ppdp's order (``Hierarchy.rows``); the ordinal of a leaf (squared
errors, SSE/SST) is its row index, as ARX takes the row index of its hierarchy array.
Published values that are no hierarchy value (a heterogeneous release's ranges and value sets)
are added as values of their own: share |leaves| / |domain|, ordinals the span of their leaves,
level the lowest level whose value covers them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ppdp.engine.core.hierarchy import Hierarchy

if TYPE_CHECKING:
    from ppdp.engine.utility.base import UtilityInput

SUPPRESSED = "*"


@dataclass(frozen=True)
class ArxHierarchy:
    rows: tuple[tuple[str, ...], ...]
    domain: int
    shares: dict[str, float]  # QualityDomainShareRaw.getShares
    precision: dict[str, float]  # QualityModelColumnOrientedPrecision.getPrecisions
    first_level: dict[str, int]  # NonUniformEntropy.getInverseGeneralizationFunction
    generalize: tuple[dict[str, str], ...]  # per level: leaf -> value (getGeneralizationFunctions)
    ordinal: dict[str, tuple[int, int]]  # QualityModel.getNumbersFromHierarchy: value -> (min, max) row id
    leaves_under: dict[str, int]  # |v|: leaves whose path holds v (TD's |v_g|)
    root: str | None
    extra: Mapping[str, frozenset[str]]  # published values of their own -> the leaves they cover

    @staticmethod
    def of(h: Hierarchy, extra: Mapping[str, frozenset[str]] | None = None) -> ArxHierarchy:
        rows = h.rows
        n, levels = len(rows), len(rows[0])
        shares: dict[str, float] = {r[0]: 1.0 / n for r in rows}
        for level in range(1, levels):
            counts: dict[str, float] = {}
            for r in rows:
                counts[r[level]] = counts.get(r[level], 0.0) + 1.0
            shares.update({k: v / n for k, v in counts.items()})
        precision: dict[str, float] = {}
        first: dict[str, int] = {}
        lo: dict[str, int] = {}
        hi: dict[str, int] = {}
        for level in range(levels):
            for i, r in enumerate(rows):
                v = r[level]
                precision.setdefault(v, level / (levels - 1.0) if levels > 1 else 0.0)
                first.setdefault(v, level)
                lo[v] = min(lo.get(v, i), i)
                hi[v] = max(hi.get(v, i), i)
        first.setdefault(SUPPRESSED, levels - 1)
        lo.setdefault(SUPPRESSED, 0)
        hi.setdefault(SUPPRESSED, n - 1)
        generalize = tuple({r[0]: r[level] for r in rows} for level in range(levels))
        under: dict[str, set[str]] = {}
        for r in rows:
            for v in set(r):
                under.setdefault(v, set()).add(r[0])
        leaves_under = {v: len(s) for v, s in under.items()}
        roots = {r[-1] for r in rows}
        index = {r[0]: i for i, r in enumerate(rows)}
        for value, leaves in (extra or {}).items():
            if value in shares:
                continue
            ids = [index[x] for x in leaves if x in index]
            shares[value] = len(leaves) / n
            leaves_under[value] = len(leaves)
            covering = [lv for lv in range(levels) if len({rows[i][lv] for i in ids}) == 1]
            level = covering[0] if covering else levels - 1
            first[value] = level
            precision[value] = level / (levels - 1.0) if levels > 1 else 0.0
            lo[value], hi[value] = (min(ids), max(ids)) if ids else (0, n - 1)
        return ArxHierarchy(rows, n, shares, precision, first, generalize, {v: (lo[v], hi[v]) for v in lo}, leaves_under,
                            next(iter(roots)) if len(roots) == 1 else None, dict(extra or {}))

    def share(self, value: str) -> float:
        """QualityDomainShareRaw.getShare."""
        s = self.shares.get(value)
        if s is not None:
            return s
        return 1.0 if value == SUPPRESSED else 1.0 / self.domain

    def is_suppressed(self, value: str) -> bool:
        """QualityModel.isSuppressed(column, value)."""
        return value == SUPPRESSED or value == self.root


def ordinals(inp: UtilityInput, i: int) -> tuple[np.ndarray, np.ndarray]:
    """Per cell, QID ``i``'s input and shown ordinal spans (int64, shape (cells, 2); ARX's
    QualityModel.getNumbersFromHierarchy); KeyError when a value is outside the hierarchy."""
    key = ("ordinals", i)
    if key not in inp._cache:
        h = inp.arx[i]
        try:
            inp._cache[key] = (inp.input_codes[i].map(h.ordinal.__getitem__, np.int64),
                               inp.shown_codes[i].map(h.ordinal.__getitem__, np.int64))
        except KeyError:
            inp._cache[key] = None
    spans = inp._cache[key]
    if spans is None:
        raise KeyError(inp.columns[i])
    return spans
