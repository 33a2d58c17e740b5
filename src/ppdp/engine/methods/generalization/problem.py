"""The optimization problem every optimizer works on: (G, S) -> fitness, plus S*(G).

A solution is G (level per QID) and S (keep flag per record, records numbered by histogram
row, see engine/core/encoding.py). Optimizers that search S bit by bit (the papers') pass S; the
lattice search passes only G and lets the exact suppression oracle choose S (docs/design/paper_notes.md §3).
Every evaluated (G, S) counts as one evaluation against the budget.
"""

from __future__ import annotations

import math

import numpy as np

from ppdp.engine.core.encoding import EncodedTable
from ppdp.engine.kernels import batch as B
from ppdp.engine.kernels import classes as K
from ppdp.engine.kernels import kinds
from ppdp.engine.kernels import presence as P
from ppdp.engine.methods.generalization.evaluators import Evaluation, finish, make_evaluator
from ppdp.engine.methods.generalization.evaluators.class_memo import ClassMemo
from ppdp.engine.methods.generalization.evaluators.numba_backend import NumbaEvaluator
from ppdp.engine.privacy import OracleParams, OraclePlan, PrivacyModel, plan_oracle


def fitness_key(feasible: bool, violation: float, td: float) -> tuple[int, float]:
    """Sort key of the two-dimension rule (ID-DGA §4.6, HAEF eq. 21): larger is better.

    Feasible beats infeasible; two feasible compare by TD; two infeasible by closeness to
    feasibility (smaller normalized violation, i.e. higher AD for k/l, lower AD for t).
    """
    return (1, td) if feasible else (0, -violation)


ORACLE_CACHE_BYTES = 128 * 1024 * 1024
CLASS_CACHE_BYTES = 64 * 1024 * 1024


