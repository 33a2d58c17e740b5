"""A release run, end to end: validate, encode, optimize, materialize, verify, switch.

Everything that can be wrong with the input is checked before the first write, so bad input
leaves the database exactly as it was. The writes happen in one transaction: hierarchies,
suppressed keys, the version table, an independent SQL verification of the privacy models on
that table, and the view switch. If verification fails the transaction is rolled back (nothing
visible changes) and the run is recorded as failed in a second, small transaction.
"""

from __future__ import annotations

import datetime as dt
import difflib
import hashlib
import math
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from connectors import connect
from connectors.base import Connector
from engine import catalog
from engine import hierarchy as hier
from engine.catalog import RunRecord
from engine.encoding import COUNT_COLUMN, EncodedTable, encode_histogram
from engine.errors import ConnectorError, DataError, PpdpError, SpecError, VerificationError
from engine.metrics import METRICS, class_size_summary, workload_error
from engine.models import PrivacyModel, build_model
from engine.optimizers import OptimizerResult, Tracker, run_optimizer
from engine.problem import Problem
from engine.progress import ProgressBar
from engine.spec import ReleaseSpec
from sql import queries as Q
from sql.quoting import quote_ident, quote_table

VERIFY_TOLERANCE = 1e-9


@dataclass(frozen=True, eq=False)
class Prepared:
    """Everything read from the database and validated, before any write."""

    spec: ReleaseSpec
    source: Q.Source
    columns: list[str]  # source columns in order
    released_columns: list[str]  # what the release keeps, in source order
    hierarchies: list[hier.Hierarchy]
    table: EncodedTable
    models: list[PrivacyModel]
    source_rows: int


@dataclass(frozen=True, eq=False)
class ReleaseOutcome:
    run: RunRecord
    result: OptimizerResult | None
    table: str | None  # schema-qualified, quoted
    view: str | None
    statements: dict[str, str] | None = None  # dry runs: the SQL that would run


def database_url(spec: ReleaseSpec, override: str | None = None) -> str:
    """The spec's database URL with relative DuckDB paths resolved against the spec's folder."""
    url = override or spec.database
    scheme, sep, rest = url.partition("://")
    if scheme == "duckdb" or not sep:
        path = rest if sep else url
        if path not in (":memory:", "/:memory:") and not Path(path).is_absolute():
            return f"duckdb://{(Path(spec.base_dir) / path).resolve()}"
    return url


def _closest(name: str, options: list[str]) -> str:
    close = difflib.get_close_matches(name, options, n=1)
    return f" Did you mean {close[0]!r}?" if close else ""


def prepare(spec: ReleaseSpec, con: Connector) -> Prepared:
    """Read and validate the source, hierarchies and models. Writes nothing."""
    source = Q.Source(spec.schema, spec.table, spec.query, con.dialect)
    if spec.table is not None:
        schema = spec.schema or getattr(con, "default_schema", None)
        cols = con.relation_columns(schema, spec.table)
        if cols is None:
            raise DataError(f"Source table {source.describe()} does not exist in {con.url}. Hint: check source.schema and source.table.")
        columns = [c for c, _ in cols]
    else:
        columns = con.query(f"SELECT * FROM {source.sql()} LIMIT 0").columns
    for role, names in (("key", [spec.key]), ("identifier", spec.identifiers), ("quasi-identifier", spec.qid_columns),
                        ("sensitive attribute", spec.sensitive), ("dropped column", spec.drop)):
        for name in names:
            if name not in columns:
                raise DataError(f"The {role} column {name!r} is not in {source.describe()}.{_closest(name, columns)}")

    check = con.query(Q.key_check_query(source, spec.key)).row(0, named=True)
    n_rows = int(check["n"])
    if n_rows == 0:
        raise DataError(f"Source {source.describe()} is empty: there is nothing to release.")
    if check["null_keys"]:
        raise DataError(f"Key column {spec.key!r} has {check['null_keys']} NULL value(s). Hint: the key must identify every row.")
    if check["distinct_keys"] != n_rows:
        raise DataError(f"Key column {spec.key!r} is not unique ({check['distinct_keys']} distinct values in {n_rows} rows). Hint: choose a primary key.")

    hierarchies = [load_hierarchy(spec, q, source, con) for q in spec.quasi_identifiers]
    histogram = con.query(Q.histogram_query(source, spec.qid_columns, list(spec.sensitive)))
    table = encode_histogram(histogram, spec.qid_columns, list(spec.sensitive), hierarchies, null_policy=spec.null_policy)

    models = [build_model(m.name, m.param_dict()) for m in spec.models]
    if any(m.needs_pairs for m in models) and not spec.sensitive:
        raise SpecError("t-closeness and l-diversity need sensitive attributes. Hint: [sensitive] columns = [\"...\"].")
    for m in models:
        k = getattr(m, "k", None)
        if k is not None and k > table.n_records:
            raise DataError(f"k = {k} is larger than the table ({table.n_records} rows): no release can be {k}-anonymous.")
    dropped = {spec.key, *spec.identifiers, *spec.drop}
    released = [c for c in columns if c not in dropped]
    return Prepared(spec, source, columns, released, hierarchies, table, models, n_rows)


