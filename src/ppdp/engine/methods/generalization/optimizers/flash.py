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

Anonymity follows ARX 3.9: a node is anonymous when the records of classes smaller than k are
at most ``suppression_limit * nR`` (a limit in [0, 1]; 1.0, ARX's most common setting, allows
suppressing everything); those records are then suppressed (S = S*(G) for k-anonymity,
docs/design/paper_notes.md §3). A node that is not anonymous is reported as (G, nothing suppressed), which is
infeasible. Each check is one evaluation on the budget (docs/design/paper_notes.md §1).

Monotonicity (why the tags are sound): classes only merge up the lattice, so a record in a class
of size >= k stays in one; the records of small classes, hence the suppression S*(G) needs,
never grow upward. Anonymous within the limit therefore holds for every generalization of an
anonymous node, and fails for every specialization of a node that is not.

Optimum within the limit (ARX-style bound pruning): TD(G, S*(G)) <= UB(G) = TD(G, nothing
suppressed) and UB only decreases upward. A node whose UB is no larger than the best TD found
cannot beat it, nor can any generalization of it: with a positive limit it may be tagged
*pruned* with all its successors and never checked (the binary search treats it like an
anonymous node: look lower; see ``prune_if_dominated`` for when it is checked instead, and why
never with a zero limit). Checking a dominated node instead is always sound: it only adds tags
that the check proves. When the
traversal ends every node is tagged; with a positive limit the anonymous nodes that were tagged
by prediction but never checked may still beat the best (TD is not monotone once records are
suppressed), so they are evaluated best-first by UB until the next UB is no larger than the
best TD. With a zero limit that second phase is empty by construction: an anonymous node
suppresses nothing, TD = UB, and a tagged node's UB is at most its checked anonymous
predecessor's TD. A complete run therefore returns the maximal TD over every (G, S) that
suppresses at most the limit (``info["optimal_within_limit"]``, and ``certified``, since the
k-anonymity oracle is exact).

Flash needs a monotonic privacy model: only k-anonymity is accepted. Tags live in a dense
array with one byte per lattice node (``max_lattice`` caps its size); predictive tagging is an
n-dimensional slice assignment.

With k-anonymity alone and the numba backend, the whole traversal runs as one Numba call
(``_flash_kernel.flash_search``, with any limit: the Python bookkeeping per node cost several
times the check itself); ``_Flash`` is its plain-Python twin, and the tests
(tests/oracles/test_flash_kernel.py, test_flash_limit_kernel.py) show both check the same nodes
in the same order with the same results. The Tracker receives the checked nodes, in order, when
the call returns (progress is reported then).

``dfs``: the DFS baseline of the HAEF paper (docs/design/paper_notes.md §5): depth-first traversal of the
lattice from the bottom node (successors in QID order), S = all ones, until the budget or the
lattice is exhausted; the result is the best feasible node seen.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ppdp.engine.core.encoding import EncodedTable
from ppdp.engine.kernels import kinds
from ppdp.engine.methods.generalization.evaluators import finish
from ppdp.engine.methods.generalization.evaluators.numba_backend import NumbaEvaluator
from ppdp.engine.methods.generalization.optimizers import (
    OPTIMIZERS,
    OptimizerResult,
    ProgressFn,
    Tracker,
    checks_models,
    checks_params,
    takes_objectives,
)
from ppdp.engine.methods.generalization.optimizers import _flash_kernel as FK
from ppdp.engine.methods.generalization.optimizers.lattice_nodes import (
    check_suppression_limit,
    lattice_size,
    max_suppressed_records,
)
from ppdp.engine.methods.generalization.problem import CLASS_CACHE_BYTES, Problem, fitness_key
from ppdp.engine.privacy.k_anonymity import KAnonymity
from ppdp.errors import SpecError

# Largest lattice the kernel takes (14 bytes per node: level, bucket, tag, checked); beyond it
# the Python traversal, with one byte per node.
KERNEL_MAX_LATTICE = 10_000_000

