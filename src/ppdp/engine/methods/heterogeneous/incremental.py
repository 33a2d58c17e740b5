"""Incremental evaluation of 2-opt moves on a k-regular graph (§5 of the paper, docs/design/paper_notes.md §7).

``IncrementalState`` holds a mutable copy of the graph and the per-tuple structures of §5
(min / second min / max / second max per numeric QID, support counts per category, sums for the
SIL means; see ``_incremental_kernels``). ``swap_delta`` evaluates a move in O(d) time,
independent of n and k; ``apply_swap`` applies it in O(k d). Two interchangeable backends:
"numba" (the kernels) and "python" (the plain-Python twin).

Example::

    state = IncrementalState(table, circulant_graph(table.n, 5))
    if state.swap_is_valid(3, 1, 8, 2):
        if state.swap_delta(3, 1, 8, 2, objective="gcp") < 0:
            state.apply_swap(3, 1, 8, 2)
    state.gcp()  # equals metrics.gcp(table, state.graph()) up to rounding
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from ppdp.engine.methods.heterogeneous import _incremental_kernels, _incremental_py
from ppdp.engine.methods.heterogeneous.graph import KRegularGraph
from ppdp.engine.methods.heterogeneous.metrics import MetricScales, QidTable, metric_scales
from ppdp.errors import DataError, SpecError, known_names

Objective = Literal["gcp", "sil"]
Backend = Literal["numba", "python"]

_OBJECTIVES = {"gcp": _incremental_kernels.OBJECTIVE_GCP, "sil": _incremental_kernels.OBJECTIVE_SIL}
_BACKENDS = {"numba": _incremental_kernels, "python": _incremental_py}


def objective_code(objective: str) -> int:
    """The integer the kernels take for an objective name ("gcp" or "sil")."""
    try:
        return _OBJECTIVES[objective]
    except KeyError:
        raise SpecError(f"unknown objective {objective!r};{known_names(_OBJECTIVES)}") from None


class IncrementalState:
    """The graph under optimization plus the incremental structures of §5.

    Deliberately a mutable object (unlike specs and results): it is the optimizer's working
    memory, updated in place by every applied move. ``graph()`` returns a frozen snapshot.
    ``arrays`` is the tuple of arrays the kernels take, in their signature order, so Numba
    loops (local search, benchmarks) can call the kernels directly without Python overhead.
    """

    def __init__(self, table: QidTable, graph: KRegularGraph, *,
                 scales: MetricScales | None = None, backend: Backend = "numba") -> None:
        if table.n != graph.n:
            raise DataError(
                f"the graph has {graph.n} tuples but the QID table {table.n}; hint: build both "
                f"from the same rows"
            )
        if backend not in _BACKENDS:
            raise SpecError(f"unknown backend {backend!r};{known_names(_BACKENDS)}")
        self.table = table
        self.scales = scales or metric_scales(table)
        self.backend = backend
        self._kernels = _BACKENDS[backend]
        n, k = graph.n, graph.k
        qn = table.numeric.shape[1]
        qc = table.categorical.shape[1]
        cat_off = np.zeros(qc + 1, dtype=np.int64)
        cat_off[1:] = np.cumsum(np.asarray(table.n_categories, dtype=np.int64))
        self.arrays = (
            np.array(graph.cover, dtype=np.int64),  # cover (mutable copy)
            table.numeric,
            table.categorical,
            cat_off,
            self.scales.num_range,
            self.scales.cat_domain,
            self.scales.num_sigma,
            self.scales.cat_sigma,
            np.empty((n, qn)),  # mn
            np.empty((n, qn)),  # mn2
            np.empty((n, qn)),  # mx
            np.empty((n, qn)),  # mx2
            np.empty((n, qn)),  # num_sum
            np.zeros((n, int(cat_off[-1])), dtype=np.int64),  # cat_count
            np.zeros((n, qc, k + 1), dtype=np.int64),  # cat_hist
            np.zeros((n, qc), dtype=np.int64),  # cat_max
            np.zeros((n, qc), dtype=np.int64),  # cat_distinct
            np.zeros(n),  # t_ncp
            np.zeros(n),  # t_sil
            np.zeros(2),  # totals
        )
        self._kernels.build(*self.arrays)

    # Named views of the structures (for tests and callers that read them).
    cover = property(lambda self: self.arrays[0])
    minimum = property(lambda self: self.arrays[8])
    second_minimum = property(lambda self: self.arrays[9])
    maximum = property(lambda self: self.arrays[10])
    second_maximum = property(lambda self: self.arrays[11])
    numeric_sum = property(lambda self: self.arrays[12])
    category_count = property(lambda self: self.arrays[13])
    tuple_ncp = property(lambda self: self.arrays[17])
    tuple_sil = property(lambda self: self.arrays[18])

    @property
    def n(self) -> int:
        """Number of tuples."""
        return int(self.cover.shape[0])

    @property
    def k(self) -> int:
        """Degree of every node."""
        return int(self.cover.shape[1])

    def _norm(self) -> float:
        return float(self.table.d * self.n)

    def gcp(self) -> float:
        """GCP (eq. 4) of the current graph, from the running total."""
        return float(self.arrays[19][0]) / self._norm()

    def sil(self) -> float:
        """SIL (eq. 7) of the current graph, from the running total."""
        return float(self.arrays[19][1]) / self._norm()

    def objective(self, objective: Objective) -> float:
        """GCP or SIL by name."""
        return self.gcp() if objective_code(objective) == _incremental_kernels.OBJECTIVE_GCP \
            else self.sil()

    def swap_is_valid(self, t1: int, s1: int, t2: int, s2: int) -> bool:
        """Whether exchanging cover[t1, s1] and cover[t2, s2] keeps the graph k-regular."""
        return bool(self._kernels.swap_is_valid(self.cover, t1, s1, t2, s2))

    def swap_delta(self, t1: int, s1: int, t2: int, s2: int, *, objective: Objective) -> float:
        """Change of GCP or SIL if the (valid) move were applied; negative = improvement."""
        code = objective_code(objective)
        raw = self._kernels.swap_delta(code, *self.arrays, t1, s1, t2, s2)
        return float(raw) / self._norm()

    def apply_swap(self, t1: int, s1: int, t2: int, s2: int) -> None:
        """Apply the move and update the structures; DataError if it is not valid."""
        if not self.swap_is_valid(t1, s1, t2, s2):
            raise DataError(
                f"move ({t1}, {s1}) <-> ({t2}, {s2}) would break k-regularity or move a self "
                f"edge; hint: check it with swap_is_valid first"
            )
        self._kernels.apply_swap(*self.arrays, t1, s1, t2, s2)

    def graph(self) -> KRegularGraph:
        """A validated, frozen snapshot of the current graph."""
        return KRegularGraph(self.cover)
