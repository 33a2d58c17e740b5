"""Lattice search with exact suppression (PAPER_NOTES §3): certified optimum TD.

For a fixed G the best S is S*(G) (the oracle), so the search space is the generalization
lattice. TD(G, S) <= TD(G, nothing suppressed) =: UB(G), and UB only decreases upward in the
lattice (1/|v_g| shrinks as values generalize). Nodes are visited best-first by UB from the
bottom node, which yields them in non-increasing UB order; as soon as the next UB is no larger
than the best TD found, no unvisited node can beat it and the result is certified optimal.
``mode = "exhaustive"`` evaluates every node instead (certified when the lattice fits the
budget). Certification also needs an exact oracle (OracleParams.exact).

``suppression_limit`` (ARX's semantics, a fraction of nR in [0, 1], default 1 = no limit): a
node whose S*(G) suppresses more than ``floor(limit * nR)`` records is infeasible and reported
as (G, nothing suppressed). The bound proof is unchanged: an exact S*(G) keeps the most records
of every class (all records of a class weigh the same in TD), so it also suppresses the fewest
records; G is feasible within the limit iff S*(G) is, and its TD is then TD(G, S*(G)) <= UB(G).
The result is certified optimal over every (G, S) that suppresses at most the limit.

Predictive tagging (Flash's monotonicity) would not save an evaluation here: a node that is
not anonymous only tells about its specializations, whose UB is at least its own, and
best-first order has already visited them; an anonymous node tells about generalizations,
which still need S* for their TD (and with a zero limit their UB is already below the best).
"""

from __future__ import annotations

import heapq
import math
from typing import Any

import numpy as np

from engine.errors import SpecError
from engine.optimizers import OPTIMIZERS, OptimizerResult, ProgressFn, Tracker
from engine.problem import Problem


def lattice_size(heights: np.ndarray) -> int:
    return int(np.prod(np.asarray(heights, dtype=object) + 1))


def all_nodes(heights: np.ndarray) -> np.ndarray:
    """Every node of the lattice, (n, nQ)."""
    grids = np.meshgrid(*[np.arange(h + 1) for h in heights], indexing="ij")
    return np.stack([g.ravel() for g in grids], axis=1).astype(np.int64)


def max_suppressed_records(problem: Problem, limit: Any, optimizer: str) -> int:
    """Records a node may suppress under ARX's suppression limit (a fraction of nR in [0, 1])."""
    if isinstance(limit, bool) or not isinstance(limit, int | float) or not 0.0 <= float(limit) <= 1.0:
        raise SpecError(f"{optimizer} optimizer: suppression_limit must be a fraction in [0, 1], got {limit!r}. "
                        "Hint: 0.05 for 5%, 1 for no limit.")
    return math.floor(float(limit) * problem.n_records + 1e-9)


@OPTIMIZERS.register("lattice")
def lattice_search(problem: Problem, *, budget: int, seed: int = 0, params: dict[str, Any],
                   progress: ProgressFn | None = None) -> OptimizerResult:
    """Best-first (or exhaustive) lattice search with S = S*(G); see the module docstring."""
    mode = params.pop("mode", "bound")
    batch = int(params.pop("batch", 64))
    limit = params.pop("suppression_limit", 1.0)
    executor = params.pop("executor", "local")
    if params:
        raise SpecError(f"lattice optimizer: unknown parameter(s) {sorted(params)}. "
                        "Known: mode, batch, suppression_limit, executor.")
    if executor not in ("local", "ray"):
        raise SpecError(f"lattice optimizer: executor must be 'local' or 'ray', not {executor!r}.")
    max_suppressed = max_suppressed_records(problem, limit, "lattice")
    if mode not in ("bound", "exhaustive"):
        raise SpecError(f"lattice optimizer: mode must be 'bound' or 'exhaustive', not {mode!r}.")
    heights = problem.heights
    size = lattice_size(heights)
    tracker = Tracker(problem, budget, name="lattice", progress=progress)
    exact = problem.oracle_params.exact
    info: dict[str, Any] = {"mode": mode, "lattice_size": size, "oracle_exact": exact,
                            "suppression_limit": float(limit), "max_suppressed": max_suppressed}

    def evaluate(G: np.ndarray):
        """(retained, evaluation) of S*(G), or of nothing suppressed beyond the limit (infeasible)."""
        if max_suppressed == 0:  # no S*(G) needed: with nothing suppressed a node is feasible or not
            retained = np.tile(problem.table.counts, (len(G), 1))
            return retained, problem.evaluate(G, retained=retained)
        retained = np.stack([problem.optimal_retained(g) for g in G])
        over = problem.n_records - retained.sum(axis=1) > max_suppressed
        retained[over] = problem.table.counts
        return retained, problem.evaluate(G, retained=retained)

    if executor == "ray":  # the same numbers from Ray workers holding the histogram (ray_executor.py)
        from engine.optimizers.ray_executor import RayNodeEvaluator
        evaluate = RayNodeEvaluator(problem, max_suppressed)  # noqa: F811 - its actors stop with it
    info["executor"] = executor

    if mode == "exhaustive":
        nodes = all_nodes(heights)[: budget]
        for i in range(0, len(nodes), batch):
            G = nodes[i : i + batch]
            retained, ev = evaluate(G)
            tracker.offer(G, retained, ev)
        info["nodes_evaluated"] = tracker.used
        return tracker.result(certified=exact and len(nodes) == size, info=info)

    bottom = tuple([0] * len(heights))
    heap: list[tuple[float, tuple[int, ...]]] = [(-problem.td_upper_bound(np.array(bottom)), bottom)]
    seen = {bottom}
    certified = False
    best_td = -np.inf
    pruned_bound = None
    while True:
        if not heap:
            certified = exact
            break
        if tracker.exhausted:
            pruned_bound = -heap[0][0]
            break
        ub = -heap[0][0]
        if ub <= best_td:
            certified = exact
            pruned_bound = ub
            break
        # Pop a batch of nodes in UB order (all still above best_td) to amortize the call.
        G = []
        while heap and len(G) < min(batch, tracker.remaining) and -heap[0][0] > best_td:
            _, node = heapq.heappop(heap)
            G.append(node)
            for q in range(len(node)):
                if node[q] < heights[q]:
                    nxt = node[:q] + (node[q] + 1,) + node[q + 1 :]
                    if nxt not in seen:
                        seen.add(nxt)
                        heapq.heappush(heap, (-problem.td_upper_bound(np.array(nxt)), nxt))
        G = np.array(G, dtype=np.int64)
        retained, ev = evaluate(G)
        tracker.offer(G, retained, ev)
        feas_td = ev.td[ev.feasible]
        if feas_td.size:
            best_td = max(best_td, float(feas_td.max()))
    info.update(nodes_evaluated=tracker.used, remaining_upper_bound=pruned_bound)
    return tracker.result(certified=certified, info=info)