# _PRUNED: UB(node) <= best TD found, so neither it nor any successor can be the optimum.
_UNTAGGED, _ANONYMOUS, _NOT_ANONYMOUS, _PRUNED = 0, 1, 2, 3


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
        # fast scalar reads, same buffer (numpy's stubs do not declare the buffer protocol)
        self.flat_tags = memoryview(self.tags.reshape(-1))  # type: ignore[arg-type]
        self.strides = [int(np.prod(self.shape[q + 1 :], dtype=np.int64)) for q in range(self.nq)]
        self.max_level = max(sum(self.h), 1)
        # Flash strategy, criterion 3: distinct generalized values per QID and level.
        gen_counts = problem.table.lookup[2]  # (nQ, levels) generalized values per level
        self.distinct = [[float(gen_counts[q, j]) / float(gen_counts[q, 0]) for j in range(self.h[q] + 1)]
                         for q in range(self.nq)]
        self._prec = [[c / h if h else 0.0 for c in range(h + 1)] for h in self.h]
        self.queue: list[tuple[tuple[float, float, float], int]] = []
        self.checked = 0
        self.counts = problem.table.counts
        self.total = int(self.counts.sum())
        self.level_td = problem.table.level_td  # UB(node) = sum_q level_td[q, node[q]]
        self.best_td = -math.inf  # best TD of an anonymous node checked so far
        self.evaluated: set[int] = set()  # flat indices of checked nodes
        self.pruned = 0  # nodes that were tagged pruned while still untagged
        self.anonymous_checks = 0  # checks that found their node anonymous
        self.phase_two_candidates = 0  # anonymous, never checked, UB above the best after phase one
        self._keys: dict[int, tuple[float, float, float]] = {}  # strategy key per flat index
        self._coords: dict[int, tuple[int, ...]] = {}  # node per flat index
        self._succ: dict[int, list[int]] = {}  # sorted successors per flat index

    # -- node helpers --------------------------------------------------------------------
    def coords(self, idx: int) -> tuple[int, ...]:
        """The node of a flat index (remembered: paths, keys and tags ask for the same nodes)."""
        out = self._coords.get(idx)
        if out is None:
            rest, levels = idx, []
            for s in self.strides:
                c, rest = divmod(rest, s)
                levels.append(c)
            out = self._coords[idx] = tuple(levels)
        return out

    def key(self, node: tuple[int, ...]) -> tuple[float, float, float]:
        """Flash strategy: level, mean relative generalization, 1 - mean distinct ratio."""
        # node[q] / h[q] read from a table of the same quotients, summed in QID order one by one
        # (what sum() did up to Python 3.11; from 3.12 sum() compensates float rounding, and the
        # kernel sums as this does)
        prec = dist = 0.0
        for q, c in enumerate(node):
            prec += self._prec[q][c]
            dist += self.distinct[q][c]
        return (sum(node) / self.max_level, prec / self.nq, 1.0 - dist / self.nq)

    def key_of(self, idx: int) -> tuple[float, float, float]:
        """``key`` of a flat index, computed once (paths and the queue ask for the same nodes:
        on adult k = 5 with a zero limit, 1,379 key computations for 145 checks)."""
        out = self._keys.get(idx)
        if out is None:
            out = self._keys[idx] = self.key(self.coords(idx))
        return out

    def successors(self, idx: int) -> list[int]:
        """Direct successors of a node, sorted by the strategy (remembered: a path's search and
        a failed check ask for the same node's; on mach2019's 1,000-record sample, 1,078 asks
        for 434 checks). Callers only read the list."""
        succ = self._succ.get(idx)
        if succ is None:
            node = self.coords(idx)
            succ = [idx + self.strides[q] for q in range(self.nq) if node[q] < self.h[q]]
            succ.sort(key=lambda s: (self.key_of(s), s))
            self._succ[idx] = succ
        return succ

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

    def upper_bound(self, idx: int) -> float:
        """UB(node) = TD with nothing suppressed: bounds TD of the node and of every successor."""
        return float(sum(self.level_td[q, c] for q, c in enumerate(self.coords(idx))))

    # -- checking and tagging ------------------------------------------------------------
    def evaluate(self, idx: int) -> bool:
        """Evaluate one node as (G, S*(G)) within the limit (one evaluation); True if anonymous."""
        if self.tracker.exhausted:
            raise _BudgetExhausted
        g = np.array(self.coords(idx), dtype=np.int64)
        if self.max_suppressed == 0:
            # A zero limit admits only S = keep everything: no oracle, only the classes (rolled
            # up from a node checked earlier below this one).
            retained = self.counts
            ev = self.problem.evaluate_unsuppressed(g[None, :])
        else:
            # S*(G) and its evaluation from one classification (the fused oracle)
            fused, ev = self.problem.evaluate_optimal(g[None, :])
            retained = fused[0]
            if self.total - int(retained.sum()) > self.max_suppressed:
                retained = self.counts  # beyond the suppression limit: Flash cannot suppress
                # Not counted again; rolled up from the classes the oracle just remembered.
                ev = self.problem.evaluate_unsuppressed(g[None, :], count=False)
        self.tracker.offer(g[None, :], retained[None, :], ev)
        self.checked += 1
        self.evaluated.add(idx)
        anonymous = bool(ev.feasible[0])
        if anonymous:
            self.anonymous_checks += 1
            self.best_td = max(self.best_td, float(ev.td[0]))
        return anonymous

    def check(self, idx: int) -> bool:
        """Evaluate one node, tag it and its implied region; True if anonymous."""
        node = self.coords(idx)
        anonymous = self.evaluate(idx)
        if anonymous:  # every successor (node <= m) is anonymous
            self.tags[tuple(slice(c, None) for c in node)] = _ANONYMOUS
        else:  # every predecessor (m <= node) is not anonymous
            self.tags[tuple(slice(0, c + 1) for c in node)] = _NOT_ANONYMOUS
        return anonymous

    def prune_if_dominated(self, idx: int) -> bool:
        """Tag an untagged node and its successors pruned when UB(node) <= best TD.

        Only with a positive limit, and only while at least ``FK.PRUNE_SHARE`` of the checks so
        far found their node anonymous. A check of a dominated node tells more when it is not
        anonymous (so are all its specializations: the binary search then looks higher and its
        predecessors are never checked), a pruned node tells nothing below it. With a zero limit,
        or while the checks mostly find nodes that are not anonymous (a small anonymous region
        at the top of the lattice, where a dominated node is most likely not anonymous either),
        the node is checked.
        """
        if self.max_suppressed == 0 or self.upper_bound(idx) > self.best_td:
            return False
        if FK.PRUNE_SHARE[1] * self.anonymous_checks < FK.PRUNE_SHARE[0] * self.checked:
            return False
        # No successor of an untagged node is tagged not anonymous (that tag would have
        # reached this node), so this only overwrites untagged and anonymous tags.
        self.tags[tuple(slice(c, None) for c in self.coords(idx))] = _PRUNED
        self.pruned += 1
        return True

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
            if self.flat_tags[idx] == _UNTAGGED and not self.prune_if_dominated(idx) and not self.check(idx):
                for s in self.successors(idx):
                    if self.flat_tags[s] == _UNTAGGED:
                        heapq.heappush(self.queue, (self.key_of(s), s))
            if self.flat_tags[idx] in (_ANONYMOUS, _PRUNED):  # the lowest anonymous node is lower
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
                    heapq.heappush(self.queue, (self.key_of(idx), idx))
                    while self.queue:
                        _, head = heapq.heappop(self.queue)
                        if self.flat_tags[head] == _UNTAGGED:
                            self.check_path(self.find_path(head))
            if self.max_suppressed > 0:
                self.evaluate_tagged_anonymous()
        except _BudgetExhausted:
            return False
        return True

    def evaluate_tagged_anonymous(self) -> None:
        """Second phase (positive limit): anonymous nodes tagged by prediction, best-first by UB."""
        idx = np.flatnonzero(self.tags.reshape(-1) == _ANONYMOUS)
        if self.evaluated:
            idx = idx[~np.isin(idx, np.fromiter(self.evaluated, dtype=np.int64))]
        coords = np.unravel_index(idx, self.shape)
        ub = np.zeros(idx.size)
        for q in range(self.nq):
            ub += self.level_td[q][coords[q]]
        order = np.lexsort((idx, -ub))
        self.phase_two_candidates = int(np.count_nonzero(ub > self.best_td))
        for i in order.tolist():
            if ub[i] <= self.best_td:
                break  # every remaining node has UB <= best TD: none can beat it
            self.evaluate(int(idx[i]))


