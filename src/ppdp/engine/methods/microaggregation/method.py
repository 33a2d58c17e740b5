"""Microaggregation release method: DRASL's groups of at least K (docs/design/paper_notes.md §6), versioned.

First version: the records are clustered by the algorithm named in the spec (DRASL Alg. 1 by
default: the metric f_link of eq. 14 with the synonymous-linkage probability of eq. 13 from a
sensitive-value catalogue; engine/methods/microaggregation/algorithms.py lists the baselines). Each
group's QIDs are published generalized to the group: a continuous QID as the range ``[lo, hi]``
of its real records' values, a semantic nominal QID as their lowest common ancestor in the QID's
hierarchy, a nominal QID declared ``nominal`` as the sorted set of their values joined by ``|``.
Sensitive values and kept columns are released as they are.

Later versions: the source's deletes, modifications and inserts since the stored version are
applied to the stored groups by the algorithm's dynamic operations (DRASL Alg. 2-5), which add
*forged records* or rewrite their sensitive values so that a changed group does not betray the
changed person's sensitive value or a synonym of it. A forged row is published like any row: its
group's labels, its own sensitive value, the other columns of a real record of its group (its
donor), and a random surrogate id drawn like every real row's. Group membership and which rows
are forged live only in ``_ppdp`` (engine/methods/microaggregation/stored.py); the run record says how
many forged rows a version holds, not which. The shared history stage then holds back whatever
would let someone who keeps every version and knows who joined, left or changed single a person
out below K (engine/release/stages/history.py): DRASL protects the sensitive value of a changed group,
the history stage the size of the crowd a changed person hides in.

Spec: ``[method] name = "microaggregation"`` and ``params = { algorithm = "drasl", k = 8,
alpha = 0.6, beta = 0.4, seed = 0, catalogue = "diseases32" | "path/to/catalogue.csv",
kinds = { age = "continuous" } }``; K defaults to the k of the spec's k-anonymity model (one is
required: it is what the version check verifies). Kinds default from the column type (numeric:
continuous, otherwise semantic nominal over the QID's hierarchy).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np
import polars as pl

from ppdp.connectors.base import Connector
from ppdp.engine.core import catalog
from ppdp.engine.core.catalog import RunRecord
from ppdp.engine.core.spec import ReleaseSpec
from ppdp.engine.methods.base import METHODS, ReleasePlan, WarmUp, WarmUpModels
from ppdp.engine.methods.context import RunContext
from ppdp.engine.methods.microaggregation import stored
from ppdp.engine.methods.microaggregation.algorithms import ALGORITHMS, Params
from ppdp.engine.methods.microaggregation.distances import (
    QidKind,
    QidSchema,
    default_kind,
    encode,
    fit_schema,
)
from ppdp.engine.methods.microaggregation.entropy import ALPHA, BETA
from ppdp.engine.methods.microaggregation.linkage import (
    BUILTIN_CATALOGUES,
    SensitiveCatalogue,
    builtin_catalogue,
    load_catalogue,
)
from ppdp.engine.methods.microaggregation.metrics import release_metrics
from ppdp.engine.methods.results import Prepared
from ppdp.engine.privacy import PrivacyModel, build_model
from ppdp.engine.privacy.k_anonymity import KAnonymity
from ppdp.errors import DataError, SpecError
from ppdp.sql import inspect
from ppdp.sql import microaggregation as M
from ppdp.sql import queries as Q
from ppdp.sql.dialects import RebuildRows
from ppdp.sql.relations import ReleaseRelation

PARAMS = {"algorithm", "k", "alpha", "beta", "seed", "catalogue", "kinds"}
Kind = Literal["continuous", "semantic", "nominal"]  # the QidKind kinds this method publishes
SUPPORTED_KINDS: tuple[Kind, ...] = ("continuous", "semantic", "nominal")


@dataclass(frozen=True)
class Settings:
    """The method's validated ``[method] params``."""

    algorithm: str
    k: int
    alpha: float
    beta: float
    seed: int
    catalogue: str
    kinds: tuple[tuple[str, Kind], ...]