def load_hierarchy(spec: ReleaseSpec, qid, source: Q.Source, con: Connector) -> hier.Hierarchy:
    h = qid.hierarchy
    if h.type == "arx":
        path = Path(h.file)
        if not path.is_absolute():
            path = Path(spec.base_dir) / path
        return hier.read_arx_csv(path, qid.column)
    values = con.query(Q.distinct_values_query(source, qid.column))["v"].to_list()
    if not values:
        raise DataError(f"Column {qid.column!r} has only NULL values; a hierarchy cannot be generated.")
    if h.type == "intervals":
        return hier.intervals(qid.column, values, widths=h.widths, levels=h.levels or 4)
    if h.type == "masking":
        return hier.masking(qid.column, values, levels=h.levels)
    return hier.GENERATORS[h.type](qid.column, values)


def optimize(prep: Prepared, *, progress: bool = True) -> tuple[Problem, OptimizerResult]:
    spec = prep.spec
    problem = Problem(prep.table, prep.models, backend=spec.evaluator)
    bar = ProgressBar(spec.budget, label=spec.optimizer) if progress else None
    try:
        result = run_optimizer(spec.optimizer, problem, budget=spec.budget, seed=spec.seed,
                               params=dict(spec.optimizer_params), progress=bar)
    finally:
        if bar:
            bar.close()
    return problem, result


def compute_metrics(prep: Prepared, result: OptimizerResult) -> dict[str, Any]:
    spec = prep.spec
    out: dict[str, Any] = {}
    for name in spec.report:
        if name == "workload_error":
            out[name] = workload_error(prep.table, result.g, result.retained, queries=spec.workload_queries, seed=spec.workload_seed)
        else:
            out[name] = METRICS.get(name)(prep.table, result.g, result.retained)
    out["max_td"] = float(prep.table.n_records + prep.table.excluded_null_rows) * prep.table.n_qids
    out["records"] = prep.source_rows
    out["released_records"] = int(np.sum(result.retained))
    out["class_sizes"] = class_size_summary(prep.table, result.g, result.retained)
    for m, ad in zip(prep.models, result.ad, strict=True):
        out[f"ad[{m.name}]"] = None if math.isinf(ad) else float(ad)
    return out


def solution_record(prep: Prepared, result: OptimizerResult) -> dict[str, Any]:
    return {
        "levels": {q: int(g) for q, g in zip(prep.spec.qid_columns, result.g, strict=True)},
        "heights": {q: int(h) for q, h in zip(prep.spec.qid_columns, prep.table.heights, strict=True)},
        "optimizer": result.optimizer, "budget": prep.spec.budget, "seed": prep.spec.seed,
        "evaluations": result.evaluations, "seconds": round(result.seconds, 3), "certified": result.certified,
        "feasible": result.feasible, "info": result.info,
    }


def verify(con: Connector, prep: Prepared, relation: str, result: OptimizerResult) -> dict[str, Any]:
    """Check every privacy model on the materialized table with SQL of its own."""
    d = con.dialect
    checks = []
    for m in prep.models:
        sql = _verify_sql(prep, m, relation, d)
        row = con.query(sql).row(0, named=True)
        ad = row["ad"]
        ad_value = (math.inf if m.higher_is_safer else 0.0) if ad is None else float(ad)
        checks.append({"model": m.name, "params": m.params(), "ad": None if ad is None else float(ad),
                       "classes": int(row["classes"]), "passed": bool(m.feasible(ad_value)), "query": sql})
    rows = int(con.query(f"SELECT COUNT(*) AS n FROM {relation}")["n"][0])
    expected = int(np.sum(result.retained))
    return {"checks": checks, "rows": rows, "expected_rows": expected,
            "passed": all(c["passed"] for c in checks) and rows == expected}