def kernel_applies(problem: Problem, size: int) -> bool:
    """The kernel checks k-anonymity alone from the numba backend's arrays."""
    ev = problem.evaluator
    return (isinstance(ev, NumbaEvaluator) and ev.kinds is not None and bool(np.all(ev.kinds == kinds.SMALLEST_CLASS))
            and all(type(m) is KAnonymity for m in problem.models) and 1 <= problem.n_qids <= FK.MAX_QIDS
            and size <= KERNEL_MAX_LATTICE and problem.table.n_rows > 0)


def td_margin(table: EncodedTable, weight: np.ndarray) -> float:
    """A bound on |TD - UB| / UB for every node with nothing suppressed, where TD is the kernels'
    sum (``_kernels.transparency``: per row its QIDs' weights in order, times its records, rows
    in order) and UB = the sum over QIDs of weight x records summed over the leaves at the
    node's level, in any order (the kernel's, or ``EncodedTable.level_td``'s). Both
    are float sums of the same non-negative terms (records per leaf are sums of integers, exact
    below 2**53), so each is within gamma_N = N u / (1 - N u) of the exact sum (u = 2**-53; N:
    the terms along the longest chain of roundings, at most rows + QIDs + 1 for TD and leaves +
    QIDs + 1 for UB; Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., §3.1 and
    §4.2): four times their total is far above both errors. Infinite (no node skipped) with a
    negative weight, where that bound does not hold."""
    if weight.size and float(weight.min()) < 0.0:
        return math.inf
    terms = table.n_rows + table.n_qids + 1 + int(weight.shape[-1]) * max(table.n_qids, 1) + table.n_qids
    return 4.0 * terms * 2.0**-53 / max(1.0 - 4.0 * terms * 2.0**-53, 1e-300)


