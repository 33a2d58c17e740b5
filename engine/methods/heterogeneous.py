"""Heterogeneous k-anonymity release method (PAPER_NOTES §7): every record its own generalization.

The solution is a k-regular bipartite graph between original tuples and anonymized tuples
(engine/hetero/graph.py; the self edge (i, i') is always in it, Doka et al.'s first matching):
anonymized tuple i' carries original i's sensitive and kept columns and generalizes the k
originals matched to it — a numeric QID as the columns ``<q>_min`` and ``<q>_max``, a categorical
QID as the sorted set of its values joined by ``|`` (sql/hetero.py). The graph starts from
k-member, l-greedy or the Hungarian heuristic and is improved by the iterated local search of
Alg. 1-2 (engine/hetero/ils.py) for GCP or SIL. The edges live only in ``_ppdp``.

Equivalence classes do not exist here, so the class-based model checks do not apply
(``publishes_classes = False``); the verification is the issue's: from the published table and
the source alone, every published tuple covers at least k source tuples and every source tuple
is covered by at least k published tuples; from the private edges, the graph is exactly
k-regular with every self edge, and every edge is consistent.

Spec: ``[method] name = "heterogeneous"``, ``params = { initial = "k-member" | "l-greedy" |
"hungarian", objective = "gcp" | "sil", seconds = 30, seed = 0 }``; k is the k of the spec's
k-anonymity model (the only model this method supports); the search budget is
``optimizer.budget`` move evaluations. Not yet: later versions (the graph's local repair).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from engine import catalog
from engine.catalog import RunRecord
from engine.errors import DataError, SpecError
from engine.hetero import initial as I
from engine.hetero.ils import iterated_local_search
from engine.hetero.metrics import QidTable, gcp, sil
from engine.methods import METHODS, ReleasePlan
from engine.stages.context import RunContext
from engine.stages.validate import Prepared
from sql import hetero as HS
from sql import micro as M
from sql import queries as Q

PARAMS = {"initial", "objective", "seconds", "seed"}
INITIAL = {"k-member": I.k_member, "l-greedy": I.l_greedy, "hungarian": I.hungarian}


@dataclass(frozen=True)
class Settings:
    k: int
    initial: str
    objective: str
    seconds: float
    seed: int


def settings(spec) -> Settings:
    params = dict(spec.method_params)
    unknown = set(params) - PARAMS
    if unknown:
        raise SpecError(f"method 'heterogeneous' does not take {sorted(unknown)}. Known: {', '.join(sorted(PARAMS))}.")
    if [m.name for m in spec.models] != ["k-anonymity"]:
        raise SpecError("method 'heterogeneous' publishes heterogeneous k-anonymity: give exactly one model, "
                        "[[privacy.models]] name = \"k-anonymity\" k = K.")
    k = int(spec.models[0].param_dict()["k"])
    if k < 2:
        raise SpecError(f"method 'heterogeneous' needs k >= 2, got {k}.")
    initial = params.get("initial", "k-member")
    if initial not in INITIAL:
        raise SpecError(f"method.params.initial {initial!r} is not available. Known: {', '.join(INITIAL)}.")
    objective = params.get("objective", "gcp")
    if objective not in ("gcp", "sil"):
        raise SpecError(f"method.params.objective must be \"gcp\" or \"sil\", got {objective!r}.")
    seconds = params.get("seconds", 30)
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not math.isfinite(seconds) or seconds <= 0:
        raise SpecError(f"method.params.seconds must be a positive number, got {seconds!r}.")
    seed = params.get("seed", spec.seed)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise SpecError(f"method.params.seed must be an integer, got {seed!r}.")
    return Settings(k, initial, objective, float(seconds), seed)


def _is_numeric(dtype: pl.DataType) -> bool:
    return dtype.is_numeric()


class Heterogeneous:
    name = "heterogeneous"
    publishes_classes = False

    def check_params(self, spec) -> None:
        settings(spec)

    def plan(self, ctx: RunContext, prep: Prepared, *, progress: bool) -> ReleasePlan:
        spec = prep.spec
        if ctx.previous is not None:
            raise SpecError(f"Release {ctx.release} already has v{ctx.previous.version}: later versions of a heterogeneous "
                            "release (the graph's local repair) are not available yet. Hint: publish under a new output name.")
        s = settings(spec)
        records = ctx.con.query(M.record_select(prep.source, spec.key, spec.qid_columns, list(spec.sensitive))).sort("__key")
        n = records.height
        if n < s.k:
            raise DataError(f"The source has {n} rows, fewer than k = {s.k}.")
        numeric = [q for q in spec.qid_columns if _is_numeric(records.schema[q])]
        categorical = [q for q in spec.qid_columns if q not in numeric]
        for q in spec.qid_columns:
            if records[q].null_count():
                raise DataError(f"Quasi-identifier {q!r} has NULL values; the heterogeneous release needs every value.")
        domains = {q: sorted({str(v) for v in records[q].to_list()}) for q in categorical}
        for q, values in domains.items():
            bad = [v for v in values if HS.SET_SEPARATOR in v]
            if bad:
                raise DataError(f"Values of {q!r} contain '{HS.SET_SEPARATOR}', the set separator of the published column: "
                                f"{bad[:3]}. Hint: clean them or drop the column.")
        num = records.select(numeric).to_numpy().astype(np.float64) if numeric else np.zeros((n, 0))
        cat = np.stack([np.array([domains[q].index(str(v)) for v in records[q].to_list()]) for q in categorical], axis=1) \
            if categorical else np.zeros((n, 0), dtype=np.int64)
        table = QidTable(num, cat, tuple(len(domains[q]) for q in categorical))
        start = INITIAL[s.initial](table, s.k) if s.initial != "k-member" else I.k_member(table, s.k, seed=s.seed)
        result = iterated_local_search(table, start, objective=s.objective, seconds=s.seconds,
                                       max_evaluations=spec.budget, seed=s.seed)
        cover = result.graph.cover
        keys = records["__key"].to_list()
        edges = [(keys[int(o)], keys[t]) for t in range(n) for o in cover[t]]
        values = []
        for t in range(n):
            members = cover[t]
            for j, q in enumerate(numeric):
                col = num[members, j]
                values.append((keys[t], q, float(col.min()), float(col.max()), None))
            for j, q in enumerate(categorical):
                labels = sorted({domains[q][int(c)] for c in cat[members, j]})
                values.append((keys[t], q, None, None, HS.SET_SEPARATOR.join(labels)))
        solution = {"method": "heterogeneous", "k": s.k, "initial": s.initial, "objective": s.objective,
                    "evaluations": result.evaluations, "seconds": round(result.seconds, 3), "certified": False,
                    "numeric_qids": numeric, "categorical_qids": categorical}
        metrics = {"records": prep.source_rows, "released_records": n, "suppressed": 0,
                   "gcp": float(gcp(table, result.graph)), "sil": float(sil(table, result.graph)),
                   f"initial_{s.objective}": float(result.initial_objective), s.objective: float(result.objective)}
        state = (pl.DataFrame(edges, schema={"original": pl.String, "anonymized": pl.String}, orient="row"),
                 pl.DataFrame(values, schema={"key": pl.String, "attribute": pl.String, "lo": pl.Float64, "hi": pl.Float64,
                                              "label": pl.String}, orient="row"),
                 tuple(numeric), tuple(categorical))
        return ReleasePlan("heterogeneous", solution, metrics, n, state=state)

    def write_private_state(self, ctx: RunContext, prep: Prepared, plan: ReleasePlan) -> None:
        edges, values, _, _ = plan.state
        for stmt in HS.ddl(ctx.dialect):
            ctx.con.execute(stmt)
        for table, frame in (("hetero_edges", edges), ("hetero_values", values)):
            catalog.append_version_rows(ctx.con, table, ctx.release, ctx.version, frame, ctx.run_id)

    def candidate_select(self, ctx: RunContext, prep: Prepared, plan: ReleasePlan) -> str:
        spec = prep.spec
        _, _, numeric, categorical = plan.state
        taken = set(prep.columns)
        clash = [f"{q}_{e}" for q in numeric for e in ("min", "max") if f"{q}_{e}" in taken]
        if clash:
            raise SpecError(f"The published bound columns {clash} would clash with source columns. Hint: rename or drop those.")
        full = Q.Source(spec.schema, spec.table, spec.query, ctx.dialect)
        return HS.candidate_select(full, release=ctx.release, version=ctx.version, columns=prep.released_columns,
                                   numeric=list(numeric), categorical=list(categorical), key=spec.key)

    def carries(self, plan: ReleasePlan, previous: RunRecord) -> bool:
        return False  # no later versions yet (see the module docstring)

    def extra_checks(self, ctx: RunContext, prep: Prepared, plan: ReleasePlan, table: str) -> list[dict[str, Any]]:
        """The consistency graph from the published table and the source; the private graph's
        degrees and self edges; every private edge consistent with what was published."""
        spec, d = prep.spec, ctx.dialect
        _, _, numeric, categorical = plan.state
        k = int(plan.solution["k"])
        full = Q.Source(spec.schema, spec.table, spec.query, d)
        cover_sql = HS.coverage_degrees(table, full, list(numeric), list(categorical))
        cov = ctx.con.query(cover_sql).row(0, named=True)
        graph_sql = HS.graph_degrees(ctx.release, ctx.version, d)
        g = ctx.con.query(graph_sql).row(0, named=True)
        edge_sql = HS.inconsistent_edges(table, full, release=ctx.release, version=ctx.version, key=spec.key,
                                         numeric=list(numeric), categorical=list(categorical))
        bad = int(ctx.con.query(edge_sql)["n"][0])
        n = plan.released_rows
        regular = (g["min_anon"] == g["max_anon"] == k and g["min_orig"] == g["max_orig"] == k
                   and g["self_edges"] == n and g["distinct_edges"] == g["edges"] == n * k)
        return [
            {"check": "every published tuple covers and every source tuple is covered by at least k (consistency graph)",
             "passed": (cov["min_published_covers"] or 0) >= k and (cov["min_source_covered"] or 0) >= k
             and cov["published_tuples"] == n and cov["source_tuples"] == n,
             "detail": f"fewest covered {cov['min_published_covers']}, fewest covering {cov['min_source_covered']} (k = {k})",
             "query": cover_sql} | {key: cov[key] for key in cov},
            {"check": "the private graph is exactly k-regular with every self edge", "passed": bool(regular),
             "detail": f"degrees {g['min_anon']}-{g['max_anon']} / {g['min_orig']}-{g['max_orig']}, self edges {g['self_edges']} of {n}",
             "query": graph_sql},
            {"check": "every edge of the graph is consistent with the published tuple", "passed": bad == 0,
             "detail": f"{bad} edge(s) not covered", "query": edge_sql},
        ]


METHODS.register("heterogeneous")(Heterogeneous())