def source_fingerprint(con: Connector, prep: Prepared) -> str:
    """Row count and an order-free sum of row hashes of the whole source (SQL, in the database)."""
    row = con.query(Q.fingerprint_query(prep.source, prep.spec.key, prep.columns)).row(0, named=True)
    return f"{row['n']}:{row['s']}"


def run_key(spec: ReleaseSpec, fingerprint: str) -> str:
    """Hash of the job definition, the source fingerprint and the seed (issue: run keys)."""
    return hashlib.sha256(f"{spec.to_json()}|{fingerprint}|{spec.seed}".encode()).hexdigest()[:32]


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def _verify_sql(prep: Prepared, m: PrivacyModel, relation: str, d: str, qids: list[str] | None = None) -> str:
    """The model's check as SQL over ``relation`` (Q for t-closeness from the whole source)."""
    spec = prep.spec
    qids = qids or spec.qid_columns
    sens = list(spec.sensitive)
    full = Q.Source(spec.schema, spec.table, spec.query, d)
    if m.name == "k-anonymity":
        return Q.verify_k_query(relation, qids, d)
    if m.name == "t-closeness":
        return Q.verify_t_query(relation, full, qids, sens)
    if m.name in ("distinct-l-diversity", "entropy-l-diversity"):
        return Q.verify_l_query(relation, qids, sens, entropy=m.name.startswith("entropy"), d=d)
    # a model without a SQL check cannot be verified: refuse to publish
    raise VerificationError(f"No SQL verification exists for model {m.name!r}; refusing to publish.")


def run_release(spec: ReleaseSpec, *, database: str | None = None, progress: bool = True,
                fail_before_switch: bool = False, dry_run: bool = False, job: str | None = None,
                on_phase: Any = None) -> ReleaseOutcome:
    """Run one release of ``spec``. Bad input raises before anything is written.

    A later run of the same release publishes a new version: by default it keeps the previous
    generalization levels and recomputes suppression ("stable-levels"), checks cross-version
    privacy and writes ``<name>__delta``. ``dry_run`` computes everything, writes only the run
    record, and returns the SQL it would execute. ``fail_before_switch`` injects a failure after
    materialization and verification, before the view switch (fault-injection tests).
    """
    con = connect(database_url(spec, database))
    lock_name = f"ppdp:{spec.output_schema}.{spec.output_name}"
    locked = False
    stages = _Stages()
    try:
        prep = prepare(spec, con)
        stages.mark("histogram_and_validation")
        if spec.reader_roles and con.dialect == "duckdb":
            raise SpecError("access.roles needs a database with roles; DuckDB has none. Hint: share with 'ppdp export'.")
        if not con.try_lock(lock_name):
            raise ConnectorError(f"Another run of release {spec.output_name!r} is in progress; try again when it has finished.")
        locked = True
        fingerprint = source_fingerprint(con, prep)
        key = run_key(spec, fingerprint)
        stages.mark("fingerprint")
        previous = catalog.latest_success(con, spec.output_name) if catalog.has_catalog(con) else None
        if previous is not None and previous.run_key == key and not dry_run:
            rec = RunRecord(uuid.uuid4().hex, spec.output_name, previous.version, "skipped", _now(), _now(),
                            prep.source_rows, spec.raw, previous.solution, previous.metrics, previous.verification,
                            None, job, key, fingerprint, {}, {"note": f"same run key as run {previous.run_id}"})
            with con.transaction():
                catalog.insert_run(con, rec)
            return ReleaseOutcome(rec, None, quote_table(spec.output_schema, f"{spec.output_name}__v{previous.version}", con.dialect),
                                  quote_table(spec.output_schema, spec.output_name, con.dialect))
        started = _now()
        run_id = uuid.uuid4().hex
        ctx = _RunContext(run_id, started, job, key, fingerprint, previous, stages.seconds)
        with con.transaction():  # the run is visible as "running" while it optimizes
            catalog.ensure_schema(con)
            catalog.mark_abandoned(con, spec.output_name)
            catalog.insert_run(con, RunRecord(run_id, spec.output_name, None, "running", started, None, prep.source_rows,
                                              spec.raw, {}, {}, {}, None, job, key, fingerprint, {}, {}))
        try:
            problem, result = choose_solution(prep, previous, progress=progress)
        except BaseException as exc:
            _record_failure(con, prep, ctx, {}, {}, exc)
            raise
        stages.mark("search")
        metrics = compute_metrics(prep, result)
        solution = solution_record(prep, result)
        stages.mark("metrics")
        if dry_run:
            return _dry_run(con, prep, result, metrics, solution, ctx)
        try:
            return _publish(con, prep, result, metrics, solution, ctx, fail_before_switch, on_phase, stages)
        except PpdpError as exc:
            _record_failure(con, prep, ctx, solution, metrics, exc)
            raise
    finally:
        if locked:
            con.unlock(lock_name)
        con.close()


