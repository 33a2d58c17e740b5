"""Lattice search with exact suppression (PAPER_NOTES §3): certified optimum TD.

For a fixed G the best S is S*(G) (the oracle), so the search space is the generalization
lattice. TD(G, S) <= TD(G, nothing suppressed) =: UB(G), and UB only decreases upward in the
lattice (1/|v_g| shrinks as values generalize). Nodes are visited best-first by UB from the
bottom node, which yields them in non-increasing UB order; as soon as the next UB is no larger
than the best TD found, no unvisited node can beat it and the result is certified optimal.
``mode = "exhaustive"`` evaluates every node instead (certified when the lattice fits the
budget). Certification also needs an exact oracle (OracleParams.exact).
"""

from __future__ import annotations

import heapq
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


@OPTIMIZERS.register("lattice")
def lattice_search(problem: Problem, *, budget: int, seed: int = 0, params: dict[str, Any],
                   progress: ProgressFn | None = None) -> OptimizerResult:
    """Best-first (or exhaustive) lattice search with S = S*(G); see the module docstring."""
    mode = params.pop("mode", "bound")
    batch = int(params.pop("batch", 64))
    if params:
        raise SpecError(f"lattice optimizer: unknown parameter(s) {sorted(params)}. Known: mode, batch.")
    if mode not in ("bound", "exhaustive"):
        raise SpecError(f"lattice optimizer: mode must be 'bound' or 'exhaustive', not {mode!r}.")
    heights = problem.heights
    size = lattice_size(heights)
    tracker = Tracker(problem, budget, name="lattice", progress=progress)
    exact = problem.oracle_params.exact
    info: dict[str, Any] = {"mode": mode, "lattice_size": size, "oracle_exact": exact}

    if mode == "exhaustive":
        nodes = all_nodes(heights)[: budget]
        for i in range(0, len(nodes), batch):
            G = nodes[i : i + batch]
            retained, ev = problem.evaluate_optimal(G)
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
        retained, ev = problem.evaluate_optimal(G)
        tracker.offer(G, retained, ev)
        feas_td = ev.td[ev.feasible]
        if feas_td.size:
            best_td = max(best_td, float(feas_td.max()))
    info.update(nodes_evaluated=tracker.used, remaining_upper_bound=pruned_bound)
    return tracker.result(certified=certified, info=info)
