"""What the optimizer minimizes besides TD: ARX's optimization metrics, scored on a node
(G, S*(G)) of the encoded table (``objective`` of the spec's [utility] section; the table of
metrics, bounds and certification: docs/design/utility.md, "Optimizing for ARX's metrics").

- ``td``: -TD (paper_notes §1), ppdp's default; the optimizers' own bounds are for it.
- ``loss``: ARX's Loss metric (metric/v2/MetricMDNMLoss, gs-factor 0.5, geometric mean, ARX's
  default ``Metric.createLossMetric()``): per QID d, the sum over kept records of the domain
  share of their value at level G_d (leaves under the value / leaves of the hierarchy, ARX's
  DomainShareMaterialized) plus 1 per suppressed record, normalized between N/|domain_d| and N
  and floored to ARX's 1e-10 grid; the QIDs aggregated as prod(1 + l_d)^(1/D) - 1.
- ``nu-entropy``, ``precision``, ``height``: MetricMDNUEntropy, MetricMDPrecision, MetricMDHeight,
  functions of the levels alone that never decrease upward (their own exact bound).
- ``aecs``, ``discernibility``: MetricSDAECS (gs-factor 0.5) and MetricSDNMDiscernability, from
  the equivalence classes; no bound from the levels.

``search`` scores the nodes in ascending order of a lower bound on the objective and stops when
the best score found is at most the next node's bound: every node left is then no better. Flash's
predictive tags (k-anonymity alone) skip the nodes that are not anonymous within the limit: all
of them tagged by ``flash.zero_limit_checks`` with a zero limit, down-sets found by a binary
search up a path otherwise. Certified when it stopped so, or scored every candidate, within the
budget and with an exact oracle; ``not_certified_because`` otherwise. Ties keep the first node
in the bound's order (then the lattice's: last QID fastest).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from ppdp.engine.core.encoding import EncodedTable
from ppdp.engine.core.spec import OBJECTIVES  # noqa: F401  (what the spec reader accepts)
from ppdp.engine.methods.generalization import _objective_kernel as OK
from ppdp.engine.methods.generalization.evaluators import Evaluation
from ppdp.engine.methods.generalization.evaluators.class_memo import ClassMemo
from ppdp.engine.methods.generalization.optimizers import (
    OptimizerResult,
    ProgressFn,
    flash,
    run_optimizer,
)
from ppdp.engine.methods.generalization.problem import Problem

# ARX's Metric.round: information loss floored to 10 decimal digits (Metric.DIGITS).
_ARX_FACTOR = 10.0**10
_BATCH = 256
# a level-only objective scores the bottom node before laying out the lattice (``search``);
# False: the lattice's scan alone, which scores it first (the twin of the tests)
BOTTOM_FIRST = True
# k-anonymity alone within a limit: a node whose state is unknown is settled by a probe before
# it is scored (``_scan``); False: scored first, then probed when it is not anonymous (the twin
# of the tests: the same result, more evaluations)
PROBE_FIRST = True
# ... from this many histogram rows: a probe checks one node per call, while scoring is batched,
# so fewer evaluations cost more calls; worth it where a node's evaluation outweighs a call's
# fixed cost (adult's 18,109 rows and fars's 60,806 gain; creditcard's 5,000-record sample, 1,477
# rows, loses)
PROBE_FIRST_ROWS = 10_000


def _shares(table: EncodedTable) -> list[np.ndarray]:
    """Per QID a (levels, histogram rows) array: the domain share of each row's value per level."""
    return [h.domain_share_matrix[:, table.codes[:, q]] for q, h in enumerate(table.hierarchies)]


class _Loss:
    """ARX's Loss (module docstring): scores of (G, retained) in batches, and its lower bound."""

    def __init__(self, table: EncodedTable) -> None:
        per_qid = _shares(table)
        width = max((s.shape[0] for s in per_qid), default=1)
        # (QIDs, levels, histogram rows), a QID's missing top levels padded with its top
        self.shares = np.zeros((len(per_qid), width, table.n_rows))
        for d, sh in enumerate(per_qid):
            self.shares[d, : sh.shape[0]] = sh
            self.shares[d, sh.shape[0]:] = sh[-1]
        self.domains = np.array([float(len(h.rows)) for h in table.hierarchies])
        self.n = float(table.n_records)
        counts = np.ascontiguousarray(table.counts, dtype=np.float64)[None, :]
        # per level and QID: the sum of shares with every record kept (the same kernel, in the
        # same order, as a score)
        levels = np.repeat(np.arange(width, dtype=np.int64)[:, None], len(per_qid), axis=1)
        self.full = OK.share_sums(levels, np.repeat(counts, width, axis=0), self.shares) + 0.0

    def _aggregate(self, agg: np.ndarray) -> np.ndarray:
        """prod over QIDs of (1 + normalized, floored sum)^(1/D) - 1, one row per node."""
        dims = agg.shape[1]
        result = np.ones(agg.shape[0])
        for d in range(dims):
            lo = self.n / self.domains[d]
            v = (agg[:, d] - lo) / (self.n - lo) if self.n > lo else np.zeros(agg.shape[0])
            v = np.floor(np.maximum(v, 0.0) * _ARX_FACTOR) / _ARX_FACTOR
            result = result * (v + 1.0) ** (1.0 / dims)
        return result - 1.0

    def scores(self, G: np.ndarray, retained: np.ndarray) -> np.ndarray:
        kept = np.ascontiguousarray(retained, dtype=np.float64)
        suppressed = self.n - kept.sum(axis=1)
        sums = OK.share_sums(np.ascontiguousarray(G, dtype=np.int64), kept, self.shares)
        return self._aggregate(sums + suppressed[:, None])

    def bounds(self, nodes: np.ndarray) -> np.ndarray:
        cols = np.arange(nodes.shape[1])
        return self._aggregate(self.full[nodes, cols[None, :]])