def settings(spec) -> Settings:
    """Validate ``[method] params`` against the spec (SpecError with one line)."""
    params = dict(spec.method_params)
    unknown = set(params) - PARAMS
    if unknown:
        raise SpecError(f"method 'microaggregation' does not take {sorted(unknown)}. Known: {', '.join(sorted(PARAMS))}.")
    algorithm = params.get("algorithm", "drasl")
    if algorithm not in ALGORITHMS.names():
        raise SpecError(f"method.params.algorithm {algorithm!r} is not available. Known: {', '.join(ALGORITHMS.names())}.")
    models = [build_model(m.name, m.param_dict()) for m in spec.models]
    k_models = [m.k for m in models if isinstance(m, KAnonymity)]
    if not k_models:
        raise SpecError("method 'microaggregation' publishes groups of at least K: add [[privacy.models]] "
                        f"name = \"{KAnonymity.name}\" k = K (the version check verifies it).")
    k = params.get("k", k_models[0])
    if not isinstance(k, int) or isinstance(k, bool) or k < 2 or k != k_models[0]:
        raise SpecError(f"method.params.k must be an integer >= 2 equal to the k-anonymity model's k ({k_models[0]}), got {k!r}.")
    for name in ("alpha", "beta"):
        v = params.get(name, ALPHA if name == "alpha" else BETA)
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
            raise SpecError(f"method.params.{name} must be a finite number >= 0, got {v!r}.")
    seed = params.get("seed", spec.seed)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise SpecError(f"method.params.seed must be an integer, got {seed!r}.")
    catalogue = params.get("catalogue")
    if not isinstance(catalogue, str):
        raise SpecError("method 'microaggregation' needs params.catalogue: a sensitive-value catalogue "
                        f"({', '.join(sorted(BUILTIN_CATALOGUES))}, or an ARX CSV file value;category;...;*).")
    if len(spec.sensitive) != 1:
        raise SpecError(f"method 'microaggregation' needs exactly one sensitive column (its catalogue's values), got {len(spec.sensitive)}.")
    kinds = params.get("kinds", {})
    if not isinstance(kinds, dict):
        raise SpecError("method.params.kinds must be a table, e.g. kinds = { age = \"continuous\" }.")
    checked: dict[str, Kind] = {}
    for col, kind in kinds.items():
        if col not in spec.qid_columns:
            raise SpecError(f"method.params.kinds names {col!r}, which is not a quasi-identifier.")
        if kind not in SUPPORTED_KINDS:
            raise SpecError(f"method.params.kinds.{col} = {kind!r}: the microaggregation release publishes "
                            f"{', '.join(SUPPORTED_KINDS)} QIDs. Hint: give the QID a hierarchy and kind \"semantic\", or kind \"nominal\".")
        checked[col] = cast(Kind, kind)  # one of SUPPORTED_KINDS, checked just above
    return Settings(algorithm, int(k), float(params.get("alpha", ALPHA)), float(params.get("beta", BETA)), int(seed), catalogue,
                    tuple(sorted(checked.items())))


def _catalogue(spec, name: str) -> SensitiveCatalogue:
    if name in BUILTIN_CATALOGUES:
        return builtin_catalogue(name, spec.sensitive[0])
    path = Path(name) if Path(name).is_absolute() else Path(spec.base_dir) / name
    if not path.exists():
        raise SpecError(f"Catalogue {str(path)!r} does not exist. Hint: one of {', '.join(sorted(BUILTIN_CATALOGUES))} or a CSV path.")
    return load_catalogue(path, spec.sensitive[0])


@dataclass(frozen=True, eq=False)
class MicroState:
    """What the method decided for a version: the frames to store, and what its SQL needs."""

    snapshot: stored.Snapshot
    continuous: tuple[str, ...]
    semantic: tuple[str, ...]
    nominal: tuple[str, ...]  # published as the sorted set of the group's values joined by '|'
    sensitive_type: str | None  # declared type of the sensitive column, for the forged rows
    counters: dict[str, int]


def _sensitive_type(ctx: RunContext, prep: Prepared) -> str:
    """The sensitive column's type as the database declares it (forged rows are cast to it, so
    every version keeps the column's type and deltas stay possible)."""
    spec, sa = prep.spec, prep.spec.sensitive[0]
    if spec.table is not None:
        schema = spec.schema or ctx.con.default_schema
        for name, type_ in ctx.con.relation_columns(schema, spec.table) or []:
            if name == sa:
                return type_
    dtype = ctx.con.query(inspect.empty_select(prep.source.sql())).schema[sa]
    if dtype == pl.String:
        return "VARCHAR"
    raise SpecError(f"The sensitive column {sa!r} of the source query is not text ({dtype}); forged rows need its declared "
                    "type. Hint: release from a table, or cast the column to text in the query.")


