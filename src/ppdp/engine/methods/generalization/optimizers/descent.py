"""Best-first descent from the top of the lattice: ARX's LIGHTNING, run downward for TD.

LIGHTNING (Prasser, Bild, Eicher, Spengler, Kohlmayer, Kuhn: "Lightning: Utility-Driven
Anonymization of High-Dimensional Data", Transactions on Data Privacy 9(2), 2016) is the search
ARX switches to when a lattice has more than 100,000 nodes (ARXConfiguration's heuristic search
threshold). It is a best-first search over the lattice combined with a greedy depth-first dive
every ``stepping`` expansions (stepping = the level of the top node): pop the best checked
node, check all its unexpanded neighbours in one direction, and queue them; a dive follows the
best new neighbour until there is none.

ARX runs it bottom-up because its loss only grows upward. TD does the opposite: with S = S*(G)
(the exact suppression oracle, docs/design/paper_notes.md §3) the top node keeps every record in one class and
is feasible whenever any node is, and TD grows as values are specialized until the records that
must be suppressed outweigh the finer values. So ppdp starts at the top and expands a node's
*predecessors* (one QID one level lower). Nodes are checked in batches (one evaluation each)
with ``lattice_nodes.evaluate_nodes``, so ``suppression_limit`` has ARX's semantics as in the other
lattice optimizers. The search is a heuristic: it stops at the budget; a run that expands the
whole lattice has evaluated every node and is certified.

On ARX's genetic-benchmark tables, where the lattices have 85 million (mach2019, 16 QIDs) and
about 5 x 10^13 nodes (creditcard, 24 QIDs), one dive from the top finds TD 504,678 and 208,586
within 151 and 304 evaluations, against 335,241 and 114,615 of ID-DGA and HAEF after thousands
(benchmarks/vs_arx.py).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

import numpy as np

from ppdp.engine.methods.generalization.evaluators import Evaluation
from ppdp.engine.methods.generalization.optimizers import (
    OPTIMIZERS,
    OptimizerResult,
    ProgressFn,
    Tracker,
    checks_params,
)
from ppdp.engine.methods.generalization.optimizers.lattice_nodes import (
    check_suppression_limit,
    evaluate_nodes,
    lattice_size,
    max_suppressed_records,
)
from ppdp.engine.methods.generalization.problem import Problem
from ppdp.errors import SpecError


class _Descent:
    """State of one run: checked nodes with their TD, the queue, the expanded set.

    ``evaluate(G) -> (retained, Evaluation)`` checks a batch of nodes (``lattice_nodes.evaluate_nodes``
    or the lattice search's Ray evaluator); at most ``cap`` evaluations are used in all.
    """

    def __init__(self, tracker: Tracker, evaluate: Callable[[np.ndarray], tuple[np.ndarray, Evaluation]],
                 cap: int | None = None) -> None:
        self.evaluate = evaluate
        self.tracker = tracker
        self.cap = tracker.budget if cap is None else cap
        self.score: dict[bytes, float] = {}  # checked node -> TD (-inf when infeasible)
        self.expanded: set[bytes] = set()
        self.queue: list[tuple[float, int, bytes]] = []  # (-TD, order, node), best first
        self.order = 0

    def check(self, nodes: list[np.ndarray]) -> None:
        """Check the unchecked ``nodes`` (as many as the budget allows) and queue them."""
        todo, keys = [], set()
        for g in nodes:
            key = g.tobytes()
            if key not in self.score and key not in keys:
                keys.add(key)
                todo.append(g)
        todo = todo[: max(min(self.tracker.remaining, self.cap - self.tracker.used), 0)]
        if not todo:
            return
        G = np.stack(todo)
        retained, ev = self.evaluate(G)
        self.tracker.offer(G, retained, ev)
        for g, td, ok in zip(G, ev.td.tolist(), ev.feasible.tolist(), strict=True):
            key = g.tobytes()
            self.score[key] = td if ok else -np.inf
            heapq.heappush(self.queue, (-self.score[key], self.order, key))
            self.order += 1

    def expand(self, key: bytes) -> bytes | None:
        """Check every predecessor of a node; the best unexpanded one (None when there is none)."""
        self.expanded.add(key)
        node = np.frombuffer(key, dtype=np.int64)
        below = []
        for q in np.flatnonzero(node > 0).tolist():
            g = node.copy()
            g[q] -= 1
            if g.tobytes() not in self.expanded:
                below.append(g)
        self.check(below)
        best, best_td = None, -np.inf
        for g in below:
            k = g.tobytes()
            td = self.score.get(k)
            if td is not None and (best is None or td > best_td):
                best, best_td = k, td
        return best

    @property
    def spent(self) -> bool:
        return self.tracker.exhausted or self.tracker.used >= self.cap

    def dive(self, key: bytes) -> None:
        """Greedy depth-first descent: always on to the best new predecessor."""
        nxt: bytes | None = key
        while nxt is not None and not self.spent:
            nxt = self.expand(nxt)

    def run(self, top: np.ndarray, stepping: int) -> bool:
        """Search until the budget is spent; True when every node was expanded."""
        self.check([top])
        step = 0
        while self.queue and not self.spent:
            _, _, key = heapq.heappop(self.queue)
            if key in self.expanded:
                continue
            step += 1
            if step % stepping == 1 or stepping == 1:  # the first pop dives, as LIGHTNING's does
                self.dive(key)
            else:
                self.expand(key)
        return not self.queue


def greedy_incumbent(tracker: Tracker, evaluate: Callable[[np.ndarray], tuple[np.ndarray, Evaluation]],
                     heights: np.ndarray, cap: int) -> tuple[float, set[bytes]]:
    """One greedy dive from the top (the first dive of ``descent``) within ``cap`` evaluations
    in all: (best feasible TD or -inf, nodes checked as ``G.tobytes()``). The certified lattice
    search starts from it on huge tables (engine/methods/generalization/optimizers/lattice.py)."""
    top = np.asarray(heights, dtype=np.int64).copy()
    state = _Descent(tracker, evaluate, cap)
    state.check([top])
    state.dive(top.tobytes())
    return max(state.score.values(), default=-np.inf), set(state.score)


@checks_params("descent")
def _descent_params(params: dict[str, Any]) -> tuple[Any, int | None]:
    """(suppression_limit, stepping or None for the default) from ``params`` (consumed), or SpecError."""
    limit = params.pop("suppression_limit", 1.0)
    stepping = params.pop("stepping", None)
    if params:
        raise SpecError(f"descent optimizer: unknown parameter(s) {sorted(params)}. Known: suppression_limit, stepping.")
    if stepping is not None and (isinstance(stepping, bool) or not isinstance(stepping, int) or stepping < 1):
        raise SpecError(f"descent optimizer: stepping must be a positive number of expansions, got {stepping!r}.")
    check_suppression_limit(limit, "descent")
    return limit, stepping


@OPTIMIZERS.register("descent")
def descent(problem: Problem, *, budget: int, seed: int = 0, params: dict[str, Any],
            progress: ProgressFn | None = None) -> OptimizerResult:
    """Best-first descent from the top with greedy dives (module docstring). ``seed`` is unused:
    the search is deterministic.

    params: ``suppression_limit`` (ARX's semantics, a fraction of the records in [0, 1], default
    1 = no limit), ``stepping`` (a greedy dive every this many expansions; default the level of
    the top node, as LIGHTNING), ``batch`` is implied: a node's predecessors are checked together.
    """
    heights = np.asarray(problem.heights, dtype=np.int64)
    limit, stepping = _descent_params(params)
    stepping = max(int(heights.sum()), 1) if stepping is None else stepping
    max_suppressed = max_suppressed_records(problem, limit, "descent")
    tracker = Tracker(problem, budget, name="descent", progress=progress)
    state = _Descent(tracker, lambda G: evaluate_nodes(problem, G, max_suppressed))
    complete = state.run(heights.copy(), stepping)
    size = lattice_size(heights)
    info = {"lattice_size": size, "nodes_checked": len(state.score), "nodes_expanded": len(state.expanded),
            "complete": complete, "suppression_limit": float(limit), "max_suppressed": max_suppressed,
            "stepping": stepping}
    # Every node checked: the best is the optimum within the limit (the oracle is exact).
    return tracker.result(certified=complete and len(state.score) == size, info=info)  # Tracker.result: only with an exact oracle