class _NodeOnly:
    """An objective of the levels alone, never smaller upward: its score is its own (exact)
    lower bound, so the first feasible node in its order is the optimum. ``per_level[d][lv]``:
    QID d's term at level lv; ``combine``: the QIDs' terms to one score per node."""

    def __init__(self, per_level: list[np.ndarray], combine: Callable[[np.ndarray], np.ndarray]) -> None:
        width = max(len(x) for x in per_level)
        self.table = np.array([np.concatenate([x, np.full(width - len(x), x[-1])]) for x in per_level]).T
        self.combine = combine

    def bounds(self, nodes: np.ndarray) -> np.ndarray:
        cols = np.arange(nodes.shape[1])
        return self.combine(self.table[nodes, cols[None, :]])

    def lattice_bounds(self, shape: tuple[int, ...]) -> np.ndarray:
        """``bounds`` of every node of the lattice of ``shape`` (levels + 1 per QID) in its order
        (np.indices, last QID fastest): the same terms laid out by broadcasting each QID's column
        instead of gathered per node, then the same ``combine``, so the same values bit for bit."""
        k = len(shape)
        terms = np.empty((*shape, k), dtype=self.table.dtype)
        for q in range(k):
            terms[..., q] = self.table[: shape[q], q].reshape([shape[q] if d == q else 1 for d in range(k)])
        return self.combine(terms.reshape(-1, k))

    def scores(self, G: np.ndarray, retained: np.ndarray) -> np.ndarray:
        return self.bounds(np.asarray(G, dtype=np.int64))


def _height(table: EncodedTable) -> _NodeOnly:
    """ARX's MetricMDHeight: the sum of the levels (equal attribute weights)."""
    return _NodeOnly([np.arange(h.height + 1, dtype=np.float64) for h in table.hierarchies], lambda t: t.sum(axis=1))


def _precision(table: EncodedTable) -> _NodeOnly:
    """ARX's MetricMDPrecision (monotonic, ARX's Metric.createPrecisionMetric(true)): the
    arithmetic mean over QIDs of level / height, suppression ignored (generalization factor 1
    at gs-factor 0.5)."""
    terms = [np.arange(h.height + 1, dtype=np.float64) / (h.height if h.height else 1) for h in table.hierarchies]
    return _NodeOnly(terms, lambda t: t.mean(axis=1))


def _nu_entropy(table: EncodedTable) -> _NodeOnly:
    """ARX's MetricMDNUEntropy (monotonic non-uniform entropy, Metric.createEntropyMetric(true)):
    per QID the sum over leaf values of a log2(b / a), a the records with that leaf value and b
    those with its generalization at the level, floored to ARX's 1e-10 grid; summed over QIDs.
    Suppression is ignored, so it depends on the levels alone and never decreases upward."""
    counts = table.counts.astype(np.int64)
    terms = []
    for q, h in enumerate(table.hierarchies):
        a = np.bincount(table.codes[:, q], weights=counts, minlength=len(h.rows)).astype(np.float64)
        leaves = np.flatnonzero(a > 0)
        present = a[leaves]
        # every level at once: level lv's generalized codes offset by lv x width, so that one
        # bincount gives each level's b (the present leaves' counts summed in leaf order, as a
        # bincount over all leaves sums them: the absent ones add 0.0)
        gen = np.ascontiguousarray(h.level_code_matrix[:, leaves], dtype=np.int64)  # C order: see the sum below
        width = int(gen.max()) + 1 if gen.size else 1
        gen += (np.arange(gen.shape[0], dtype=np.int64) * width)[:, None]
        b = np.bincount(gen.ravel(), weights=np.tile(present, gen.shape[0]), minlength=gen.shape[0] * width)
        # each row summed as np.sum sums one level's 1-D array: pairwise, which NumPy does along
        # a contiguous axis only (an F-ordered gen made the product F-ordered and the sums differ)
        raw = np.sum(present * np.log2(present / b[gen]), axis=1)  # <= 0, ARX's raw value per level
        terms.append(np.floor(np.where(raw != 0.0, -raw, 0.0) * _ARX_FACTOR) / _ARX_FACTOR)
    return _NodeOnly(terms, lambda t: t.sum(axis=1))


