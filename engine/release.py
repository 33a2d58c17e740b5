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
import math
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
from engine.errors import DataError, PpdpError, SpecError, VerificationError
from engine.metrics import METRICS, class_size_summary, workload_error
from engine.models import PrivacyModel, build_model
from engine.optimizers import OptimizerResult, run_optimizer
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
    spec = prep.spec
    d = con.dialect
    qids, sens = spec.qid_columns, list(spec.sensitive)
    checks = []
    for m in prep.models:
        if m.name == "k-anonymity":
            sql = Q.verify_k_query(relation, qids, d)
        elif m.name == "t-closeness":
            sql = Q.verify_t_query(relation, prep.source, qids, sens)
        elif m.name in ("distinct-l-diversity", "entropy-l-diversity"):
            sql = Q.verify_l_query(relation, qids, sens, entropy=m.name.startswith("entropy"), d=d)
        else:  # a model without a SQL check cannot be verified: refuse to publish
            raise VerificationError(f"No SQL verification exists for model {m.name!r}; refusing to publish.")
        row = con.query(sql).row(0, named=True)
        ad = row["ad"]
        ad_value = (math.inf if m.higher_is_safer else 0.0) if ad is None else float(ad)
        checks.append({"model": m.name, "params": m.params(), "ad": None if ad is None else float(ad),
                       "classes": int(row["classes"]), "passed": bool(m.feasible(ad_value)), "query": sql})
    rows = int(con.query(f"SELECT COUNT(*) AS n FROM {relation}")["n"][0])
    expected = int(np.sum(result.retained))
    return {"checks": checks, "rows": rows, "expected_rows": expected,
            "passed": all(c["passed"] for c in checks) and rows == expected}


def run_release(spec: ReleaseSpec, *, database: str | None = None, progress: bool = True,
                fail_before_switch: bool = False) -> ReleaseOutcome:
    """Run one release of ``spec``. Bad input raises before anything is written.

    ``fail_before_switch`` injects a failure after materialization and verification, before the
    view switch (fault-injection tests).
    """
    con = connect(database_url(spec, database))
    try:
        prep = prepare(spec, con)
        started = dt.datetime.now(dt.UTC).replace(tzinfo=None)
        problem, result = optimize(prep, progress=progress)
        metrics = compute_metrics(prep, result)
        solution = solution_record(prep, result)
        run_id = uuid.uuid4().hex
        try:
            return _publish(con, prep, result, metrics, solution, run_id, started, fail_before_switch)
        except PpdpError as exc:
            _record_failure(con, prep, run_id, started, solution, metrics, exc)
            raise
    finally:
        con.close()


def _publish(con: Connector, prep: Prepared, result: OptimizerResult, metrics: dict, solution: dict, run_id: str,
             started: dt.datetime, fail_before_switch: bool) -> ReleaseOutcome:
    spec = prep.spec
    name, schema = spec.output_name, spec.output_schema
    stage = f"retained_{run_id}"
    with con.transaction():
        catalog.ensure_schema(con)
        version = catalog.next_version(con, name)
        table_name = f"{name}__v{version}"
        hier_rows = [
            (name, version, h.attribute, lvl, leaf, value, cnt)
            for h in prep.hierarchies for (lvl, leaf, value, cnt) in h.long_rows()
        ]
        frame = pl.DataFrame(hier_rows, schema=["release", "version", "attribute", "level", "leaf", "value", "leaf_count"], orient="row")
        frame = frame.with_columns(pl.col("version").cast(pl.Int32), pl.col("level").cast(pl.Int32), pl.col("leaf_count").cast(pl.Int64))
        con.write_frame(Q.PRIVATE_SCHEMA, f"hier_{run_id}", frame)
        con.execute(f"INSERT INTO {quote_table(Q.PRIVATE_SCHEMA, 'hierarchies')} SELECT * FROM {quote_table(Q.PRIVATE_SCHEMA, f'hier_{run_id}')}")
        con.execute(f"DROP TABLE {quote_table(Q.PRIVATE_SCHEMA, f'hier_{run_id}')}")

        retained = prep.table.values.with_columns(pl.Series(COUNT_COLUMN, result.retained, dtype=pl.Int64))
        con.write_frame(Q.PRIVATE_SCHEMA, stage, retained)
        keys_sql = Q.suppressed_keys_query(prep.source, spec.key, spec.qid_columns, list(spec.sensitive), stage)
        con.execute(f"INSERT INTO {quote_table(Q.PRIVATE_SCHEMA, 'suppressed')} SELECT ?, ?, key FROM ({keys_sql}) AS k", [name, version])
        con.execute(f"DROP TABLE {quote_table(Q.PRIVATE_SCHEMA, stage)}")

        levels = {q: int(g) for q, g in zip(spec.qid_columns, result.g, strict=True)}
        select = Q.release_select(prep.source, release=name, version=version, columns=prep.released_columns,
                                  levels=levels, key=spec.key)
        relation = quote_table(schema, table_name, con.dialect)
        con.execute(f"CREATE SCHEMA IF NOT EXISTS {quote_ident(schema, con.dialect)}")
        con.execute(f"CREATE TABLE {relation} AS {select.sql(dialect=con.dialect)}")
        verification = verify(con, prep, relation, result)
        if not verification["passed"]:
            failed = [c["model"] for c in verification["checks"] if not c["passed"]]
            detail = f"models {failed} failed" if failed else f"{verification['rows']} rows materialized, {verification['expected_rows']} expected"
            raise VerificationError(f"SQL verification of {relation} failed ({detail}); nothing was published.")
        if fail_before_switch:
            raise VerificationError("Injected failure before the view switch; nothing was published.")
        view = quote_table(schema, name, con.dialect)
        con.execute(f"CREATE OR REPLACE VIEW {view} AS SELECT * FROM {relation}")
        rec = RunRecord(run_id, name, version, "succeeded", started, dt.datetime.now(dt.UTC).replace(tzinfo=None),
                        prep.source_rows, spec.raw, solution, metrics, verification, None)
        catalog.insert_run(con, rec)
    return ReleaseOutcome(rec, result, relation, view)


def _record_failure(con: Connector, prep: Prepared, run_id: str, started: dt.datetime, solution: dict, metrics: dict,
                    exc: Exception) -> None:
    with con.transaction():
        catalog.ensure_schema(con)
        rec = RunRecord(run_id, prep.spec.output_name, None, "failed", started, dt.datetime.now(dt.UTC).replace(tzinfo=None),
                        prep.source_rows, prep.spec.raw, solution, metrics, {}, str(exc))
        catalog.insert_run(con, rec)


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
