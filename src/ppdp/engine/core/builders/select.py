"""Which of several candidate ladders for one column: the one that loses least per separation given up.

Each level ``j`` of a hierarchy over a column's value counts is a point (H_j, L_j):

- ``H_j``: the Shannon entropy (bits) of the column generalized to level ``j``, how much it still
  separates records. A combination of QIDs is k-anonymous roughly when the sum of their entropies
  falls to log2(n / k), so a level's entropy is what it contributes to that budget.
- ``L_j``: ARX's Loss of the level, the row-weighted normalized domain share
  ``sum_g rows_g (|leaves_g| - 1) / (|leaves| - 1) / n`` (Iyengar 2002, eq. LM, the measure the
  granularity of docs/design/auto_hierarchies.md reports).

Level 0 is (H_0, 0), the root (0, 1). ``score`` is the area under the piecewise-linear curve of
L against H, over [0, H_0], divided by H_0: the mean loss paid over every amount of separation an
optimizer may have to give up. A ladder whose levels reach each entropy with less loss (or that
offers more intermediate points) scores lower; the search picks levels, the score only picks
the ladder it searches.
"""

from __future__ import annotations

import math

import numpy as np


def curve(rows: tuple[tuple[str, ...], ...], counts: dict[str, int]) -> list[tuple[float, float]]:
    """(entropy, loss) of every level of a hierarchy given by its rows (leaf first, root last)."""
    n = sum(counts.get(r[0], 0) for r in rows)
    leaves = len(rows)
    out = []
    for j in range(len(rows[0])):
        groups: dict[str, list[int]] = {}
        for r in rows:
            g = groups.setdefault(r[j], [0, 0])
            g[0] += 1
            g[1] += counts.get(r[0], 0)
        loss = sum(c * (m - 1) for m, c in groups.values()) / n / (leaves - 1) if n and leaves > 1 else 0.0
        entropy = -sum(c / n * math.log2(c / n) for _, c in groups.values() if c) if n else 0.0
        out.append((max(entropy, 0.0), loss))
    return out


def score(points: list[tuple[float, float]]) -> float:
    """Normalized area under loss against entropy (trapezoids between the levels' points)."""
    pts = sorted(points)
    top = pts[-1][0]
    if top <= 0:
        return 1.0
    return sum((b[0] - a[0]) * (a[1] + b[1]) / 2 for a, b in zip(pts, pts[1:], strict=False)) / top


def numeric_curve(points: np.ndarray, weights: np.ndarray, cuts: list[float]) -> list[tuple[float, float]]:
    """``curve`` of the numeric ladder over ``cuts`` without materializing it: ``points`` the
    distinct values, ``weights`` their rows. Groups as numeric.py's: a value's bin is the number
    of inner cuts at or below it, level j joins 2^(j-1) neighbouring bins."""
    from ppdp.engine.core.builders import numeric

    n, leaves = float(weights.sum()), len(points)
    bins = np.searchsorted(np.asarray(cuts[1:-1], dtype=float), points, side="right")
    out = [(_entropy(weights, n), 0.0)]
    for j in range(1, numeric.levels(list(cuts)) + 1):
        group = bins // 2 ** (j - 1)
        members = np.bincount(group)
        rows = np.bincount(group, weights=weights)
        loss = float((rows * (members - 1)).sum() / n / (leaves - 1)) if n and leaves > 1 else 0.0
        out.append((_entropy(rows[rows > 0], n), loss))
    out.append((0.0, 1.0 if leaves > 1 else 0.0))
    return out


def _entropy(rows: np.ndarray, n: float) -> float:
    p = rows[rows > 0] / n
    return max(float(-(p * np.log2(p)).sum()), 0.0)