@dataclass(frozen=True)
class _RunContext:
    run_id: str
    started: dt.datetime
    job: str | None
    run_key: str
    fingerprint: str
    previous: RunRecord | None
    stages: dict[str, float]


class _Stages:
    """Wall time per stage of a run, for the run record and benchmarks/scale.py."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._t = time.perf_counter()

    def mark(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = round(self.seconds.get(name, 0.0) + now - self._t, 4)
        self._t = now


def choose_solution(prep: Prepared, previous: RunRecord | None, *, progress: bool) -> tuple[Problem, OptimizerResult]:
    """The dynamic policy: keep the previous levels (recomputing S*) unless told to re-optimize."""
    spec = prep.spec
    levels = (previous.solution or {}).get("levels", {}) if previous else {}
    if previous is None or spec.dynamic_policy == "reoptimize" or list(levels) != spec.qid_columns or any(
        int(levels[q]) > int(h) for q, h in zip(spec.qid_columns, prep.table.heights, strict=True)
    ):
        return optimize(prep, progress=progress)
    problem = Problem(prep.table, prep.models, backend=spec.evaluator)
    g = np.array([int(levels[q]) for q in spec.qid_columns], dtype=np.int64)
    retained, ev = problem.evaluate_optimal(g[None, :])
    tracker = Tracker(problem, 1, name=f"stable-levels(v{previous.version})")
    tracker.offer(g[None, :], retained, ev)
    return problem, tracker.result(certified=False, info={"policy": "stable-levels", "levels_from_version": previous.version})


def _statements(prep: Prepared, result: OptimizerResult, version: int, con: Connector) -> dict[str, str]:
    spec = prep.spec
    stage = "retained_<run>"
    levels = {q: int(g) for q, g in zip(spec.qid_columns, result.g, strict=True)}
    relation = quote_table(spec.output_schema, f"{spec.output_name}__v{version}", con.dialect)
    select = Q.release_select(prep.source, release=spec.output_name, version=version, columns=prep.released_columns,
                              levels=levels, key=spec.key)
    out = {
        "histogram": Q.histogram_query(prep.source, spec.qid_columns, list(spec.sensitive)),
        "suppressed_keys": Q.suppressed_keys_query(prep.source, spec.key, spec.qid_columns, list(spec.sensitive), stage),
        "materialize": f"CREATE TABLE {relation} AS {select.sql(dialect=con.dialect)}",
        "switch_view": f"CREATE OR REPLACE VIEW {quote_table(spec.output_schema, spec.output_name, con.dialect)} AS SELECT * FROM {relation}",
    }
    for m in prep.models:
        out[f"verify {m.name}"] = _verify_sql(prep, m, relation, con.dialect)
    return out


def _dry_run(con: Connector, prep: Prepared, result: OptimizerResult, metrics: dict, solution: dict, ctx: _RunContext) -> ReleaseOutcome:
    version = (ctx.previous.version + 1) if ctx.previous else 1
    stmts = _statements(prep, result, version, con)
    rec = RunRecord(ctx.run_id, prep.spec.output_name, None, "succeeded", ctx.started, _now(), prep.source_rows,
                    prep.spec.raw, solution | {"dry_run": True, "would_publish_version": version}, metrics,
                    {"dry_run": True, "statements": stmts}, None, ctx.job, ctx.run_key, ctx.fingerprint, {}, {})
    with con.transaction():
        catalog.update_run(con, rec)
    return ReleaseOutcome(rec, result, None, None, stmts)


def _store_hierarchies(con: Connector, prep: Prepared, name: str, version: int, run_id: str) -> None:
    hier_rows = [(name, version, h.attribute, lvl, leaf, value, cnt) for h in prep.hierarchies for (lvl, leaf, value, cnt) in h.long_rows()]
    frame = pl.DataFrame(hier_rows, schema=["release", "version", "attribute", "level", "leaf", "value", "leaf_count"], orient="row")
    frame = frame.with_columns(pl.col("version").cast(pl.Int32), pl.col("level").cast(pl.Int32), pl.col("leaf_count").cast(pl.Int64))
    stage = f"hier_{run_id}"
    con.write_frame(Q.PRIVATE_SCHEMA, stage, frame)
    con.execute(f"INSERT INTO {quote_table(Q.PRIVATE_SCHEMA, 'hierarchies', con.dialect)} SELECT * FROM {quote_table(Q.PRIVATE_SCHEMA, stage, con.dialect)}")
    con.execute(f"DROP TABLE {quote_table(Q.PRIVATE_SCHEMA, stage, con.dialect)}")


def _materialize(con: Connector, prep: Prepared, result: OptimizerResult, version: int, run_id: str, relation: str) -> None:
    """Suppressed keys and the version table (dropped first when repairing)."""
    spec, d = prep.spec, con.dialect
    name = spec.output_name
    con.execute(f"DELETE FROM {quote_table(Q.PRIVATE_SCHEMA, 'suppressed', d)} WHERE release = ? AND version = ?", [name, version])
    con.execute(f"DROP TABLE IF EXISTS {relation}")
    stage = f"retained_{run_id}"
    retained = prep.table.values.with_columns(pl.Series(COUNT_COLUMN, result.retained, dtype=pl.Int64))
    con.write_frame(Q.PRIVATE_SCHEMA, stage, retained)
    keys_sql = Q.suppressed_keys_query(prep.source, spec.key, spec.qid_columns, list(spec.sensitive), stage)
    con.execute(f"INSERT INTO {quote_table(Q.PRIVATE_SCHEMA, 'suppressed', d)} SELECT ?, ?, key FROM ({keys_sql}) AS k", [name, version])
    con.execute(f"DROP TABLE {quote_table(Q.PRIVATE_SCHEMA, stage, d)}")
    if prep.source.withheld is not None:  # withheld for cross-version privacy: suppressed too
        con.execute(f"INSERT INTO {quote_table(Q.PRIVATE_SCHEMA, 'suppressed', d)} SELECT ?, ?, key FROM "
                    f"{quote_table(Q.PRIVATE_SCHEMA, prep.source.withheld, d)}", [name, version])
    levels = {q: int(g) for q, g in zip(spec.qid_columns, result.g, strict=True)}
    full_source = Q.Source(spec.schema, spec.table, spec.query, d)
    select = Q.release_select(full_source, release=name, version=version, columns=prep.released_columns, levels=levels, key=spec.key)
    con.execute(f"CREATE TABLE {relation} AS {select.sql(dialect=d)}")


def _cross_version(con: Connector, prep: Prepared, relation: str, previous_tables: list[str]) -> tuple[dict[str, Any], list[str]]:
    """Joint-grouping check over all published versions; returns (record, keys to withhold)."""
    spec, d = prep.spec, con.dialect
    joint = Q.joint_classes_relation(relation, previous_tables, spec.qid_columns, list(spec.sensitive), d)
    cols = Q.joint_columns(spec.qid_columns, len(previous_tables))
    record: dict[str, Any] = {"versions_checked": len(previous_tables) + 1, "checks": []}
    n_joint = int(con.query(f"SELECT COUNT(*) AS n FROM {joint}")["n"][0])
    record["records_in_several_versions"] = n_joint
    violators: list[str] = []
    for m in prep.models:
        if m.name == "k-anonymity":
            sql = Q.verify_k_query(joint, cols, d)
            small = con.query(Q.small_joint_classes_query(joint, cols, m.k, d))
            if small.height:
                keys = con.query(
                    f"SELECT key FROM {quote_table(Q.PRIVATE_SCHEMA, 'row_ids', d)} WHERE release = ? AND row_id IN "
                    f"({Q.small_joint_classes_query(joint, cols, m.k, d)})", [spec.output_name])
                violators += keys["key"].to_list()
        else:
            sql = _verify_sql(prep, m, joint, d, qids=cols)
        row = con.query(sql).row(0, named=True)
        ad = row["ad"]
        ad_value = (math.inf if m.higher_is_safer else 0.0) if ad is None else float(ad)
        record["checks"].append({"model": m.name, "params": m.params(), "joint_ad": None if ad is None else float(ad),
                                 "joint_classes": int(row["classes"]), "passed": bool(m.feasible(ad_value)), "query": sql})
    record["passed"] = all(c["passed"] for c in record["checks"])
    return record, sorted(set(violators))


def _publish(con: Connector, prep: Prepared, result: OptimizerResult, metrics: dict, solution: dict, ctx: _RunContext,
             fail_before_switch: bool, on_phase: Any = None, stages: _Stages | None = None) -> ReleaseOutcome:
    spec, d = prep.spec, con.dialect
    name, schema = spec.output_name, spec.output_schema
    phase = on_phase or _fault_hook()
    with con.transaction():
        catalog.ensure_schema(con)
        version = catalog.next_version(con, name)
        relation = quote_table(schema, f"{name}__v{version}", d)
        con.execute(f"CREATE SCHEMA IF NOT EXISTS {quote_ident(schema, d)}")
        stages = stages or _Stages()
        _store_hierarchies(con, prep, name, version, ctx.run_id)
        full = Q.Source(spec.schema, spec.table, spec.query, d, key=spec.key)
        con.execute(Q.new_row_ids_statement(full), [name, name])
        stages.mark("row_ids")
        changes = {}
        if ctx.previous is not None:
            row = con.query(Q.changes_query(full, spec.key, prep.columns), [name]).row(0, named=True)
            changes: dict[str, Any] = {k: int(v) for k, v in row.items()}
        previous_tables = [quote_table(schema, f"{name}__v{r.version}", d)
                           for r in catalog.list_runs(con, name) if r.status == "succeeded" and r.version is not None]
        withheld: list[str] = []
        cross: dict[str, Any] = {}
        while True:
            _materialize(con, prep, result, version, ctx.run_id, relation)
            stages.mark("materialization")
            phase("materialized")
            verification = verify(con, prep, relation, result)
            stages.mark("verification")
            if not verification["passed"]:
                failed = [c["model"] for c in verification["checks"] if not c["passed"]]
                detail = f"models {failed} failed" if failed else f"{verification['rows']} rows materialized, {verification['expected_rows']} expected"
                raise VerificationError(f"SQL verification of {relation} failed ({detail}); nothing was published.")
            if not previous_tables:
                break
            cross, violators = _cross_version(con, prep, relation, previous_tables)
            stages.mark("cross_version_check")
            cross["withheld_for_cross_version"] = len(withheld)
            if cross["passed"]:
                break
            limit = int(spec.max_repair_fraction * prep.source_rows)
            if spec.dynamic_policy == "strict" or not violators or len(withheld) + len(violators) > limit:
                bad = [c for c in cross["checks"] if not c["passed"]]
                why = "; ".join(f"{c['model']} on the joint grouping of {cross['versions_checked']} versions: AD = {c['joint_ad']}" for c in bad)
                fix = ("policy 'strict' does not repair" if spec.dynamic_policy == "strict" or not violators else
                       f"repair would withhold {len(withheld) + len(violators)} rows, more than max_repair_fraction allows ({limit})")
                raise VerificationError(
                    f"Cross-version privacy check failed for {name!r} v{version}: {why}; {fix}. Nothing was published. "
                    "Hint: records whose generalized QIDs changed between versions form small joint classes; "
                    "raise dynamic.max_repair_fraction or use dynamic.policy = \"reoptimize\"."
                )
            withheld += violators
            prep, result = _restrict(con, prep, result, withheld, ctx.run_id)
        metrics = compute_metrics(prep, result) | {"withheld_for_cross_version": len(withheld)}
        metrics["suppressed"] = float(metrics.get("suppressed", 0)) + len(withheld)
        if withheld:
            con.execute(f"DROP TABLE {quote_table(Q.PRIVATE_SCHEMA, f'withheld_{ctx.run_id}', d)}")
        if ctx.previous is not None:
            changes["delta"] = _write_delta(con, schema, name, version, ctx.previous.version)
        stages.mark("delta")
        con.execute(f"DELETE FROM {quote_table(Q.PRIVATE_SCHEMA, 'row_state', d)} WHERE release = ?", [name])
        con.execute(f"INSERT INTO {quote_table(Q.PRIVATE_SCHEMA, 'row_state', d)} SELECT ?, key, row_hash FROM "
                    f"({Q.row_state_select(full, spec.key, prep.columns)}) AS s", [name])
        stages.mark("row_state")
        if fail_before_switch:
            raise VerificationError("Injected failure before the view switch; nothing was published.")
        view = quote_table(schema, name, d)
        current = con.relation_columns(schema, name)
        if current is not None and current != con.relation_columns(schema, f"{name}__v{version}"):
            con.execute(f"DROP VIEW {view}")  # PostgreSQL cannot replace a view whose columns changed
        con.execute(f"CREATE OR REPLACE VIEW {view} AS SELECT * FROM {relation}")
        for role in spec.reader_roles:  # exactly USAGE on the schema and SELECT on the view
            con.execute(f"GRANT USAGE ON SCHEMA {quote_ident(schema, d)} TO {quote_ident(role, d)}")
            con.execute(f"GRANT SELECT ON {view} TO {quote_ident(role, d)}")
        phase("switched")
        stages.mark("view_switch")
        rec = RunRecord(ctx.run_id, name, version, "succeeded", ctx.started, _now(), prep.source_rows, spec.raw,
                        solution_record(prep, result), metrics | {"stage_seconds": stages.seconds}, verification, None,
                        ctx.job, ctx.run_key, ctx.fingerprint, changes, cross)
        catalog.update_run(con, rec)
    stages.mark("commit")
    return ReleaseOutcome(rec, result, relation, view)


def _restrict(con: Connector, prep: Prepared, result: OptimizerResult, withheld: list[str], run_id: str) -> tuple[Prepared, OptimizerResult]:
    """Withhold ``withheld`` keys, re-encode the rest and recompute S* at the same levels."""
    spec, d = prep.spec, con.dialect
    table = f"withheld_{run_id}"
    con.execute(f"DROP TABLE IF EXISTS {quote_table(Q.PRIVATE_SCHEMA, table, d)}")
    con.write_frame(Q.PRIVATE_SCHEMA, table, pl.DataFrame({"key": withheld}, schema={"key": pl.String}))
    source = Q.Source(spec.schema, spec.table, spec.query, d, withheld=table, key=spec.key)
    histogram = con.query(Q.histogram_query(source, spec.qid_columns, list(spec.sensitive)))
    enc = encode_histogram(histogram, spec.qid_columns, list(spec.sensitive), prep.hierarchies, null_policy=spec.null_policy)
    new_prep = Prepared(spec, source, prep.columns, prep.released_columns, prep.hierarchies, enc, prep.models, prep.source_rows)
    problem = Problem(enc, prep.models, backend=spec.evaluator)
    retained, ev = problem.evaluate_optimal(result.g[None, :])
    tracker = Tracker(problem, 1, name=result.optimizer)
    tracker.offer(result.g[None, :], retained, ev)
    return new_prep, tracker.result(certified=False, info=dict(result.info) | {"withheld_for_cross_version": len(withheld)})


def _write_delta(con: Connector, schema: str, name: str, version: int, previous_version: int) -> str:
    """``<name>__delta``: rows added (+) and removed (-) going from the previous version.

    Increments only make sense between versions with the same columns and types; when they
    differ (a column added, dropped or retyped) no delta is written for this version and the
    run record says why: consumers must reload the version table.
    """
    d = con.dialect
    cur_cols = con.relation_columns(schema, f"{name}__v{version}")
    prev_cols = con.relation_columns(schema, f"{name}__v{previous_version}")
    delta_cols = con.relation_columns(schema, f"{name}__delta")
    if cur_cols != prev_cols or (delta_cols is not None and delta_cols[2:] != cur_cols):
        return f"not written: the columns of v{version} differ from v{previous_version}; reload the version table"
    delta = quote_table(schema, f"{name}__delta", d)
    cur = quote_table(schema, f"{name}__v{version}", d)
    prev = quote_table(schema, f"{name}__v{previous_version}", d)
    con.execute(f"CREATE TABLE IF NOT EXISTS {delta} AS SELECT CAST(NULL AS INTEGER) AS version, CAST(NULL AS VARCHAR) AS op, c.* FROM {cur} AS c WHERE 1 = 0")
    con.execute(f"INSERT INTO {delta} SELECT {int(version)}, '+', x.* FROM (SELECT * FROM {cur} EXCEPT SELECT * FROM {prev}) AS x")
    con.execute(f"INSERT INTO {delta} SELECT {int(version)}, '-', x.* FROM (SELECT * FROM {prev} EXCEPT SELECT * FROM {cur}) AS x")
    return "written"


def _fault_hook():
    """Fault injection for tests, from PPDP_FAULT: "pause-after-materialize:SECONDS" (announce on
    stderr and sleep, so a test can kill the process or start a concurrent run) or
    "exit-after-materialize" (the process dies inside the open transaction)."""
    import os
    import sys
    import time

    fault = os.environ.get("PPDP_FAULT", "")

    def hook(phase: str) -> None:
        if phase != "materialized" or not fault:
            return
        if fault.startswith("pause-after-materialize:"):
            print("PPDP_FAULT: paused after materialize", file=sys.stderr, flush=True)
            time.sleep(float(fault.split(":", 1)[1]))
        elif fault == "exit-after-materialize":
            os._exit(9)

    return hook


def _record_failure(con: Connector, prep: Prepared, ctx: _RunContext, solution: dict, metrics: dict, exc: Exception) -> None:
    with con.transaction():
        catalog.ensure_schema(con)
        rec = RunRecord(ctx.run_id, prep.spec.output_name, None, "failed", ctx.started, _now(), prep.source_rows,
                        prep.spec.raw, solution, metrics, {}, str(exc) or type(exc).__name__, ctx.job, ctx.run_key,
                        ctx.fingerprint, {}, {})
        catalog.update_run(con, rec)


def reverify(con: Connector, name: str) -> dict[str, Any]:
    """Run the SQL verification again on the current version of release ``name``."""
    from engine.spec import spec_from_dict

    run = catalog.latest_success(con, name) if catalog.has_catalog(con) else None
    if run is None:
        raise SpecError(f"No published release named {name!r} in {con.url}.")
    spec = spec_from_dict(run.spec)
    source = Q.Source(spec.schema, spec.table, spec.query, con.dialect)
    models = [build_model(m.name, m.param_dict()) for m in spec.models]
    prep = Prepared(spec, source, [], [], [], None, models, run.source_rows or 0)  # type: ignore[arg-type]
    relation = quote_table(spec.output_schema, f"{name}__v{run.version}", con.dialect)

    class _Kept:  # verify() only needs the number of released rows
        retained = np.array([run.metrics.get("released_records", 0)])

    return verify(con, prep, relation, _Kept())  # type: ignore[arg-type]


def export_schema(con: Connector, schema: str, out: str) -> list[str]:
    """Copy the tables and views of ``schema`` (only) into a new DuckDB file ``out``."""
    import duckdb

    if con.dialect != "duckdb":
        raise SpecError("ppdp export copies from a DuckDB database; on a server, grant access to the published schema instead.")
    if Path(out).exists():
        raise SpecError(f"{out!r} already exists. Hint: choose a new file name; export never overwrites.")
    rel = con.query("SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = ? ORDER BY table_type, table_name", [schema])
    if rel.height == 0:
        raise SpecError(f"Schema {schema!r} has nothing to export.")
    views = con.query("SELECT view_name, sql FROM duckdb_views() WHERE schema_name = ? AND NOT internal", [schema])
    target = duckdb.connect(out)
    copied = []
    try:
        target.execute(f"CREATE SCHEMA {quote_ident(schema)}")
        for name, kind in rel.iter_rows():
            if kind == "BASE TABLE":
                frame = con.query(f"SELECT * FROM {quote_table(schema, name)}")
                target.register("__ppdp_export", frame.to_arrow())
                target.execute(f"CREATE TABLE {quote_table(schema, name)} AS SELECT * FROM __ppdp_export")
                target.unregister("__ppdp_export")
                copied.append(f"{schema}.{name}")
        for name, sql in views.iter_rows():
            target.execute(sql)  # DuckDB's own stored definition of a view we created
            copied.append(f"{schema}.{name} (view)")
    except BaseException:
        target.close()
        Path(out).unlink(missing_ok=True)
        raise
    target.close()
    return copied
