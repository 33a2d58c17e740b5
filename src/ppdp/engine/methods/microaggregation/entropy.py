"""Entropy increase (eq. 7-8) and the clustering metrics f (eq. 9) and f_link (eq. 14).

Conventions (docs/design/paper_notes.md §6), fixed by Example 2:

- Entropy is the ordinary, positive Shannon entropy with base-10 logarithms,
  ``H(G) = -sum p_i log10 p_i``. Eq. 8 is printed without the minus sign; Example 2 computes
  with the minus sign, and only base 10 gives its figures.
- Eq. 7: ``H_hat(G, G') = H(G) - H(G')`` (negative when adding r makes G more diverse).
- Eq. 9: ``f(G, G') = -alpha * H_hat(G, G') - beta * d(mu_G, r)``: higher is better; a record
  that raises the group's entropy and lies close to its centroid scores highest.
- Eq. 14 is printed as ``f + alpha * Pr`` with a garbled bracket. Its intent is that the best
  candidate has the highest f and the lowest synonymous-linkage probability Pr, so we implement
  ``f_link = f - alpha * Pr_SA(G')`` and, like f, **higher is better**. (Read as a cost to
  minimize, ``-f_link = -f + alpha * Pr`` is the printed "+ alpha * Pr" form.)

Example 2's second term is printed ``(2/3 log 1/3 + 1/3 log 1/3)``; it is a typo for
``(2/3 log 2/3 + 1/3 log 1/3)`` (the group {A, B, A} has p = 2/3 and 1/3), and only the corrected
form gives the printed f = -0.29.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable

import numpy as np

ALPHA = 0.6
BETA = 0.4


def entropy(values: Iterable[Hashable]) -> float:
    """Eq. 8 with the sign of entropy: ``-sum p log10 p`` over the values' frequencies."""
    counts = np.fromiter(Counter(values).values(), dtype=np.float64)
    return entropy_of_counts(counts)


def entropy_of_counts(counts: np.ndarray) -> float:
    """``-sum p log10 p`` for a vector of value counts (zeros ignored)."""
    counts = np.asarray(counts, dtype=np.float64)
    counts = counts[counts > 0]
    n = counts.sum()
    if n <= 0:
        return 0.0
    p = counts / n
    return float(-(p * np.log10(p)).sum())


def entropy_hat(before: Iterable[Hashable], after: Iterable[Hashable]) -> float:
    """Eq. 7: ``H(G) - H(G')`` for the SA values of a group before and after adding a record."""
    return entropy(before) - entropy(after)


def metric_f(h_hat: float, distance: float, *, alpha: float = ALPHA, beta: float = BETA) -> float:
    """Eq. 9: ``-alpha * H_hat - beta * d(mu, r)``; higher is better."""
    return -alpha * h_hat - beta * distance


def metric_f_link(f: float, pr_after: float, *, alpha: float = ALPHA) -> float:
    """Eq. 14 as ``f - alpha * Pr_SA(G')``; higher is better (see the module docstring)."""
    return f - alpha * pr_after


def _xlogx(c: np.ndarray) -> np.ndarray:
    c = np.asarray(c, dtype=np.float64)
    return np.where(c > 0, c * np.log10(np.where(c > 0, c, 1.0)), 0.0)


def entropy_after_adding(counts: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """``H(G + r)`` for each candidate, vectorized: ``counts[v]`` is how often SA code v occurs
    in G, ``candidates`` the SA codes of the candidate records.

    Uses ``H = log10 n - (sum c log10 c) / n``: adding a record with SA s changes one count.
    """
    counts = np.asarray(counts, dtype=np.float64)
    n1 = counts.sum() + 1.0
    s = _xlogx(counts).sum()
    c = counts[np.asarray(candidates, dtype=np.int64)]
    s1 = s - _xlogx(c) + _xlogx(c + 1.0)
    return np.log10(n1) - s1 / n1
