"""DuckDB evaluator: a whole batch of (G, S) as one GROUP BY query (same contract as numba).

The encoded histogram, one level lookup table per QID and the source SA distribution Q are
loaded once into a private in-memory DuckDB database. Each batch then ships two small frames:
the population (one row per individual: its id and the level of every QID) and the suppressed
part of S in compressed form (``(individual, histogram row, retained)`` only where retained
differs from the row's count; every other row keeps all its records). One query

    population x histogram -> generalized codes and weights (one join per QID lookup table)
      -> (individual, class, SA value) pairs -> classes -> one row per individual

gives TD, the suppressed count and the AD of every model, with the conventions of the kernels
(engine/kernels/classes.py): k and l AD = inf and t AD = 0 for an empty release. The SQL
is built in sql/evaluator.py (which documents the tables and frames it reads); this module
only loads the data and runs it.
"""

from __future__ import annotations

import duckdb
import numpy as np
import polars as pl

from ppdp.engine.core.encoding import EncodedTable
from ppdp.engine.methods.generalization.evaluators.base import EVALUATORS, Evaluation, finish
from ppdp.engine.privacy import PrivacyModel
from ppdp.errors import SpecError
from ppdp.sql import evaluator as esql


@EVALUATORS.register("duckdb")
class DuckDBEvaluator:
    """Evaluate batches in DuckDB; ``threads`` caps DuckDB's worker threads (default: all).

    Each instance owns one in-memory connection: use it from one thread at a time.
    """

    name = "duckdb"

    def __init__(self, table: EncodedTable, models: list[PrivacyModel], *, threads: int | None = None) -> None:
        terms = [m.evaluator_term() for m in models]
        unknown = [m.name for m, term in zip(models, terms, strict=True) if term is None]
        if unknown:
            raise SpecError(f"The duckdb evaluator has no SQL for model(s) {unknown}. Hint: use evaluator backend 'numba'.")
        self.terms = [term for term in terms if term is not None]
        self.table = table
        self.models = list(models)
        self.needs_pairs = any(m.requirements.sensitive_counts for m in self.models)
        self.con = duckdb.connect()
        for statement in esql.settings(threads):
            self.con.execute(statement)
        nq = table.n_qids
        n_leaves = [len(h.rows) for h in table.hierarchies]
        # A class is identified by one BIGINT: the mixed-radix number of its generalized codes
        # (code of QID q scaled by the leaf counts of the QIDs after it), summed over the
        # joins. When that could overflow, the class is the tuple of generalized codes.
        radix = 1
        for n in n_leaves:
            radix *= n
        self.single_key = radix <= 2**62
        self._n_leaves = n_leaves

        hist = {"row": np.arange(table.n_rows, dtype=np.int32)}
        for q in range(nq):
            hist[f"c{q}"] = table.codes[:, q].astype(np.int32)
        hist["sa"] = table.sa.astype(np.int32)
        hist["n"] = table.counts.astype(np.int64)
        self._load("hist", pl.DataFrame(hist))

        gen, weight, _ = table.lookup
        for q, h in enumerate(table.hierarchies):
            n = n_leaves[q]
            stride = 1
            for m in n_leaves[q + 1 :]:
                stride *= m
            levels = np.repeat(np.arange(h.height + 1, dtype=np.int32), n)
            leaves = np.tile(np.arange(n, dtype=np.int32), h.height + 1)
            codes = gen[q, levels, leaves].astype(np.int64)
            lookup = {
                # Join key level * n_leaves + leaf: one integer column joins faster than two.
                "key": levels * n + leaves, "leaf": leaves, "level": levels, "gen": codes.astype(np.int32),
                "w": weight[q, levels, leaves],  # 1/|v_g| (docs/design/paper_notes.md §1)
            }
            if self.single_key:
                lookup["scaled"] = codes * stride
            self._load(f"lk{q}", pl.DataFrame(lookup))

        sa_q = np.asarray(table.sa_distribution, dtype=np.float64)
        self._load("qtab", pl.DataFrame({"sa": np.arange(sa_q.shape[0], dtype=np.int32), "q": sa_q}))
        self._load("consts", pl.DataFrame({
            "qq": [float(np.dot(sa_q, sa_q))],
            "n_pos": [int((sa_q > 0).sum())],
            "n_records": [int(table.n_records)],
        }))
        self.needs_population = any(m.requirements.population for m in self.models)
        if self.needs_population:
            pop = table.population
            if pop is None:
                raise ValueError("a model reads population counts but the table has no population")
            live = pop.combo_persons > 0
            phist = {f"c{q}": pop.combo_codes[live, q].astype(np.int32) for q in range(nq)}
            phist["persons"] = pop.combo_persons[live].astype(np.int64)
            self._load("phist", pl.DataFrame(phist))
        self._sql = esql.batch_query(nq, self.single_key, self.terms, self.needs_pairs, self.needs_population)

    def _load(self, name: str, frame: pl.DataFrame) -> None:
        self.con.register(esql.FRAME, frame)
        self.con.execute(esql.create_from_frame(name))
        self.con.unregister(esql.FRAME)

    def _register_batch(self, G: np.ndarray, retained: np.ndarray) -> None:
        P = G.shape[0]
        pop = {"ind": np.arange(P, dtype=np.int32)}
        for q in range(self.table.n_qids):
            pop[f"o{q}"] = (G[:, q] * self._n_leaves[q]).astype(np.int32)  # level offset in lk{q}
        ind, row = np.nonzero(retained != self.table.counts[None, :])
        ret = pl.DataFrame({
            "ind": ind.astype(np.int32), "row": row.astype(np.int32),
            "ret": retained[ind, row].astype(np.int64),
        })
        self.con.register("pop", pl.DataFrame(pop))
        self.con.register("ret", ret)

    def _unregister_batch(self) -> None:
        self.con.unregister("pop")
        self.con.unregister("ret")

    # -- contract ----------------------------------------------------------------------------
    def evaluate(self, G: np.ndarray, retained: np.ndarray) -> Evaluation:
        G = np.atleast_2d(np.asarray(G, dtype=np.int64))
        retained = np.atleast_2d(np.asarray(retained, dtype=np.int64))
        self._register_batch(G, retained)
        try:
            out = self.con.execute(self._sql).fetchnumpy()
        finally:
            self._unregister_batch()
        ad = np.zeros((G.shape[0], len(self.models)))
        for j in range(len(self.models)):
            ad[:, j] = np.asarray(out[f"ad{j}"], dtype=np.float64)
        return finish(self.models, ad, np.asarray(out["td"], dtype=np.float64), np.asarray(out["suppressed"]))

    def record_class_sizes(self, g: np.ndarray, retained: np.ndarray) -> np.ndarray:
        t = self.table
        ret = np.asarray(retained, dtype=np.int64)
        self._register_batch(np.asarray(g, dtype=np.int64).reshape(1, -1), ret.reshape(1, -1))
        try:
            out = self.con.execute(esql.class_sizes_query(t.n_qids, self.single_key)).fetchnumpy()
        finally:
            self._unregister_batch()
        per_row = np.zeros(t.n_rows, dtype=np.int64)
        per_row[np.asarray(out["row"], dtype=np.int64)] = np.asarray(out["size"], dtype=np.int64)
        # Records of row h: the first retained[h] are kept, the rest suppressed (size 0).
        rank = np.arange(t.n_records) - t.offsets[t.row_of_record]
        return np.where(rank < ret[t.row_of_record], per_row[t.row_of_record], 0)