class _ClassBased:
    """ARX's single-dimensional metrics of the equivalence classes (MetricSDAECS, gs-factor 0.5;
    MetricSDNMDiscernability), scored a batch at a time by ``_objective_kernel.class_scores``
    from the classes the evaluation left in the roll-up memo (or classified again). No bound
    from the levels alone (ARX has none either), so every node that may be feasible is scored,
    except those above a scored node whose bound for its generalizations (``up_bounds``) is no
    better than the best score; a complete run is exact."""

    def __init__(self, table: EncodedTable, kind: str, memo: ClassMemo | None = None, k: int = 1) -> None:
        self.table = table
        self.kind = OK.AECS if kind == "aecs" else OK.DISCERNIBILITY
        self.n = float(table.n_records)
        self.memo = memo
        self.k = max(int(k), 1)
        self.up_bounds = np.empty(0)
        self.gen, _weight, self.n_gen = table.lookup

    def bounds(self, nodes: np.ndarray) -> np.ndarray:
        return np.full(nodes.shape[0], -np.inf)

    def _slots(self, G: np.ndarray) -> np.ndarray:
        if self.memo is None:
            return np.full(G.shape[0], -1, dtype=np.int64)
        return np.array([self.memo.slot(g) for g in G], dtype=np.int64)

    def scores(self, G: np.ndarray, retained: np.ndarray, ok: np.ndarray | None = None) -> np.ndarray:
        """Scores of the rows with ``ok`` (all by default; inf elsewhere); ``up_bounds`` of every
        row: a lower bound on the score of each generalization (``class_scores``; with the
        k of k-anonymity alone, else ARX's bound from the classes, suppression ignored)."""
        t = self.table
        G = np.ascontiguousarray(G, dtype=np.int64)
        ok = np.ones(G.shape[0], dtype=np.bool_) if ok is None else np.ascontiguousarray(ok, dtype=np.bool_)
        ids = self.memo.ids if self.memo is not None else np.zeros((1, 1), dtype=np.int32)
        score, self.up_bounds = OK.class_scores(self.kind, G, ok, t.codes, self.gen, self.n_gen, t.counts,
                                                np.ascontiguousarray(retained, dtype=np.int64), ids, self._slots(G),
                                                self.n, self.k)
        return score


def loss_scorer(table: EncodedTable) -> Callable[[np.ndarray, np.ndarray], float]:
    """ARX's Loss of (g, retained) on ``table`` (module docstring)."""
    loss = _Loss(table)

    def score(g: np.ndarray, retained: np.ndarray) -> float:
        return float(loss.scores(np.asarray(g, dtype=np.int64)[None, :], np.asarray(retained)[None, :])[0])

    return score


def loss_lower_bounds(table: EncodedTable, nodes: np.ndarray) -> np.ndarray:
    """A lower bound on ARX's Loss of each node (rows of ``nodes``): every record kept at its
    share (ARX's MetricMDNMLoss.getLowerBoundInternal). A suppressed record costs 1 >= its
    share, and the floor and the geometric mean are monotone, so the bound is at most the
    node's Loss, and equal to it when nothing is suppressed; shares only grow upward, so it
    never decreases from a node to its successors."""
    return _Loss(table).bounds(np.asarray(nodes, dtype=np.int64))


def _objective(objective: str, table: EncodedTable) -> _Loss | _NodeOnly | _ClassBased:
    if objective == "loss":
        return _Loss(table)
    if objective == "height":
        return _height(table)
    if objective == "precision":
        return _precision(table)
    if objective == "nu-entropy":
        return _nu_entropy(table)
    if objective in ("aecs", "discernibility"):
        return _ClassBased(table, objective)
    raise ValueError(f"no scorer for objective {objective!r}")


def scorer(objective: str, table: EncodedTable) -> Callable[[np.ndarray, np.ndarray], float]:
    """The objective's score of (g, retained), lower is better."""
    obj = _objective(objective, table)

    def score(g: np.ndarray, retained: np.ndarray) -> float:
        return float(obj.scores(np.asarray(g, dtype=np.int64)[None, :], np.asarray(retained)[None, :])[0])

    return score


def lower_bounds(objective: str, table: EncodedTable, nodes: np.ndarray) -> np.ndarray:
    """A lower bound on the objective of each node."""
    return _objective(objective, table).bounds(np.asarray(nodes, dtype=np.int64))


class FitnessProblem(Problem):
    """A Problem whose evaluations carry minus ``objective``'s score of each (G, retained) as
    their ``td``: the fitness every optimizer ranks feasible solutions by (the two-dimension
    rule, HAEF eq. 21, with the objective in place of TD), so the GA optimizers minimize the
    objective unchanged. Feasibility and violation are the models' own. Its results are not
    certified (``evolve``)."""

    def __init__(self, table: EncodedTable, models: list, objective: str, *, backend: str = "numba") -> None:
        super().__init__(table, models, backend=backend)
        self.objective = objective
        self._obj = _objective(objective, table)

    def _fitness(self, G: np.ndarray, retained: np.ndarray, ev: Evaluation) -> Evaluation:
        G = np.atleast_2d(np.asarray(G, dtype=np.int64))
        retained = np.atleast_2d(np.asarray(retained))
        return replace(ev, td=-np.asarray(self._obj.scores(G, retained), dtype=np.float64))

    def evaluate(self, G: np.ndarray, S: np.ndarray | None = None, *, retained: np.ndarray | None = None) -> Evaluation:
        G = np.atleast_2d(np.asarray(G, dtype=np.int64))
        if retained is None:
            retained = np.tile(self.table.counts, (G.shape[0], 1)) if S is None else self.retained_from_s(S)
        return self._fitness(G, retained, super().evaluate(G, retained=retained))

    def evaluate_optimal(self, G: np.ndarray) -> tuple[np.ndarray, Evaluation]:
        retained, ev = super().evaluate_optimal(G)  # (the two-step path scores in evaluate: the same)
        return retained, self._fitness(G, retained, ev)

    def evaluate_unsuppressed(self, G: np.ndarray, *, count: bool = True) -> Evaluation:
        G = np.atleast_2d(np.asarray(G, dtype=np.int64))
        ev = super().evaluate_unsuppressed(G, count=count)
        return self._fitness(G, np.tile(self.table.counts, (G.shape[0], 1)), ev)


