"""Nearest-neighbour lists that restrict the local search to promising 2-opt moves (ours).

The paper's Alg. 2 scans, for a node b, every other node's edges: O(n k^2) evaluations per node,
so at 10,000 tuples one node costs ~250,000 evaluations at k = 5 and a local optimum is never
reached in the time the paper gives. A move that improves exchanges original a (in b') with
original c (in t2'): a must fit t2' and c must fit b', so the partners worth scanning are the
nodes of tuples near a (t2' always covers t2) and near b. This is the granular neighbourhood
of vehicle-routing and TSP local search (candidate lists of nearest neighbours), applied to the
paper's 2-opt move; ``m`` nearest per tuple, computed once per search (O(n^2 d), pruned).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from ppdp.engine.methods.heterogeneous import _neighbors_kernels, _neighbors_py
from ppdp.engine.methods.heterogeneous.metrics import QidTable, metric_scales
from ppdp.errors import SpecError, known_names

_BACKENDS = {"numba": _neighbors_kernels, "python": _neighbors_py}


def nearest_neighbors(table: QidTable, m: int, *, backend: Literal["numba", "python"] = "numba") -> np.ndarray:
    """The (n, min(m, n - 1)) int64 array of each tuple's nearest other tuples, nearest first.

    Distance: numeric QIDs as |x - y| / domain range (eq. 1's normalizer), categorical QIDs as
    0 or 1 (same or different); ties go to the lower index, so the lists are reproducible."""
    if backend not in _BACKENDS:
        raise SpecError(f"unknown backend {backend!r};{known_names(_BACKENDS)}")
    if m < 0:
        raise SpecError(f"neighbors={m} is negative; hint: 0 scans every node (the paper), 8-32 is typical")
    m = min(int(m), max(table.n - 1, 0))
    out = np.zeros((table.n, m), dtype=np.int64)
    if m:
        _BACKENDS[backend].nearest(table.numeric, table.categorical, metric_scales(table).num_range, m, out)
    return out
