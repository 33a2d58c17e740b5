"""Flash (Kohlmayer et al. 2012) and the depth-first lattice baseline of the HAEF paper.

``flash``: "Flash: efficient, stable and optimal k-anonymity" (PASSAT/SocialCom 2012), the
binary variant. The generalization lattice is traversed level by level from the bottom; each
untagged node starts a *path*, found greedily by always stepping to the first untagged direct
successor (successors sorted by the Flash strategy: level, then mean relative generalization,
then loss of distinct values). A binary search along the path finds its lowest anonymous node.
Every checked node is *predictively tagged*: an anonymous node tags all its successors as
anonymous, a non-anonymous node tags all its predecessors as not anonymous (monotonicity), and
the untagged direct successors of a non-anonymous node go onto a priority queue (same order)
from which further paths start. The traversal ends when every node is tagged.

Anonymity follows ARX: a node is anonymous when the records of classes smaller than k are at
most ``suppression_limit * nR``; those records are then suppressed (S = S*(G) for k-anonymity,
PAPER_NOTES §3). A node that is not anonymous is reported as (G, nothing suppressed), which is
infeasible. Each check is one evaluation on the budget (PAPER_NOTES §1). The result is the
anonymous node of maximal TD among the checked ones. With ``suppression_limit = 0`` TD only
decreases up the lattice, so the optimum over suppression-free solutions is a minimal anonymous
node; every minimal anonymous node is checked (it cannot be tagged by prediction), hence a
complete run returns that optimum (``info["optimal_within_limit"]``). With a positive limit TD
is not monotone and the result is the best checked node, as in the 2012 algorithm.

Flash needs a monotonic privacy model: only k-anonymity is accepted. Tags live in a dense
array with one byte per lattice node (``max_lattice`` caps its size); predictive tagging is an
n-dimensional slice assignment.

``dfs``: the DFS baseline of the HAEF paper (PAPER_NOTES §5): depth-first traversal of the
lattice from the bottom node (successors in QID order), S = all ones, until the budget or the
lattice is exhausted; the result is the best feasible node seen.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from engine.errors import SpecError
from engine.optimizers import OPTIMIZERS, OptimizerResult, ProgressFn, Tracker
from engine.optimizers.lattice import lattice_size
from engine.problem import Problem

_UNTAGGED, _ANONYMOUS, _NOT_ANONYMOUS = 0, 1, 2


class _BudgetExhausted(Exception):
    pass


class _Flash:
    """State of one Flash run: dense tag array, strategy keys, queue, checker."""

    def __init__(self, problem: Problem, tracker: Tracker, max_suppressed: int) -> None:
        self.problem = problem
        self.tracker = tracker
        self.max_suppressed = max_suppressed
        self.heights = np.asarray(problem.heights, dtype=np.int64)
        self.h = [int(x) for x in self.heights]
        self.shape = tuple(x + 1 for x in self.h)
        self.nq = len(self.h)
        self.size = lattice_size(self.heights)
        self.tags = np.zeros(self.shape, dtype=np.int8)
        self.flat_tags = memoryview(self.tags.reshape(-1))  # fast scalar reads, same buffer
        self.strides = [int(np.prod(self.shape[q + 1 :], dtype=np.int64)) for q in range(self.nq)]
        self.max_level = max(sum(self.h), 1)
        # Flash strategy, criterion 3: distinct generalized values per QID and level.
        gen_counts = problem.table.lookup[2]  # (nQ, levels) generalized values per level
        self.distinct = [[float(gen_counts[q, j]) / float(gen_counts[q, 0]) for j in range(self.h[q] + 1)]
                         for q in range(self.nq)]
        self.queue: list[tuple[tuple[float, float, float], int]] = []
        self.checked = 0
        self.counts = problem.table.counts

    # -- node helpers --------------------------------------------------------------------
    def coords(self, idx: int) -> tuple[int, ...]:
        out = []
        for s in self.strides:
            c, idx = divmod(idx, s)
            out.append(c)
        return tuple(out)

    def key(self, node: tuple[int, ...]) -> tuple[float, float, float]:
        """Flash strategy: level, mean relative generalization, 1 - mean distinct ratio."""
        prec = sum(node[q] / self.h[q] if self.h[q] else 0.0 for q in range(self.nq)) / self.nq
        dist = sum(self.distinct[q][node[q]] for q in range(self.nq)) / self.nq
        return (sum(node) / self.max_level, prec, 1.0 - dist)

    def successors(self, idx: int) -> list[int]:
        """Direct successors of a node, sorted by the strategy."""
        node = self.coords(idx)
        succ = [(idx + self.strides[q], node[:q] + (node[q] + 1,) + node[q + 1 :])
                for q in range(self.nq) if node[q] < self.h[q]]
        succ.sort(key=lambda s: (self.key(s[1]), s[0]))
        return [s[0] for s in succ]

    def sorted_level(self, level: int) -> np.ndarray:
        """Untagged nodes of one level as flat indices, sorted by the strategy."""
        # Nodes of a level: enumerate compositions via a boolean mask over the dense array.
        lv = self._level_array()
        idx = np.flatnonzero((lv == level) & (self.tags.reshape(-1) == _UNTAGGED))
        if idx.size <= 1:
            return idx
        coords = np.stack(np.unravel_index(idx, self.shape), axis=1)
        h = np.maximum(self.heights, 1)
        prec = (coords / h).sum(axis=1) / self.nq
        dist = np.zeros(idx.size)
        for q in range(self.nq):
            dist += np.asarray(self.distinct[q])[coords[:, q]]
        dd = 1.0 - dist / self.nq
        order = np.lexsort((idx, np.round(dd, 12), np.round(prec, 12)))
        return idx[order]

    def _level_array(self) -> np.ndarray:
        """Level (sum of G) of every node, flat; built once."""
        if not hasattr(self, "_levels"):
            lv = np.zeros(self.shape, dtype=np.int16)
            for q in range(self.nq):
                shp = [1] * self.nq
                shp[q] = self.shape[q]
                lv += np.arange(self.shape[q], dtype=np.int16).reshape(shp)
            self._levels = lv.reshape(-1)
        return self._levels

    # -- checking and tagging ------------------------------------------------------------
    def check(self, idx: int) -> bool:
        """Evaluate one node (one evaluation), tag it and its implied region; True if anonymous."""
        if self.tracker.exhausted:
            raise _BudgetExhausted
        node = self.coords(idx)
        g = np.array(node, dtype=np.int64)
        retained = self.problem.optimal_retained(g)
        if int(self.counts.sum() - retained.sum()) > self.max_suppressed:
            retained = self.counts  # beyond the suppression limit: Flash cannot suppress
        ev = self.problem.evaluate(g[None, :], retained=retained[None, :])
        self.tracker.offer(g[None, :], retained[None, :], ev)
        self.checked += 1
        anonymous = bool(ev.feasible[0])
        if anonymous:  # every successor (node <= m) is anonymous
            self.tags[tuple(slice(c, None) for c in node)] = _ANONYMOUS
        else:  # every predecessor (m <= node) is not anonymous
            self.tags[tuple(slice(0, c + 1) for c in node)] = _NOT_ANONYMOUS
        return anonymous

    def find_path(self, idx: int) -> list[int]:
        path = [idx]
        while True:
            for s in self.successors(path[-1]):
                if self.flat_tags[s] == _UNTAGGED:
                    path.append(s)
                    break
            else:
                return path

    def check_path(self, path: list[int]) -> None:
        low, high = 0, len(path) - 1
        while low <= high:
            mid = (low + high) // 2
            idx = path[mid]
            if self.flat_tags[idx] == _UNTAGGED and not self.check(idx):
                for s in self.successors(idx):
                    if self.flat_tags[s] == _UNTAGGED:
                        heapq.heappush(self.queue, (self.key(self.coords(s)), s))
            if self.flat_tags[idx] == _ANONYMOUS:
                high = mid - 1
            else:
                low = mid + 1

    def run(self) -> bool:
        """Traverse the whole lattice; False when the budget ran out first."""
        try:
            for level in range(sum(self.h) + 1):
                for idx in self.sorted_level(level).tolist():
                    if self.flat_tags[idx] != _UNTAGGED:
                        continue
                    heapq.heappush(self.queue, (self.key(self.coords(idx)), idx))
                    while self.queue:
                        _, head = heapq.heappop(self.queue)
                        if self.flat_tags[head] == _UNTAGGED:
                            self.check_path(self.find_path(head))
        except _BudgetExhausted:
            return False
        return True


def _only_k_anonymity(problem: Problem, name: str) -> None:
    others = [m.name for m in problem.models if m.name != "k-anonymity"]
    if others:
        raise SpecError(
            f"{name} needs a monotonic privacy model and supports only k-anonymity; this problem also has "
            f"{', '.join(others)}. Hint: use the 'lattice' optimizer (exact suppression, any model) or an "
            "evolutionary optimizer."
        )


@OPTIMIZERS.register("flash")
def flash(problem: Problem, *, budget: int, seed: int = 0, params: dict[str, Any],
          progress: ProgressFn | None = None) -> OptimizerResult:
    """Flash (binary), see the module docstring. ``seed`` is unused: Flash is deterministic.

    params: ``suppression_limit`` (fraction of records that may be suppressed, default 0),
    ``max_lattice`` (largest lattice whose tag array is allocated, default 50,000,000 nodes).
    """
    limit = params.pop("suppression_limit", 0.0)
    max_lattice = int(params.pop("max_lattice", 50_000_000))
    if params:
        raise SpecError(f"flash optimizer: unknown parameter(s) {sorted(params)}. Known: suppression_limit, max_lattice.")
    if isinstance(limit, bool) or not isinstance(limit, int | float) or not 0.0 <= float(limit) < 1.0:
        raise SpecError(f"flash optimizer: suppression_limit must be a fraction in [0, 1), got {limit!r}. Hint: 0.02 for 2%.")
    _only_k_anonymity(problem, "The flash optimizer")
    size = lattice_size(problem.heights)
    if size > max_lattice:
        raise SpecError(
            f"flash optimizer: the lattice has {size:,} nodes, more than max_lattice = {max_lattice:,} "
            "(one byte of tag per node). Hint: raise params.max_lattice or use the 'lattice' optimizer."
        )
    max_suppressed = math.floor(float(limit) * problem.n_records + 1e-9)
    tracker = Tracker(problem, budget, name="flash", progress=progress)
    state = _Flash(problem, tracker, max_suppressed)
    complete = state.run()
    info = {
        "lattice_size": size, "nodes_checked": state.checked, "complete": complete,
        "suppression_limit": float(limit), "max_suppressed": max_suppressed,
        # A complete run with limit 0 is optimal over solutions that suppress nothing.
        "optimal_within_limit": complete and max_suppressed == 0,
    }
    return tracker.result(certified=False, info=info)


def dfs_order(heights: np.ndarray) -> Iterator[tuple[int, ...]]:
    """Nodes in depth-first preorder from the bottom; successors by increasing QID index."""
    h = [int(x) for x in heights]
    n = len(h)
    node = (0,) * n
    visited = {node}
    yield node
    stack = [[node, 0]]
    while stack:
        frame = stack[-1]
        cur, q = frame
        while q < n and (cur[q] >= h[q] or cur[:q] + (cur[q] + 1,) + cur[q + 1 :] in visited):
            q += 1
        if q == n:
            stack.pop()
            continue
        frame[1] = q + 1
        nxt = cur[:q] + (cur[q] + 1,) + cur[q + 1 :]
        visited.add(nxt)
        yield nxt
        stack.append([nxt, 0])


@OPTIMIZERS.register("dfs")
def dfs(problem: Problem, *, budget: int, seed: int = 0, params: dict[str, Any],
        progress: ProgressFn | None = None) -> OptimizerResult:
    """Depth-first lattice traversal with S = all ones (HAEF's DFS baseline, PAPER_NOTES §5).

    Deterministic (``seed`` unused). params: ``batch`` (nodes per evaluator call, default 64).
    ``info["complete"]`` says whether the whole lattice was visited; the result is then the
    best suppression-free solution, which is still not certified over all (G, S).
    """
    batch = int(params.pop("batch", 64))
    if params:
        raise SpecError(f"dfs optimizer: unknown parameter(s) {sorted(params)}. Known: batch.")
    tracker = Tracker(problem, budget, name="dfs", progress=progress)
    size = lattice_size(problem.heights)
    order = dfs_order(problem.heights)
    counts = problem.table.counts
    visited = 0
    while not tracker.exhausted:
        G = []
        for node in order:
            G.append(node)
            if len(G) >= min(batch, tracker.remaining):
                break
        if not G:
            break
        G = np.array(G, dtype=np.int64)
        retained = np.tile(counts, (len(G), 1))
        ev = problem.evaluate(G, retained=retained)
        tracker.offer(G, retained, ev)
        visited += len(G)
    return tracker.result(certified=False, info={"lattice_size": size, "nodes_visited": visited,
                                                 "complete": visited >= size})