def evolve(problem: Problem, objective: str, *, optimizer: str, budget: int, seed: int = 0, params: dict | None = None,
           progress: ProgressFn | None = None) -> OptimizerResult:
    """A registered optimizer other than the lattice and Flash (the GA, ID-DGA, HAEF, DE...)
    minimizing ``objective`` as its fitness (``FitnessProblem``). Heuristic: never certified,
    ``not_certified_because`` says so; ``info["objective_value"]``: the best score, and
    ``td`` the node's TD."""
    fit = FitnessProblem(problem.table, problem.models, objective, backend=problem.evaluator.name)
    result = run_optimizer(optimizer, fit, budget=budget, seed=seed, params=dict(params or {}), progress=progress)
    problem.evaluations += fit.evaluations
    ev = problem.evaluator.evaluate(result.g[None, :], result.retained[None, :])  # the TD (not counted)
    info = dict(result.info) | {"objective": objective, "objective_value": -float(result.td)}
    why = (f"{optimizer} is a heuristic search: objective {objective!r} is not proved optimal",)
    return replace(result, td=float(ev.td[0]), certified=False, info=info,
                   not_certified_because=tuple(result.not_certified_because) + why)


def smallest_class_k(models: list) -> int | None:
    """k when the models ask only that every class have at least k records (each one's AD is
    the smallest class, feasible from ``min_class_size()``: k-anonymity, k-map with an
    estimator, which is k'-anonymity), the largest of theirs; else None. Such models are
    monotone (classes only merge upward) and S*(G) keeps exactly the classes of >= k records."""
    if not models or not all(m.ad_is_smallest_class and m.monotone for m in models):
        return None
    return max(int(m.min_class_size()) for m in models)


def _zero_limit_anonymous(problem: Problem, budget: int, nodes: np.ndarray) -> tuple[np.ndarray | None, int] | None:
    """With a zero limit and k-anonymity alone: every node's verdict from Flash's predictive
    tagging (optimizers/flash.py ``zero_limit_checks``: a checked anonymous node makes every
    generalization anonymous, a checked one that is not makes every specialization not; a
    complete run tags every node). Returns (anonymous flags in lattice order, nodes checked),
    or None where the kernel does not apply. When the budget ends the traversal first, no node
    is flagged (flags None) and the checks used the whole budget: nothing is certified."""
    lattice = nodes.shape[0]  # every node, in the lattice's order (C-contiguous)
    if not flash.kernel_applies(problem, lattice):
        return None
    idx, smallest, _td, complete = flash.zero_limit_checks(problem, budget)
    problem.evaluations += int(idx.shape[0])
    if not complete:  # the budget ended the traversal: no tags, and no budget left to score
        return None, int(idx.shape[0])
    shape = tuple(int(h) + 1 for h in problem.heights)
    k = max(m.min_class_size() for m in problem.models)
    seed = np.zeros(lattice, dtype=np.bool_)
    seed[idx[smallest >= k]] = True
    strides = np.array([math.prod(shape[d + 1:]) for d in range(len(shape))], dtype=np.int64)
    return OK.upward_closure(seed, nodes, strides), int(idx.shape[0])


def _order_prefix(bounds: np.ndarray, size: int = 64) -> tuple[np.ndarray, bool]:
    """The start of ``np.argsort(bounds, kind="stable")`` without sorting the whole lattice:
    every node whose bound is at most the ``size``-th smallest, by (bound, index), which is
    exactly that start (ties at the threshold all included). Returns (prefix, whether nodes
    are left out)."""
    if bounds.shape[0] <= size:
        return np.argsort(bounds, kind="stable"), False
    threshold = np.partition(bounds, size - 1)[size - 1]
    idx = np.flatnonzero(bounds <= threshold)
    prefix = idx[np.argsort(bounds[idx], kind="stable")]
    return prefix, len(prefix) < bounds.shape[0]