def _check_covered(spec: ReleaseSpec, name: str, values: list[Any]) -> None:
    """DataError unless every value of the sensitive column is a value of the catalogue ``name``."""
    sa = spec.sensitive[0]
    if any(v is None for v in values):
        raise DataError(f"The sensitive column {sa!r} has NULL values; every record needs a catalogue value.")
    unknown = sorted(set(values) - set(_catalogue(spec, name).values))
    if unknown:
        raise DataError(f"{len(unknown)} value(s) of {sa!r} are not in the catalogue {name!r}: "
                        f"{', '.join(map(repr, unknown[:5]))}. Hint: add them to the catalogue.")


class Microaggregation:
    name = "microaggregation"
    publishes_classes = True
    generalizes_by_levels = False
    private_tables: tuple[str, ...] = M.PRIVATE_TABLES

    def warm_ups(self, models: WarmUpModels) -> list[WarmUp]:
        """Each algorithm on the sample's catalogue column."""
        return [WarmUp(f"{self.name}, {algorithm}", models.base, sensitive="disease",
                       method_params=(("algorithm", algorithm), ("catalogue", "diseases32")))
                for algorithm in ALGORITHMS]

    def check_database(self, spec: ReleaseSpec, con: Connector) -> None:
        """Nothing in the database beyond the source (validated by the shared stage)."""

    def check_params(self, spec: ReleaseSpec) -> None:
        """The parameters and the catalogue (it must load) before anything is read or written."""
        _catalogue(spec, settings(spec).catalogue)

    def check_input(self, prep: Prepared) -> None:
        """Every sensitive value of the source is in the catalogue (from the validated histogram's
        sensitive values: read, nothing written yet)."""
        _check_covered(prep.spec, settings(prep.spec).catalogue, [v[0] for v in prep.table.sa_values])

    def plan(self, ctx: RunContext, prep: Prepared, *, progress: bool) -> ReleasePlan:
        spec = prep.spec
        s = settings(spec)
        algorithm = ALGORITHMS.get(s.algorithm)
        catalogue = _catalogue(spec, s.catalogue)
        # in key order: the clustering (seeded) must not depend on the order the database returns rows in
        frame = ctx.con.query(M.record_select(prep.source, spec.key, spec.qid_columns, list(spec.sensitive))).sort("__key")
        sa = spec.sensitive[0]
        _check_covered(spec, s.catalogue, frame[sa].to_list())  # the source may have changed since check_input
        declared = dict(s.kinds)
        kinds = []
        for q, h in zip(spec.qid_columns, prep.hierarchies, strict=True):
            kind = declared.get(q)
            kinds.append(QidKind(q, kind, hierarchy=h if kind == "semantic" else None) if kind
                         else default_kind(q, frame.schema[q], hierarchy=h))
        if any(k.kind not in SUPPORTED_KINDS for k in kinds):
            raise SpecError("method 'microaggregation' needs every QID continuous, semantic (with a hierarchy) or nominal.")
        for k in kinds:
            if k.kind == "nominal" and frame[k.column].cast(pl.String).str.contains("|", literal=True).any():
                raise DataError(f"Nominal QID {k.column!r} has a value containing '|', the separator of its published "
                                "value sets. Hint: recode those values.")
        for k in kinds:
            if frame[k.column].null_count():
                raise DataError(f"QID {k.column!r} has NULL values; microaggregation groups every record. "
                                "Hint: remove or impute missing values in the source.")
        columns = {q: (frame[q].to_list() if k.kind == "continuous" else [str(v) for v in frame[q].to_list()])
                   for q, k in zip(spec.qid_columns, kinds, strict=True)}
        records = stored.Records(frame["__key"].to_list(), columns, frame[sa].to_list())
        params = Params(s.k, s.alpha, s.beta, s.seed)
        found: stored.Changes | None = None
        restored: stored.Restored | None = None
        deferred: tuple[str, ...] = ()  # records kept in their group with the values it was grouped with
        previous = ctx.previous
        if previous is None:
            schema = fit_schema(kinds, columns)
            state = algorithm.first_release(encode(schema, columns), catalogue.codes(records.sensitive),
                                            list(range(len(records.keys))), catalogue, params)
            id_of = {key: i for i, key in enumerate(records.keys)}
            forged_rows: dict[int, str] = {}
        else:
            schema, restored = self._restore(ctx, previous, s, kinds, catalogue, algorithm)
            found = stored.changes(restored, records, kinds)
            state, id_of, deferred = stored.apply(algorithm, restored, records, found, schema, catalogue)
            forged_rows = restored.forged_rows
        snap = stored.snapshot(state, id_of, records, kinds, catalogue, forged_rows, sa, restored, deferred)
        sizes = snap.group_sizes
        quality = release_metrics(state)  # DRASL eq. 15-17 over the groups as grouped, forged records included
        counters = {"step": state.step, "forged_created": state.forged_created, "forged_rewrites": state.forged_rewrites,
                    "linkage": state.linkage, "forge_unlinked": state.forge_unlinked}
        solution = {"method": "microaggregation", "algorithm": s.algorithm, "k": s.k, "alpha": s.alpha, "beta": s.beta,
                    "seed": s.seed, "catalogue": s.catalogue, "kinds": {k.column: k.kind for k in kinds},
                    "ranges": {c: list(r) for c, r in schema.ranges.items()}, "dynamic": counters,
                    "groups": len(sizes), "certified": False}
        metrics = {"records": prep.source_rows, "released_records": snap.rows, "suppressed": 0,
                   "groups": len(sizes), "group_size": {"min": min(sizes), "max": max(sizes), "mean": float(np.mean(sizes))},
                   "total_pr": quality.total_pr, "average_il": quality.average_il,
                   "forged_records_grouped": snap.forged.height}
        if found is not None:
            metrics["updates"] = found.counts() | {"deferred": len(deferred)}
        state_out = MicroState(snap, tuple(k.column for k in kinds if k.kind == "continuous"),
                               tuple(k.column for k in kinds if k.kind == "semantic"),
                               tuple(k.column for k in kinds if k.kind == "nominal"),
                               _sensitive_type(ctx, prep) if snap.forged.height else None, counters)
        return ReleasePlan("microaggregation", solution, metrics, snap.rows, state=state_out)

    def _restore(self, ctx: RunContext, previous: RunRecord, s: Settings, kinds: list[QidKind],
                 catalogue: SensitiveCatalogue, algorithm) -> tuple[QidSchema, stored.Restored]:
        """The previous version's groups (``previous``: the run that published it), refused when
        they cannot be continued."""
        prev = previous.solution
        same = {"algorithm": s.algorithm, "k": s.k, "alpha": s.alpha, "beta": s.beta, "catalogue": s.catalogue,
                "kinds": {k.column: k.kind for k in kinds}}
        differs = [name for name, value in same.items() if prev.get(name, "drasl" if name == "algorithm" else None) != value]
        if differs:
            raise SpecError(f"Release {ctx.release} v{previous.version} was grouped with other {', '.join(differs)}; its "
                            "groups cannot be continued. Hint: publish under a new output name, or restore the earlier parameters.")
        if not algorithm.dynamic:
            raise SpecError(f"Algorithm {s.algorithm!r} re-clusters the whole table on every change, which would move nearly "
                            f"every record to a new group of {ctx.release}. Hint: use a dynamic algorithm "
                            f"({', '.join(n for n in ALGORITHMS.names() if ALGORITHMS.get(n).dynamic)}) or a new output name.")
        ranges = {c: (float(r[0]), float(r[1])) for c, r in prev.get("ranges", {}).items()}
        schema = QidSchema(tuple(kinds), ranges, {})
        frames = {t: ctx.con.query(M.state_select(t, ctx.release, previous.published_version, ctx.dialect))
                  for t in ("groups", "values", "forged")}
        restored = stored.restore(frames["groups"], frames["values"], frames["forged"], ctx.spec.sensitive[0], schema,
                                  catalogue, k=s.k, alpha=s.alpha, beta=s.beta, seed=s.seed, counters=prev.get("dynamic", {}))
        return schema, restored

    def write_private_state(self, ctx: RunContext, prep: Prepared, plan: ReleasePlan) -> None:
        """Group membership, labels, grouped values, forged records, and the semantic QIDs'
        hierarchies (for the check)."""
        con = ctx.con
        st: MicroState = plan.state
        for stmt in M.ddl(ctx.dialect):
            con.execute(stmt)
        snap = st.snapshot
        for table, frame in (("micro_groups", snap.members), ("micro_labels", snap.labels), ("micro_values", snap.values),
                             ("micro_forged", snap.forged)):
            if frame.height:
                catalog.append_version_rows(con, table, ctx.release, ctx.version, frame, ctx.run_id)
        con.execute(M.drop_older_values(ctx.release, ctx.version, ctx.dialect))
        catalog.store_hierarchies(con, ctx.release, ctx.version, [h for h in prep.hierarchies if h.attribute in st.semantic], ctx.run_id)

    def candidate_select(self, ctx: RunContext, prep: Prepared, plan: ReleasePlan) -> str:
        spec = prep.spec
        st: MicroState = plan.state
        full = Q.Source(spec.schema, spec.table, spec.query, ctx.dialect)
        forged = (spec.sensitive[0], st.sensitive_type) if st.sensitive_type else None
        return M.candidate_select(full, release=ctx.release, version=ctx.version, columns=prep.released_columns,
                                  qids=spec.qid_columns, key=spec.key, forged=forged)

    def carries(self, plan: ReleasePlan, previous: RunRecord) -> bool:
        # A previous row may stand in the new version: the history stage then checks the classes
        # its labels form with the rest, so a held-back row never makes a class smaller than K.
        return True

    def covers(self, model: PrivacyModel) -> bool:
        """Never by itself: every model is verified by its own SQL check (publishes classes)."""
        return False

    def extra_checks(self, ctx: RunContext, prep: Prepared, plan: ReleasePlan, table: str) -> list[dict[str, Any]]:
        """Every generalized value covers its record's source value, and every forged row carries
        its group's labels (independent SQL over the written version)."""
        spec = prep.spec
        st: MicroState = plan.state
        full = Q.Source(spec.schema, spec.table, spec.query, ctx.dialect)
        previous = (ctx.published.version_table(ctx.previous.version)
                    if ctx.previous is not None else None)
        sql = M.uncovered_query(table, full, release=ctx.release, version=ctx.version, key=spec.key,
                                continuous=list(st.continuous), semantic=list(st.semantic), nominal=list(st.nominal),
                                previous=previous)
        n = int(ctx.con.query(sql)["uncovered"][0])
        checks = [{"check": "generalized values cover the source values", "passed": n == 0, "uncovered": n,
                   "detail": f"{n} published value(s) do not cover their record's source value", "query": sql}]
        fsql = M.forged_query(table, release=ctx.release, version=ctx.version, qids=spec.qid_columns, previous=previous,
                              d=ctx.dialect)
        row = ctx.con.query(fsql).row(0, named=True)
        bad = int(row["mislabeled"])
        checks.append({"check": "forged rows carry their group's labels", "passed": bad == 0, "forged_rows": int(row["forged"]),
                       "mislabeled": bad, "detail": f"{bad} forged row(s) differ from their group's labels", "query": fsql})
        return checks

    def rebuild_rows(self, con: Connector, run: RunRecord, spec: ReleaseSpec) -> RebuildRows:
        """The version's groups, labels and forged records: the candidate SELECT ppdp ran, over the
        state of the rows it published (a record withheld for privacy across versions, real or
        forged, is grouped but not published)."""
        d, version = con.dialect, int(run.version or 0)
        published = ReleaseRelation(spec.output_schema, spec.output_name, d)
        version_table = published.version_table(version)
        tables = tuple(M.rebuild_table(t, tuple(con.query(M.published_state_select(t, run.release, version, version_table, d)).rows()))
                       for t in M.REBUILD_TABLES)
        forged = None
        if any(t.rows for t in tables if t.name == "micro_forged"):  # their sensitive values are cast to the column's type
            sa = spec.sensitive[0]
            forged = (sa, dict(con.relation_columns(spec.output_schema, published.version_name(version)) or [])[sa], d.name)
        return RebuildRows(M.MicroRows(tuple(spec.qid_columns), forged), tables)


METHODS.register(Microaggregation.name)(Microaggregation())
