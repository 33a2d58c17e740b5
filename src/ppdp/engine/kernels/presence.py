"""delta-presence's term of the exact suppression oracle S*(G) (docs/design/paper_notes.md §3).

A class of G with ``size`` retained research records and ``persons`` persons of the population
has delta = kept / persons (Nergiz et al. 2007, Def. 3), compared in floating point exactly as
the SQL check compares it (``CAST(n AS DOUBLE) / persons``). Suppressing research records of a
class lowers its delta and touches no other class, and every record of a class weighs the same
in TD, so the largest feasible retention of each class is found class by class:

  keep = the largest r <= size with r / persons <= dmax, and r >= k or r = 0.

A class whose keep is below the smallest r with r / persons >= dmin fails whatever is
suppressed (dropping records only lowers delta, and a population class without released
records has delta 0, as the SQL check's FULL OUTER join counts it), so G is infeasible for
every S; the oracle keeps ``keep`` records there too (the fewest suppressed) and the evaluation
reports G infeasible. The plain-Python twin is ``presence_retention`` of tests/support/reference.py.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ppdp.engine.kernels.cache import guard

guard(__file__)


@njit(cache=True)
def largest_share_within(persons: int, dmax: float) -> int:
    """The largest r >= 0 with r / persons <= dmax in float64 (persons > 0)."""
    p = float(persons)
    r = int(np.floor(dmax * p))
    while r > 0 and r / p > dmax:
        r -= 1
    while (r + 1) / p <= dmax:
        r += 1
    return r


@njit(cache=True)
def presence_retention(size: np.ndarray, persons: np.ndarray, k: int, dmax: float) -> np.ndarray:
    """Records each class keeps under delta <= dmax and k-anonymity: the largest r <= size with
    r / persons <= dmax, and 0 when that is below k. A class without persons (no research
    record can be one: the research subset is part of the population) keeps 0."""
    out = np.zeros(size.shape[0], dtype=np.int64)
    for c in range(size.shape[0]):
        if persons[c] <= 0:
            continue
        r = min(int(size[c]), largest_share_within(int(persons[c]), dmax))
        out[c] = r if r >= k else 0
    return out