class _KOnly:
    """k-anonymity alone: S*(G) keeps the classes of >= k records and suppresses the others, so
    a node's score and its records suppressed follow from its classes alone. A batch is one
    ``_objective_kernel.k_anonymous_terms`` call, each node classified by
    engine/kernels/classes.py ``classify`` (no retained matrix, no S*(G), no TD; on adult and
    mach2019 faster than rolling the classes up in ``Problem.evaluate_unsuppressed``, which
    computes TD too); one evaluation per node; the retained counts are made for the chosen
    node alone."""

    def __init__(self, problem: Problem, obj: _Loss | _NodeOnly | _ClassBased, k: int, max_suppressed: int) -> None:
        t = problem.table
        self.problem, self.obj, self.k, self.max_suppressed = problem, obj, k, max_suppressed
        self.kind = obj.kind if isinstance(obj, _ClassBased) else (OK.LOSS if isinstance(obj, _Loss) else OK.LEVELS)
        self.shares = obj.shares if isinstance(obj, _Loss) else np.zeros((1, 1, 1))
        self.gen, _weight, self.n_gen = t.lookup
        self.n = float(t.n_records)
        self._no_ids = np.zeros((1, 1), dtype=np.int32)
        self.batch = _BATCH

    def run(self, G: np.ndarray, *, rollup: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(within the limit, score (inf outside it), records suppressed) of each row of G;
        one evaluation each. ``rollup``: the classes rolled up from a remembered node below
        (``Problem.remember_classes``, which fills the class memo), for Flash's probes, whose
        nodes climb a path one level at a time."""
        t = self.problem.table
        G = np.ascontiguousarray(G, dtype=np.int64)
        if isinstance(self.obj, _NodeOnly) and self.max_suppressed >= t.n_records:
            # no limit: S*(G) keeps the classes of >= k records, k-anonymous (or empty) at every
            # node, and a level-only score is its bound: nothing to classify (suppressed: -1,
            # unknown until the chosen node's S*(G) is built)
            return np.ones(G.shape[0], dtype=np.bool_), self.obj.bounds(G), np.full(G.shape[0], -1.0)
        if rollup:
            self.problem.remember_classes(G)
            memo = self.problem.class_memo
            ids, slots = memo.ids, np.array([memo.slot(g) for g in G], dtype=np.int64)
        else:
            self.problem.evaluations += G.shape[0]
            ids, slots = self._no_ids, np.full(G.shape[0], -1, dtype=np.int64)
        sup, csc, cbound, sums = OK.k_anonymous_terms(self.kind, G, t.codes, self.gen, self.n_gen, t.counts, ids, slots,
                                                      self.k, self.n, self.shares)
        ok = sup <= self.max_suppressed
        if isinstance(self.obj, _ClassBased):
            sc = csc
            self.obj.up_bounds = cbound
        elif isinstance(self.obj, _Loss):
            sc = self.obj._aggregate(sums + sup[:, None])
        else:
            sc = self.obj.bounds(G)
        return ok, np.where(ok, sc, np.inf), sup


class _Tags:
    """Flash's predictive tags (optimizers/flash.py) over the lattice: a node anonymous within
    the limit makes its generalizations so, one that is not makes its specializations not."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.state = np.zeros(shape, dtype=np.int8)  # 0 unknown, 1 anonymous, 2 not

    def tag(self, g: np.ndarray, anonymous: bool) -> None:
        if anonymous:
            self.state[tuple(slice(int(c), None) for c in g)] = 1
        else:
            self.state[tuple(slice(0, int(c) + 1) for c in g)] = 2

    def probe(self, check: Callable[[np.ndarray], bool], g: np.ndarray, heights: list[int], budget: int, *,
              g_not_anonymous: bool) -> int:
        """Binary search for the last node that is not anonymous on a path from ``g`` to the top
        (each step raises the QID with the smallest relative level, the first on ties), tag its
        down-set (when there is one) and the up-set of each anonymous node checked, and return
        the checks made (``check``: a node is anonymous within the limit, one evaluation).
        ``g_not_anonymous``: ``g`` was checked and is not; else its state is unknown and ``g``
        is the path's first node, checked only if the search needs it (Flash's checkPath)."""
        nq = len(heights)
        rel = [(h if h else 1) for h in heights]
        # The path's steps: QID d's step from level j to j + 1 is taken when j / rel[d] is the
        # smallest relative level left (the first QID on ties), so the steps are those of every
        # QID ordered by (j / rel[d], d), each QID's in order; node i of the path is g raised by
        # the first i steps (only the nodes the search reads are made).
        steps = np.array([d for _, d in sorted((j / rel[d], d) for d in range(nq) for j in range(int(g[d]), heights[d]))],
                         dtype=np.int64)

        def path(i: int) -> np.ndarray:
            return g + np.bincount(steps[:i], minlength=nq)

        # path(lo) is not anonymous (lo = -1: below g, none known); path(hi..) is (or beyond the end)
        lo, hi, checks = (0 if g_not_anonymous else -1), len(steps) + 1, 0
        while hi - lo > 1 and checks < budget:
            mid = (lo + hi) // 2
            node = path(mid)
            st = int(self.state[tuple(int(c) for c in node)])
            if st == 0:
                checks += 1
                st = 1 if check(node) else 2
                self.tag(node, st == 1)
            if st == 1:
                hi = mid
            else:
                lo = mid
        if lo >= 0:
            self.tag(path(lo), False)
        return checks


# (score, G, retained or None, records suppressed, TD or None, AD or None): the best node so far;
# retained, TD and AD are None where k-anonymity alone scored it from its classes (``_KOnly``)
_Best = tuple[float, np.ndarray, np.ndarray | None, int, float | None, np.ndarray | None]


def _best_of_classes(G: np.ndarray, ok: np.ndarray, sc: np.ndarray, sup: np.ndarray, best: _Best | None) -> _Best | None:
    """``best``, or the first of G's smallest scores where it is smaller (``_KOnly.run``'s rows)."""
    if ok.any():
        i = int(np.argmin(sc))  # the first of equal scores
        if best is None or sc[i] < best[0]:
            best = (float(sc[i]), G[i].copy(), None, int(sup[i]), None, None)
    return best


def _score_batch(problem: Problem, obj: _Loss | _NodeOnly | _ClassBased, konly: _KOnly | None, G: np.ndarray,
                 best: _Best | None, max_suppressed: int, *, zero_limit: bool, rollup: bool
                 ) -> tuple[np.ndarray, _Best | None]:
    """Score the nodes ``G`` (one evaluation each) and return (which are feasible within the
    limit, the best node: ``best`` or the first of G's smallest scores where it is smaller)."""
    if konly is not None:
        ok, sc, sup = konly.run(G, rollup=rollup)
        return ok, _best_of_classes(G, ok, sc, sup, best)
    if zero_limit:  # an anonymous node at a zero limit: S*(G) keeps every record
        retained = np.repeat(problem.table.counts[None, :], G.shape[0], axis=0)
        ev = problem.evaluate(G, retained=retained)
    else:
        retained, ev = problem.evaluate_optimal(G)
    ok = ev.feasible & (ev.suppressed <= max_suppressed)
    if isinstance(obj, _ClassBased):  # every row: its bound for its generalizations too
        sc = obj.scores(G, retained, ok)
    elif ok.any():
        sc = np.full(G.shape[0], np.inf)
        sc[ok] = obj.scores(G[ok], retained[ok])
    if ok.any():
        i = int(np.argmin(sc))  # the first of equal scores
        if best is None or sc[i] < best[0]:
            best = (float(sc[i]), G[i].copy(), retained[i].copy(), int(ev.suppressed[i]), float(ev.td[i]),
                    ev.ad[i].copy())
    return ok, best


def search(problem: Problem, objective: str, *, budget: int, optimizer: str, params: dict | None = None,
           progress: ProgressFn | None = None) -> OptimizerResult:
    """The feasible node with the smallest ``objective`` over the whole lattice (module docstring);
    ``params["suppression_limit"]`` (ARX's semantics, as the lattice's): a node whose S*(G)
    suppresses more than floor(limit x nR) records is infeasible."""
    t0 = time.perf_counter()
    limit = float((params or {}).get("suppression_limit", 1.0))
    max_suppressed = math.floor(limit * problem.table.n_records)
    class_k = smallest_class_k(problem.models)
    if objective in ("aecs", "discernibility"):
        # the classes the evaluations leave in the roll-up memo; k's bound where k is alone
        k = class_k or 1
        obj: _Loss | _NodeOnly | _ClassBased = _ClassBased(problem.table, objective, problem.class_memo, k)
    else:
        obj = _objective(objective, problem.table)
    # k-anonymity alone: scored from the classes (``_KOnly``)
    konly = _KOnly(problem, obj, class_k, max_suppressed) if class_k else None
    heights = [int(h) for h in problem.heights]
    lattice = math.prod(h + 1 for h in heights)
    best: _Best | None = None
    evaluated = 0
    history: list[tuple[float, float, float]] = []
    # A level-only objective's smallest bound is the bottom node's (its terms never decrease
    # upward) and the bottom node comes first in the lattice's order, so it is the first node
    # ``_scan`` scores (a batch of 1). Scored here, before the lattice's nodes and bounds are laid
    # out, it ends the search when it is feasible: no node has a smaller bound. Not at a zero
    # limit (Flash's tags come first) nor while probing (the probes tag as they score).
    probing = 0 < max_suppressed < problem.table.n_records and bool(class_k)
    if BOTTOM_FIRST and isinstance(obj, _NodeOnly) and max_suppressed != 0 and not probing and budget > 1:
        bottom = np.zeros((1, len(heights)), dtype=np.int64)
        _ok, best = _score_batch(problem, obj, konly, bottom, None, max_suppressed, zero_limit=False, rollup=False)
        evaluated = 1
        _note(history, progress, evaluated, best)
    if best is not None:  # the bottom node, feasible: no node has a smaller bound
        proved, mode = True, "bound"
    else:
        best, evaluated, proved, mode = _scan(problem, obj, konly, heights, budget, max_suppressed, probing, best,
                                              evaluated == 1, history, progress)
    complete = proved
    why: list[str] = []
    if not complete:
        why.append(f"the lattice has {lattice:,} nodes and the budget scored {evaluated:,} before the best score "
                   f"reached the lower bound of the nodes left: objective {objective!r} is not proved optimal")
    if not problem.oracle_exact:
        why.append("the suppression oracle is not exact for these models")
    info = {"mode": mode if proved else "exhaustive", "objective": objective, "lattice_size": lattice,
            "nodes_evaluated": evaluated, "suppression_limit": limit}
    if best is None:
        top = np.array(heights, dtype=np.int64)
        none_kept = np.zeros_like(problem.table.counts)
        ev = problem.evaluate(top[None, :], retained=none_kept[None, :])
        return OptimizerResult(optimizer, top, none_kept, float(ev.td[0]), False, ev.ad[0], int(problem.table.n_records), evaluated,
                               time.perf_counter() - t0, np.array(history or [(0, np.nan, 0.0)]), False, info, tuple(why))
    s, g, kept, counted, best_td, best_ad = best
    best_sup = counted
    if kept is None:  # k-anonymity alone: S*(G) of the chosen node (one evaluation more)
        retained, ev = problem.evaluate_optimal(g[None, :])
        kept, best_ad, best_sup = retained[0], ev.ad[0].copy(), int(ev.suppressed[0])
        best_td = float(ev.td[0])
        assert (counted < 0 or best_sup == counted) and ev.feasible[0], "S*(G) disagrees with the classes' count"
    assert best_ad is not None and best_sup is not None and best_td is not None  # set with best
    # TD(G, kept) as the evaluation that gave kept computed it (evaluate_optimal's equals
    # evaluate's bit for bit: tests/oracles/test_fused_oracle.py), not evaluated again
    td = best_td
    info["objective_value"] = s
    return OptimizerResult(optimizer, g, kept, td, True, best_ad, best_sup, evaluated, time.perf_counter() - t0,
                           np.array(history), complete and not why, info, tuple(why))


def _note(history: list[tuple[float, float, float]], progress: ProgressFn | None, evaluated: int,
          best: _Best | None) -> None:
    """The search's history row and progress call after a batch."""
    history.append((evaluated, -best[0] if best else np.nan, 1.0 if best else 0.0))
    if progress is not None:
        progress(evaluated, -best[0] if best else float("nan"), best is not None)


def _scan(problem: Problem, obj: _Loss | _NodeOnly | _ClassBased, konly: _KOnly | None, heights: list[int],
          budget: int, max_suppressed: int, probing: bool, best: _Best | None, bottom_scored: bool,
          history: list[tuple[float, float, float]], progress: ProgressFn | None) -> tuple[_Best | None, int, bool, str]:
    """The nodes of the lattice in ascending order of their bound, scored until the best score is
    at most the next node's bound (``search``). ``probing``: k-anonymity alone within a limit
    (``search``), whose down-sets a binary search tags. ``bottom_scored``: ``search`` scored the bottom
    node, the order's first, already (``best`` its result, one evaluation): the order goes on
    after it. Returns (best, nodes evaluated, whether the best is proved optimal, the mode)."""
    evaluated = 1 if bottom_scored else 0
    lattice = math.prod(h + 1 for h in heights)
    # every node, in the lattice's order (last QID fastest)
    nodes = np.indices([h + 1 for h in heights], dtype=np.int64).reshape(len(heights), -1).T.copy()
    # Zero limit: Flash's tags first (``_zero_limit_anonymous``), so that only the anonymous
    # nodes get a bound.
    anonymous = _zero_limit_anonymous(problem, budget, nodes) if max_suppressed == 0 else None
    rest_pending = False
    if anonymous is None or anonymous[0] is None:  # every node a candidate (no copies)
        bounds = obj.lattice_bounds(tuple(h + 1 for h in heights)) if isinstance(obj, _NodeOnly) else obj.bounds(nodes)
        order, rest_pending = _order_prefix(bounds)
        levels = nodes.sum(axis=1) if isinstance(obj, _ClassBased) else None
        cand = None
    else:
        cand = np.flatnonzero(anonymous[0])
        bounds = np.full(lattice, np.inf)
        bounds[cand] = obj.bounds(nodes[cand])
        order = cand[np.argsort(bounds[cand], kind="stable")]
        levels = nodes[cand].sum(axis=1) if isinstance(obj, _ClassBased) else None
    # (Above: nodes in ascending order of the lower bound; ties: the lattice's order, last QID
    # fastest.) Class-based objectives: specializations first (level sum), so that a scored
    # node's bound for its generalizations (``_ClassBased.up_bounds``) skips them.
    up = None
    if isinstance(obj, _ClassBased):
        assert levels is not None  # set above for class-based objectives
        order = np.argsort(levels, kind="stable") if cand is None else cand[np.argsort(levels, kind="stable")]
        rest_pending = False
        if konly is not None:  # k-anonymity alone
            up = np.full(tuple(h + 1 for h in heights), -np.inf)
    up_flat = up.reshape(-1) if up is not None else None
    proved = False
    mode = "bound"
    shape = tuple(h + 1 for h in heights)
    tags: _Tags | None = None
    cut_short = False  # Flash's traversal ran out of budget
    strides = np.array([math.prod(shape[d + 1:]) for d in range(len(shape))], dtype=np.int64)
    probe_first = PROBE_FIRST and probing and problem.table.n_rows >= PROBE_FIRST_ROWS
    probed: dict[int, tuple[float, float, float]] = {}  # node -> (score, suppressed, bound) of a probe's check
    if anonymous is not None:
        # Zero limit: Flash tagged every node; only the anonymous ones are scored (an anonymous
        # node suppresses nothing: Loss and the level-only objectives score their bound, so
        # the first one in the bound's order ends the search).
        flags, evaluated = anonymous
        mode = "flash-tags"
        order = order if flags is not None else order[:0]
        cut_short = flags is None
    elif probing:
        # Monotone anonymity within the limit (k-anonymity alone: classes only merge upward, so
        # the records of small classes, which S*(G) suppresses, never grow): a node that is not
        # anonymous within the limit has no specialization that is, so a binary search up a
        # path from it (Flash's, Kohlmayer et al. 2012) tags a whole down-set with a few checks.
        tags = _Tags(shape)

        def check(node: np.ndarray) -> bool:
            if konly is not None:
                ok1, sc1, sup1 = konly.run(node[None, :], rollup=True)
                if probe_first:
                    j = int(node @ strides)
                    bound = float(obj.up_bounds[0]) if isinstance(obj, _ClassBased) else -np.inf
                    if up_flat is not None and isinstance(obj, _ClassBased):  # its bound for its generalizations
                        up_flat[j] = max(up_flat[j], bound)
                    if ok1[0]:  # scored when the order reaches it, from these values (not evaluated again)
                        probed[j] = (float(sc1[0]), float(sup1[0]), bound)
                return bool(ok1[0])
            _, ev = problem.evaluate_optimal(node[None, :])
            return bool(ev.feasible[0] and int(ev.suppressed[0]) <= max_suppressed)
    # one node at a time where the first anonymous node is the optimum; 4 while probing (a
    # probe may tag the next nodes, but a batch rolls classes up from its own nodes)
    single = (anonymous is not None and not isinstance(obj, _ClassBased))
    # an objective of the levels alone scores its bound: its first feasible node in the bound's
    # order is the optimum, so batches double from 1 (with no limit, the first node)
    batch = 1 if single or isinstance(obj, _NodeOnly) else (4 if probing else 8)
    pos = 0
    if bottom_scored:  # the first batch of 1 (the bottom node) is scored: the next batch is of 2
        assert order[0] == 0 and anonymous is None and not probing
        pos, batch = 1, 2
    flat = tags.state.reshape(-1) if tags is not None else None  # a view, in the lattice's order
    no_tags, no_up = np.zeros(lattice, dtype=np.int8), np.full(1, -np.inf)
    while (pos < len(order) or rest_pending) and evaluated < budget:
        if pos >= len(order):  # past the sorted prefix: the whole order (the prefix is its start)
            order, rest_pending = np.argsort(bounds, kind="stable"), False
        if best is not None and best[0] <= bounds[order[pos]]:
            proved = True
            break
        # The next nodes in the bound's order that may be feasible and whose bound is below the
        # best found (all of them could beat it): 4 at a time while probing (a probe tags
        # nodes), else batches doubling from 8 to _BATCH.
        want = min(batch, _BATCH if konly is None else konly.batch, budget - evaluated)
        if not single and not probing:
            batch = min(2 * batch, _BATCH)
        picked, pos, _stopped = OK.pick_nodes(order, pos, want, bounds, best[0] if best is not None else np.inf,
                                              flat if flat is not None else no_tags,
                                              up_flat if up_flat is not None else no_up, up_flat is not None, nodes,
                                              strides)
        if probe_first and flat is not None and tags is not None:
            # A node whose state is unknown is settled by a probe up its path before it is
            # scored (Flash's checkPath): a check higher up may tag it not anonymous, with no
            # check of its own. Only the nodes then anonymous (or still unknown: the budget
            # ended the probe) are scored, in the order's sequence as before, so the best node
            # and its ties are the same; fewer nodes are evaluated.
            for i in picked:
                if flat[i] == 0 and evaluated < budget:
                    evaluated += tags.probe(check, nodes[i], heights, budget - evaluated, g_not_anonymous=False)
            picked = picked[flat[picked] != 2]
        if not len(picked):
            continue
        if evaluated >= budget:  # the probes used the budget up: these nodes are not scored
            cut_short = True
            break
        G = nodes[picked]
        known = np.array([int(i) in probed for i in picked], dtype=np.bool_) if probed else None
        if konly is not None and known is not None and known.any():
            # nodes a probe's check evaluated: its values, the same as an evaluation here gives
            # (each node's terms are its own); scored in the order's sequence as the others
            ok, sc, sup = np.ones(len(picked), dtype=np.bool_), np.empty(len(picked)), np.empty(len(picked))
            bound = np.empty(len(picked))
            for r in np.flatnonzero(known):
                sc[r], sup[r], bound[r] = probed.pop(int(picked[r]))
            fresh = np.flatnonzero(~known)
            if len(fresh):
                ok[fresh], sc[fresh], sup[fresh] = konly.run(G[fresh], rollup=probing)
                if isinstance(obj, _ClassBased):
                    bound[fresh] = obj.up_bounds
            best = _best_of_classes(G, ok, sc, sup, best)  # a fresh row not within the limit scores inf
            if isinstance(obj, _ClassBased):
                obj.up_bounds = bound
            evaluated += len(fresh)
        else:
            ok, best = _score_batch(problem, obj, konly, G, best, max_suppressed, zero_limit=anonymous is not None,
                                    rollup=probing)
            evaluated += len(picked)
        if up_flat is not None and isinstance(obj, _ClassBased):  # monotone: the node's own bound is its specializations' too
            up_flat[picked] = np.maximum(up_flat[picked], obj.up_bounds)
        if probing and tags is not None:
            for i in range(len(picked)):
                if ok[i]:
                    tags.tag(G[i], True)
                else:  # scored before its probe (PROBE_FIRST False, or a probe cut short by the budget)
                    evaluated += tags.probe(check, G[i], heights, budget - evaluated, g_not_anonymous=True)
        _note(history, progress, evaluated, best)
    if pos >= len(order) and not rest_pending and not cut_short:
        proved = True
    return best, evaluated, proved, mode
