"""In-memory evaluator: Numba kernels over the encoded histogram.

When every model names a computation of the fused kernels (``kernel_kind``, evaluator/kinds.py)
a batch is evaluated by one fused call (engine/kernels/batch.py); any other model goes
through the per-solution kernels of _kernels.py and its own ``ad``. Both give the same numbers.
"""

from __future__ import annotations

import numpy as np

from ppdp.engine.core.encoding import EncodedTable
from ppdp.engine.kernels import batch as B
from ppdp.engine.kernels import classes as K
from ppdp.engine.kernels.population import CombinationClasses, classes_with_population
from ppdp.engine.methods.generalization.evaluators.base import EVALUATORS, Evaluation, finish
from ppdp.engine.privacy import ClassStats, PrivacyModel

_NO_ROW_SIZE = np.empty((0, 0), dtype=np.int64)


@EVALUATORS.register("numba")
class NumbaEvaluator:
    name = "numba"

    def __init__(self, table: EncodedTable, models: list[PrivacyModel]) -> None:
        self.table = table
        self.models = list(models)
        self.gen, self.weight, self.n_gen = table.lookup
        self.needs_pairs = any(m.requirements.sensitive_counts for m in self.models)
        self.q = table.sa_distribution
        self.needs_population = any(m.requirements.population for m in self.models)
        if self.needs_population and table.population is None:
            raise ValueError("a model reads population counts but the table has no population")
        self.combinations = (CombinationClasses(table.population.combo_codes, self.gen, self.n_gen)
                             if self.needs_population and table.population is not None else None)
        # Fused batch path when every model has a kind code of the fused kernels (else None).
        kinds = [m.kernel_kind for m in self.models]
        self.kinds = np.array(kinds, dtype=np.int64) if None not in kinds else None
        # Their parameter rows (PrivacyModel.kernel_params), padded to one width.
        rows = [np.asarray(m.kernel_params(), dtype=np.float64) for m in self.models] if self.kinds is not None else []
        self.kind_params = np.zeros((len(rows), max((len(r) for r in rows), default=0)))
        for j, r in enumerate(rows):
            self.kind_params[j, : len(r)] = r
        self._prepared: tuple[np.ndarray, np.ndarray, bool, np.ndarray] | None = None

    @property
    def prepared(self) -> tuple[np.ndarray, np.ndarray, bool, np.ndarray]:
        """``B.prepare_rows`` of the table, made on first use (the slot table in it is left all
        -1 by every call: calls hold the GIL, so one at a time)."""
        if self._prepared is None:
            self._prepared = B.prepare_rows(self.table.codes, self.gen)
        return self._prepared

    def fused_args(self) -> tuple | None:
        """The arguments of ``B.evaluate_prepared_into`` after (G, retained), as ``evaluate``
        passes them, for a kernel that evaluates nodes itself; None where ``evaluate`` does not
        run that kernel (a model without a kind code)."""
        if self.kinds is None:
            return None
        t = self.table
        cols, n_leaves, rows_sorted, slot = self.prepared
        return (t.codes, cols, n_leaves, rows_sorted, slot, self.gen, self.n_gen, self.weight, t.sa, t.n_sa, self.q,
                self.kinds, self.kind_params, t.n_records, _NO_ROW_SIZE)

    def class_stats(self, g: np.ndarray, retained: np.ndarray) -> tuple[np.ndarray, ClassStats, np.ndarray]:
        """Class id per histogram row, the class statistics, and the pair id per row."""
        t = self.table
        g = np.ascontiguousarray(g, dtype=np.int64)
        pop = t.population if self.needs_population else None
        if pop is not None:  # the rows' classes come with the population's (one classification)
            cls, m, per_class, unmatched = classes_with_population(g, retained, pop.row_combo, pop.combo_codes,
                                                                   pop.combo_persons, self.gen, self.n_gen,
                                                                   self.combinations)
        else:
            cls, m = K.classify(g, t.codes, self.gen, self.n_gen, retained > 0)
        size = K.class_sizes(cls, m, retained)
        if self.needs_pairs:
            pid, pc, ps, pn = K.class_sa_pairs(cls, t.sa, t.n_sa, retained)
        else:
            pid = pc = ps = np.zeros(0, dtype=np.int32)
            pn = np.zeros(0, dtype=np.int64)
        if pop is None:
            return cls, ClassStats(size, pc, ps, pn, self.q), pid
        return cls, ClassStats(size, pc, ps, pn, self.q, per_class, unmatched), pid

    def evaluate(self, G: np.ndarray, retained: np.ndarray) -> Evaluation:
        # Called once or twice per generation of an optimizer, often with a few rows: the
        # conversions below are no-ops (and cheap) for the int64 2-D arrays it passes.
        if G.ndim != 2:
            G = np.atleast_2d(G)
        if retained.ndim != 2:
            retained = np.atleast_2d(retained)
        if self.kinds is not None:
            t = self.table
            cols, n_leaves, rows_sorted, slot = self.prepared
            ad, td, sup = B.evaluate_prepared_into(np.ascontiguousarray(G, dtype=np.int64),
                                                   np.ascontiguousarray(retained, dtype=np.int64), t.codes, cols,
                                                   n_leaves, rows_sorted, slot, self.gen, self.n_gen, self.weight,
                                                   t.sa, t.n_sa, self.q, self.kinds, self.kind_params, t.n_records,
                                                   _NO_ROW_SIZE)
            return finish(self.models, ad, td, sup)
        return self.evaluate_per_solution(G, retained)

    def evaluate_per_solution(self, G: np.ndarray, retained: np.ndarray) -> Evaluation:
        """The general path: the kernels of _kernels.py and each model's ``ad``, one solution at a time."""
        G = np.atleast_2d(G)
        retained = np.atleast_2d(retained)
        P = G.shape[0]
        ad = np.zeros((P, len(self.models)))
        td = np.zeros(P)
        sup = np.zeros(P, dtype=np.int64)
        for p in range(P):
            ret = np.ascontiguousarray(retained[p], dtype=np.int64)
            _, stats, _ = self.class_stats(G[p], ret)
            for j, m in enumerate(self.models):
                ad[p, j] = m.ad(stats)
            td[p] = K.transparency(np.ascontiguousarray(G[p], dtype=np.int64), self.table.codes, ret, self.weight)
            sup[p] = self.table.n_records - int(ret.sum())
        return finish(self.models, ad, td, sup)

    def record_class_sizes(self, g: np.ndarray, retained: np.ndarray) -> np.ndarray:
        t = self.table
        return B.record_class_sizes(np.ascontiguousarray(g, dtype=np.int64),
                                    np.ascontiguousarray(retained, dtype=np.int64), t.codes, self.gen, self.n_gen,
                                    t.offsets)

    def record_class_sizes_per_solution(self, g: np.ndarray, retained: np.ndarray) -> np.ndarray:
        """``record_class_sizes`` through ``class_stats`` (the general path, kept for the tests)."""
        ret = np.ascontiguousarray(retained, dtype=np.int64)
        cls, stats, _ = self.class_stats(g, ret)
        # cls = -1 (nothing retained) picks the appended 0; there may be no class at all.
        per_row = np.append(stats.size, 0)[cls]
        # Records of row h: the first retained[h] are kept, the rest suppressed (size 0).
        t = self.table
        rank = np.arange(t.n_records) - t.offsets[t.row_of_record]
        return np.where(rank < ret[t.row_of_record], per_row[t.row_of_record], 0)