class Problem:
    """Encoded table + privacy models + evaluator backend, with an evaluation counter."""

    def __init__(self, table: EncodedTable, models: list[PrivacyModel], *, backend: str = "numba") -> None:
        if not models:
            raise ValueError("a problem needs at least one privacy model")
        self.table = table
        self.models = list(models)
        self.evaluator = make_evaluator(backend, table, self.models)
        self.evaluations = 0
        # The models' S*(G) constraints, and whether S*(G) is exact for them (models/oracle.py).
        self.oracle_plan: OraclePlan = plan_oracle(self.models)
        # The numba backend's arrays feed S*(G) and the fused kernels whatever the backend.
        numba = self.evaluator if backend == "numba" else make_evaluator("numba", table, self.models)
        assert isinstance(numba, NumbaEvaluator)
        self._numba: NumbaEvaluator = numba
        # S*(G) depends on G alone, and evolutionary runs revisit the same G many times (a
        # converged population): remember it, up to ORACLE_CACHE_BYTES of retained counts.
        self._oracle_cache: dict[bytes, np.ndarray] = {}
        self._oracle_cache_max = max(ORACLE_CACHE_BYTES // max(8 * len(table.counts), 1), 1)
        # Allocations of S*(G) per class signature, shared by every node (evaluate_optimal).
        self._memo: tuple[np.ndarray, np.ndarray] | None = None
        # Class ids per histogram row of the nodes evaluated last (the roll-up), made on first use.
        self._class_memo: ClassMemo | None = None
        self._scratch: tuple[np.ndarray, ...] | None = None  # evaluate_unsuppressed's buffers
        # delta-presence caps the records a class may keep: S*(G) applies its term (kernels/presence.py).
        self._caps_retention = self.oracle_plan.params.presence

    @property
    def oracle_params(self) -> OracleParams:
        """The constraints S*(G) enforces (every model's that has an oracle)."""
        return self.oracle_plan.params

    @property
    def oracle_exact(self) -> bool:
        """S*(G) is the largest feasible retention for every model: results may be certified."""
        return self.oracle_plan.exact

    # -- sizes ---------------------------------------------------------------------------
    @property
    def n_records(self) -> int:
        return self.table.n_records

    @property
    def n_qids(self) -> int:
        return self.table.n_qids

    @property
    def heights(self) -> np.ndarray:
        return self.table.heights

    @property
    def max_td(self) -> float:
        return float(self.n_records * self.n_qids)

    # -- S conversions -------------------------------------------------------------------
    def retained_from_s(self, S: np.ndarray) -> np.ndarray:
        """(P, nR) keep flags -> (P, H) retained counts."""
        S = np.asarray(S, dtype=np.bool_)
        if S.ndim != 2:
            S = np.atleast_2d(S)
        return B.retained_batch(np.ascontiguousarray(S), self.table.offsets)

    def s_from_retained(self, retained: np.ndarray) -> np.ndarray:
        """(H,) retained counts -> (nR,) keep flags (the first records of each row are kept);
        a batch (P, H) gives (P, nR)."""
        t = self.table
        rank = np.arange(t.n_records) - t.offsets[t.row_of_record]
        return rank < np.asarray(retained)[..., t.row_of_record]

    # -- evaluation ----------------------------------------------------------------------
    def evaluate(self, G: np.ndarray, S: np.ndarray | None = None, *, retained: np.ndarray | None = None) -> Evaluation:
        """Evaluate a batch; S (per record) or retained (per row); neither = keep everything."""
        G = np.asarray(G, dtype=np.int64)
        if G.ndim != 2:
            G = np.atleast_2d(G)
        if retained is None:
            retained = np.tile(self.table.counts, (G.shape[0], 1)) if S is None else self.retained_from_s(S)
        retained = np.asarray(retained)
        self.evaluations += G.shape[0]
        return self.evaluator.evaluate(G, retained if retained.ndim == 2 else np.atleast_2d(retained))

    def fused_evaluation(self) -> tuple[tuple, np.ndarray, np.ndarray] | None:
        """What a kernel needs to evaluate nodes with nothing suppressed exactly as ``evaluate``
        does and to decide their feasibility as ``finish`` does: (``B.evaluate_prepared_into``'s
        arguments after (G, retained), each model's comparison code, its threshold); None where
        ``evaluate`` runs another path (another backend, a model without a kind code) or a
        model has no ``kernel_feasibility``. The caller counts the evaluations."""
        args = self._numba.fused_args() if self.evaluator is self._numba else None
        tests = [m.kernel_feasibility() for m in self.models]
        if args is None or any(t is None for t in tests):
            return None
        ops = np.array([t[0] for t in tests if t is not None], dtype=np.int64)
        at = np.array([t[1] for t in tests if t is not None], dtype=np.float64)
        return args, ops, at

    @property
    def needs_population(self) -> bool:
        """A model counts the population's persons per class (delta-presence, k-map)."""
        return self._numba.needs_population

    def class_stats(self, g: np.ndarray, retained: np.ndarray):
        """(class id per histogram row, ClassStats with the population's counts when a model
        needs them, pair id per row) of one (G, retained)."""
        return self._numba.class_stats(np.ascontiguousarray(g, dtype=np.int64), np.asarray(retained, dtype=np.int64))

    def record_class_sizes(self, g: np.ndarray, s: np.ndarray) -> np.ndarray:
        """Class size of each record for one (G, S); 0 for suppressed records.

        Records of one histogram row share a class, so the size of the row's class is read at
        the row's first record position of a compressed evaluation and spread to the records
        that ``s`` actually keeps (not to the first ``retained[h]`` of the row).
        """
        s = np.asarray(s, dtype=np.bool_)
        t = self.table
        sizes = self.evaluator.record_class_sizes(np.asarray(g, dtype=np.int64), self.retained_from_s(s)[0])
        # per row: the size at any kept record of that row (the evaluator keeps the first ones)
        return np.where(s, sizes[t.offsets[:-1]][t.row_of_record], 0)

    def optimal_retained(self, g: np.ndarray) -> np.ndarray:
        """S*(G) as retained counts per histogram row (docs/design/paper_notes.md §3). Remembered per G."""
        g = np.asarray(g, dtype=np.int64)
        key = g.tobytes()
        hit = self._oracle_cache.get(key)
        if hit is not None:
            return hit.copy()
        out = self._optimal_retained(g)
        self._remember(key, out)
        return out

    def _remember(self, key: bytes, retained: np.ndarray, *, copy: bool = True) -> None:
        if len(self._oracle_cache) >= self._oracle_cache_max:
            self._oracle_cache.pop(next(iter(self._oracle_cache)))  # the oldest entry
        self._oracle_cache[key] = retained.copy() if copy else retained

    def _optimal_retained(self, g: np.ndarray) -> np.ndarray:
        out = self._oracle_retained(g)
        return self._capped(g, out) if self._caps_retention else out

    def _capped(self, g: np.ndarray, retained: np.ndarray) -> np.ndarray:
        """S*(G) under delta-presence's term (engine/kernels/presence.py): each class keeps its
        first records in histogram-row order up to the largest count with count / persons <=
        dmax, and none when that is below the oracle's k. Exact after the k-only oracle (all
        records of a class weigh the same in TD and delta); beside a constraint on sensitive
        values the plan says it is not (privacy/oracle.py)."""
        o = self.oracle_params
        cls, stats, _ = self._numba.class_stats(np.asarray(g, dtype=np.int64), retained)
        assert stats.population is not None, "delta-presence requires population counts per class"
        cap = P.presence_retention(np.asarray(stats.size, dtype=np.int64), np.asarray(stats.population, dtype=np.int64),
                                   int(o.k), float(o.dmax))
        if not cap.size:  # no class kept: nothing to cap
            return np.asarray(retained, dtype=np.int64)
        live = cls >= 0
        order = np.argsort(np.where(live, cls, np.iinfo(np.int64).max), kind="stable")
        ret = np.asarray(retained, dtype=np.int64)[order]
        c = np.asarray(cls, dtype=np.int64)[order]
        live_sorted = c >= 0
        cum = np.cumsum(ret)
        # records of the same class in rows before this one
        first = np.r_[True, c[1:] != c[:-1]]
        start = np.maximum.accumulate(np.where(first, np.arange(len(c)), 0))
        before = cum - ret - np.where(start > 0, cum[start - 1], 0)
        keep = np.where(live_sorted, np.clip(cap[np.where(live_sorted, c, 0)] - before, 0, ret), ret)
        out = np.empty_like(ret)
        out[order] = keep
        return out

    def _oracle_retained(self, g: np.ndarray) -> np.ndarray:
        t = self.table
        o = self.oracle_params
        counts = t.counts
        if not self._numba.needs_pairs and o.k <= 1:
            # No constraint of the oracle's (models without one, as delta-presence and k-map
            # against a population): every class of >= 1 record is kept, i.e. every record, with
            # no classification (it cost as much as the node's evaluation).
            return np.array(counts, dtype=np.int64)
        cls, stats, pid = self._numba.class_stats(np.asarray(g, dtype=np.int64), counts)
        if not self._numba.needs_pairs:  # k-anonymity alone: keep classes of size >= k
            keep_class = stats.size >= o.k
            return np.where(keep_class[cls], counts, 0)
        keep_pairs = K.optimal_pair_retention_t(stats.size, stats.pair_class, stats.pair_sa, stats.pair_n, stats.q,
                                                o.k, o.t, o.l_distinct, o.l_entropy, o.t_kind, o.kernel_t_params())
        return K.rows_from_pairs(pid, keep_pairs, counts)

    def evaluate_optimal(self, G: np.ndarray) -> tuple[np.ndarray, Evaluation]:
        """(retained, evaluation) of (G, S*(G)) for each row of G; one evaluation each.

        With the numba backend and built-in models, one fused kernel computes S*(G) and its
        evaluation from one classification per G, rolled up from a predecessor's classes when
        one is known (the separate evaluation classified again, and the oracle
        recomputed the same class allocations on every node; a memo keeps them). The same
        numbers as the two-step path, bit for bit (tests/oracles/test_fused_oracle.py).
        """
        G = np.atleast_2d(np.asarray(G, dtype=np.int64))
        keys = [g.tobytes() for g in G]
        # The two-step path when the fused kernel does not apply, or when S*(G) of some row is
        # remembered (evolutionary runs revisit G): a remembered S*(G) costs one evaluation.
        if (self.evaluator is not self._numba or self._numba.kinds is None or self._caps_retention
                or any(key in self._oracle_cache for key in keys)):
            retained = np.stack([self.optimal_retained(g) for g in G])
            return retained, self.evaluate(G, retained=retained)
        retained, ev = self.evaluate_optimal_fused(G)
        self.evaluations += G.shape[0]
        # One copy for the batch, its rows remembered (a copy per node was a tenth of the
        # Python around the kernel on 1,000-record tables).
        for key, r in zip(keys, retained.copy(), strict=True):
            self._remember(key, r, copy=False)
        return retained, ev

    def evaluate_optimal_fused(self, G: np.ndarray, *, rollup: bool = True) -> tuple[np.ndarray, Evaluation]:
        """``evaluate_optimal`` through ``_kernels.evaluate_optimal_batch`` (numba backend with
        built-in models only); counts no evaluation and bypasses the S*(G) cache.

        ``rollup``: build the classes of a node from those of a node one level below it in one
        QID, evaluated earlier in this batch or remembered from an earlier call (the lattice
        search evaluates a node's predecessors before it), instead of classifying every row.
        """
        t = self.table
        ev = self._numba
        o = self.oracle_params
        if self._memo is None:
            # S*(G) under k alone keeps whole classes and never reads the memo (5-17 MiB to fill).
            only_k = o.t < 0 and o.l_distinct <= 1 and o.l_entropy <= 1.0
            self._memo = K.new_retention_memo(t.n_sa, slots=1 if only_k else K.memo_slots(t.n_rows))
        allocations, allocations_fill = self._memo
        G = np.ascontiguousarray(G, dtype=np.int64)
        # The batch's class ids are kept (as views of one array): only when they fit the cache.
        rollup = rollup and G.shape[0] * 4 * t.n_rows <= CLASS_CACHE_BYTES
        if rollup:  # each row's predecessor and own slot in the memo, planned in one kernel call
            memo = self.class_memo
            ids = memo.ids
            parent_slot, out_slot = memo.plan(G)
        else:
            ids = np.empty((0, 1), dtype=np.int32)
            parent_slot = out_slot = np.zeros(0, dtype=np.int64)
        retained, ad, td, sup = K.evaluate_optimal_batch(
            G, t.codes, ev.gen, ev.n_gen, ev.weight, t.sa, t.n_sa, t.counts, ev.q, ev.kinds, ev.kind_params, t.n_records,
            int(o.k), float(o.t), int(o.l_distinct), float(o.l_entropy), int(o.t_kind), o.kernel_t_params(),
            allocations, allocations_fill, ids, parent_slot, out_slot)
        return retained, finish(self.models, ad, td, sup)

    @property
    def class_memo(self) -> ClassMemo:
        """Class ids of the nodes evaluated last (engine/methods/generalization/evaluators/class_memo.py)."""
        if self._class_memo is None:
            t = self.table
            # No more slots than nodes in the lattice (as Flash's memo): a ring that holds every
            # node never evicts one either way, and a small lattice's ring is cheap to make.
            nodes = math.prod(int(h) + 1 for h in t.heights)
            self._class_memo = ClassMemo(t.n_rows, t.n_qids, min(CLASS_CACHE_BYTES // max(4 * t.n_rows, 1), nodes))
        return self._class_memo

    def evaluate_unsuppressed(self, G: np.ndarray, *, count: bool = True) -> Evaluation:
        """``evaluate(G)`` (nothing suppressed), one evaluation per row of G (none when ``count``
        is False: a node already counted, as Flash re-reads one beyond its suppression limit).

        With the numba backend and k-anonymity alone (what Flash checks) from the classes
        alone, rolled up from a remembered node below each G, or the node itself
        (``_kernels.unsuppressed_batch``): the same numbers, bit for bit.
        """
        ev = self._numba
        if not self._classes_alone:
            G = np.atleast_2d(np.asarray(G, dtype=np.int64))
            return self.evaluate(G) if count else self.evaluator.evaluate(G, np.tile(self.table.counts, (G.shape[0], 1)))
        t = self.table
        G = np.ascontiguousarray(np.atleast_2d(G), dtype=np.int64)
        memo = self.class_memo
        parent_slot, out_slot = memo.plan(G)
        smallest, td = K.unsuppressed_batch(G, t.codes, ev.gen, ev.n_gen, ev.weight, t.counts, memo.ids,
                                            parent_slot, out_slot, *self._class_scratch())
        if count:
            self.evaluations += G.shape[0]
        ad = np.repeat(smallest[:, None], len(self.models), axis=1)
        return finish(self.models, ad, td, np.zeros(G.shape[0], dtype=np.int64))

    def remember_classes(self, G: np.ndarray) -> None:
        """The classes of each row of G (nothing suppressed) into the class memo, rolled up from a
        remembered node below it as ``evaluate_unsuppressed`` leaves them, without its measures
        (``_kernels.classes_batch``): for a scorer that reads the classes (objectives.py's
        ``k_anonymous_terms``). One evaluation per row. Outside the numba backend's k-anonymity
        path nothing is remembered (the scorer classifies the node itself)."""
        self.evaluations += int(np.atleast_2d(G).shape[0])
        if not self._classes_alone:
            return
        ev = self._numba
        G = np.ascontiguousarray(np.atleast_2d(G), dtype=np.int64)
        parent_slot, out_slot = self.class_memo.plan(G)
        scratch = self._class_scratch()
        K.classes_batch(G, self.table.codes, ev.gen, ev.n_gen, self.class_memo.ids, parent_slot, out_slot,
                        *scratch[:6])

    @property
    def _classes_alone(self) -> bool:
        """The numba backend evaluates and every model's AD is the smallest class: a node's
        classes (nothing suppressed) are all ``evaluate_unsuppressed`` and ``remember_classes``
        need."""
        ev = self._numba
        return self.evaluator is ev and ev.kinds is not None and not np.any(ev.kinds != kinds.SMALLEST_CLASS)

    def _class_scratch(self) -> tuple[np.ndarray, ...]:
        """The scratch buffers of ``unsuppressed_batch`` (``classes_batch`` takes the first six),
        allocated once."""
        if self._scratch is None:
            n = max(self.table.n_rows, 1)
            size_t = K._table_size(n)
            self._scratch = (np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int32), np.empty(2 * n, dtype=np.int32),
                             np.ones(n, dtype=np.bool_), np.empty(size_t, dtype=np.int64),
                             np.empty(size_t, dtype=np.int32), np.empty(n, dtype=np.int64), np.empty(n),
                             np.empty(n, dtype=np.bool_))
        return self._scratch

    def td_upper_bound(self, g: np.ndarray) -> float:
        """TD of G with nothing suppressed: bounds TD of G and every node above it."""
        return self.table.td_upper_bound(g)