def _kernel_tables(problem: Problem) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(heights, prec_tab, dist_tab, k): the twin's strategy tables (``_Flash.__init__``), so that
    both compute the same keys, and the k the kernel checks."""
    h = [int(x) for x in problem.heights]
    width = max(h) + 1
    prec_tab = np.zeros((len(h), width))
    dist_tab = np.zeros((len(h), width))
    gen_counts = problem.table.lookup[2]
    for q, hq in enumerate(h):
        for c in range(hq + 1):
            prec_tab[q, c] = c / hq if hq else 0.0
            dist_tab[q, c] = float(gen_counts[q, c]) / float(gen_counts[q, 0])
    k = max(int(m.k) for m in problem.models)  # type: ignore[attr-defined]
    return np.asarray(h, dtype=np.int64), prec_tab, dist_tab, k


def kernel_checks(problem: Problem, budget: int, max_suppressed: int) -> tuple[
        np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, int, bool]:
    """The kernel's run (``_flash_kernel.flash_search``): (checked flat indices in order, AD, TD
    and suppressed records of each, nodes pruned, second-phase candidates, complete). TD is NaN
    where no Tracker reads it."""
    t = problem.table
    ev = problem.evaluator
    assert isinstance(ev, NumbaEvaluator)
    heights, prec_tab, dist_tab, k = _kernel_tables(problem)
    level_td = np.ascontiguousarray(t.level_td, dtype=np.float64)
    capacity = min(CLASS_CACHE_BYTES // max(4 * t.n_rows, 1), lattice_size(problem.heights))
    idx, ad, td, sup, pruned, phase_two, complete = FK.flash_search(
        heights, k, int(max_suppressed), int(budget), prec_tab, dist_tab, level_td, t.codes, ev.gen, ev.n_gen, ev.weight,
        t.counts, td_margin(t, ev.weight), capacity, CLASS_CACHE_BYTES // 12)
    return idx, ad, td, sup, int(pruned), int(phase_two), bool(complete)


def zero_limit_checks(problem: Problem, budget: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """The kernel's run with a zero limit: (checked flat indices in order, smallest class size
    and TD of each, complete). TD is NaN where no Tracker reads it."""
    idx, smallest, td, _sup, _pruned, _phase_two, complete = kernel_checks(problem, budget, 0)
    return idx, smallest, td, complete


def run_kernel(problem: Problem, tracker: Tracker, max_suppressed: int) -> tuple[int, int, int, bool]:
    """Flash in one Numba call (the twin ``_Flash``'s traversal, pruning and second phase step
    for step); the checked nodes go to ``tracker`` in order with the evaluations the twin
    offers. Returns (nodes checked, nodes pruned, second-phase candidates, complete)."""
    t = problem.table
    idx, ad_k, td, sup, pruned, phase_two, complete = kernel_checks(problem, tracker.remaining, max_suppressed)
    n = int(idx.shape[0])
    if n:
        G = np.stack(np.unravel_index(idx, tuple(int(x) + 1 for x in problem.heights)), axis=1).astype(np.int64)
        ad = np.repeat(ad_k[:, None], len(problem.models), axis=1)
        evaluation = finish(problem.models, ad, td, sup)
        k = max(int(m.k) for m in problem.models)  # type: ignore[attr-defined]
        if not np.array_equal(evaluation.feasible, ad_k >= k):  # the kernel tagged by another verdict
            raise RuntimeError("flash kernel: anonymity verdicts differ from the models' feasibility")
        problem.evaluations += n
        # Tracker.offer of all n rows in order, row by row in Python: only the rows that improve
        # the best change more than the count, so those are offered and the rest counted (the
        # same best, history and count).
        feasible, violation, td_list = evaluation.feasible.tolist(), evaluation.violation.tolist(), evaluation.td.tolist()
        sup_list = sup.tolist()
        best, done = tracker.best_key, 0
        for i in range(n):
            key = fitness_key(feasible[i], violation[i], td_list[i])
            if best is None or key > best:
                if math.isnan(td_list[i]):  # the kernel skipped a TD that the Tracker reads
                    raise RuntimeError("flash kernel: no TD for a check that improves the best")
                best = key
                tracker.count(i - done)
                retained = problem.optimal_retained(G[i]) if sup_list[i] > 0 else t.counts
                tracker.offer(G[i:i + 1], retained[None, :], evaluation.row(i))
                done = i + 1
        tracker.count(n - done)
    return n, pruned, phase_two, complete


def _only_monotone(models: Sequence[Any], name: str) -> None:
    """Flash tags whole paths by one check: every model must declare itself monotone."""
    others = [m.name for m in models if not m.monotone]
    if others:
        raise SpecError(
            f"{name} needs monotonic privacy models; {', '.join(others)} is not declared monotone. "
            "Hint: use the 'lattice' optimizer (exact suppression, any model) or an evolutionary optimizer."
        )


@checks_models("flash")
def _flash_models(models: Sequence[Any]) -> None:
    _only_monotone(models, "The flash optimizer")


@checks_params("flash")
def _flash_params(params: dict[str, Any]) -> tuple[Any, int]:
    """(suppression_limit, max_lattice) from ``params`` (consumed), or SpecError."""
    limit = params.pop("suppression_limit", 0.0)
    max_lattice = params.pop("max_lattice", 50_000_000)
    if params:
        raise SpecError(f"flash optimizer: unknown parameter(s) {sorted(params)}. Known: suppression_limit, max_lattice.")
    check_suppression_limit(limit, "flash")
    if isinstance(max_lattice, bool) or not isinstance(max_lattice, int) or max_lattice < 1:
        raise SpecError(f"flash optimizer: max_lattice must be a positive number of nodes, got {max_lattice!r}.")
    return limit, max_lattice


@checks_params("dfs")
def _dfs_params(params: dict[str, Any]) -> int:
    """``batch`` from ``params`` (consumed), or SpecError."""
    batch = params.pop("batch", 64)
    if params:
        raise SpecError(f"dfs optimizer: unknown parameter(s) {sorted(params)}. Known: batch.")
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise SpecError(f"dfs optimizer: batch must be a positive number of nodes, got {batch!r}.")
    return batch


takes_objectives("flash", "bounds")


@OPTIMIZERS.register("flash")
def flash(problem: Problem, *, budget: int, seed: int = 0, params: dict[str, Any],
          progress: ProgressFn | None = None) -> OptimizerResult:
    """Flash (binary), see the module docstring. ``seed`` is unused: Flash is deterministic.

    params: ``suppression_limit`` (fraction of records that may be suppressed, in [0, 1] as in
    ARX, default 0),
    ``max_lattice`` (largest lattice whose tag array is allocated, default 50,000,000 nodes).
    """
    limit, max_lattice = _flash_params(params)
    max_suppressed = max_suppressed_records(problem, limit, "flash")
    _only_monotone(problem.models, "The flash optimizer")
    size = lattice_size(problem.heights)
    if size > max_lattice:
        raise SpecError(
            f"flash optimizer: the lattice has {size:,} nodes, more than max_lattice = {max_lattice:,} "
            "(one byte of tag per node). Hint: raise params.max_lattice or use the 'lattice' optimizer."
        )
    tracker = Tracker(problem, budget, name="flash", progress=progress)
    if kernel_applies(problem, size):
        checked, pruned, phase_two, complete = run_kernel(problem, tracker, max_suppressed)
    else:
        state = _Flash(problem, tracker, max_suppressed)
        complete = state.run()
        checked, pruned, phase_two = state.checked, state.pruned, state.phase_two_candidates
    info = {
        "lattice_size": size, "nodes_checked": checked, "complete": complete,
        "suppression_limit": float(limit), "max_suppressed": max_suppressed,
        "nodes_pruned_by_bound": pruned, "phase_two_candidates": phase_two,
        # A complete run is optimal over every (G, S) that suppresses at most the limit.
        "optimal_within_limit": complete,
    }
    # Certified in the lattice search's sense: TD proven maximal over the (G, S) the run was
    # allowed, here those within the suppression limit (the k-anonymity oracle is exact).
    return tracker.result(certified=complete, info=info)  # Tracker.result: only with an exact oracle


def dfs_order(heights: np.ndarray) -> Iterator[tuple[int, ...]]:
    """Nodes in depth-first preorder from the bottom; successors by increasing QID index."""
    h = [int(x) for x in heights]
    n = len(h)
    node = (0,) * n
    visited = {node}
    yield node
    # Each frame: a node and the next QID to try raising at it.
    nodes: list[tuple[int, ...]] = [node]
    next_q: list[int] = [0]
    while nodes:
        cur, q = nodes[-1], next_q[-1]
        while q < n and (cur[q] >= h[q] or cur[:q] + (cur[q] + 1,) + cur[q + 1 :] in visited):
            q += 1
        if q == n:
            nodes.pop()
            next_q.pop()
            continue
        next_q[-1] = q + 1
        nxt = cur[:q] + (cur[q] + 1,) + cur[q + 1 :]
        visited.add(nxt)
        yield nxt
        nodes.append(nxt)
        next_q.append(0)


@OPTIMIZERS.register("dfs")
def dfs(problem: Problem, *, budget: int, seed: int = 0, params: dict[str, Any],
        progress: ProgressFn | None = None) -> OptimizerResult:
    """Depth-first lattice traversal with S = all ones (HAEF's DFS baseline, docs/design/paper_notes.md §5).

    Deterministic (``seed`` unused). params: ``batch`` (nodes per evaluator call, default 64).
    ``info["complete"]`` says whether the whole lattice was visited; the result is then the
    best suppression-free solution, which is still not certified over all (G, S).
    """
    batch = _dfs_params(params)
    tracker = Tracker(problem, budget, name="dfs", progress=progress)
    size = lattice_size(problem.heights)
    order = dfs_order(problem.heights)
    counts = problem.table.counts
    visited = 0
    while not tracker.exhausted:
        nodes: list[tuple[int, ...]] = []
        for node in order:
            nodes.append(node)
            if len(nodes) >= min(batch, tracker.remaining):
                break
        if not nodes:
            break
        G = np.array(nodes, dtype=np.int64)
        retained = np.tile(counts, (len(G), 1))
        ev = problem.evaluate(G, retained=retained)
        tracker.offer(G, retained, ev)
        visited += len(G)
    return tracker.result(certified=False, info={"lattice_size": size, "nodes_visited": visited,
                                                 "complete": visited >= size})
