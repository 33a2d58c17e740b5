"""``ppdp sql``: a self-contained script that rebuilds a release's current version elsewhere.

The script creates a helper schema ``ppdp_rebuild`` with the hierarchy, suppressed-key and
row-id tables of that version (as INSERT ... VALUES), then the version table by the same
generalization joins and anti-join ppdp itself ran, and the view. It reads the source table
under its own name, so it runs in any database that holds the source.

Every statement is a sqlglot expression generated with ``unsupported_level=RAISE``: sqlglot
otherwise passes DuckDB-only syntax through or drops constructs it cannot express.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel

from connectors.base import Connector
from engine import catalog
from engine.errors import SpecError
from engine.spec import spec_from_dict
from sql import queries as Q
from sql.quoting import ident, quote_table, table_expr

DIALECTS = ("duckdb", "postgres", "snowflake", "bigquery", "spark")
REBUILD_SCHEMA = "ppdp_rebuild"
CHUNK = 500

_TABLES = {
    "hierarchies": [("release", "VARCHAR"), ("version", "INT"), ("attribute", "VARCHAR"), ("level", "INT"),
                    ("leaf", "VARCHAR"), ("value", "VARCHAR"), ("leaf_count", "BIGINT")],
    "suppressed": [("release", "VARCHAR"), ("version", "INT"), ("key", "VARCHAR")],
    "row_ids": [("release", "VARCHAR"), ("key", "VARCHAR"), ("row_id", "VARCHAR")],
}


# Keys give PostgreSQL's planner the statistics it needs for the generalization joins (without
# them the rebuild nested-loops for over a minute on adult); dialects that do not take keys in
# CREATE TABLE (BigQuery, Spark) get none.
_KEYS = {"hierarchies": ("release", "version", "attribute", "level", "leaf"), "row_ids": ("release", "key")}
_KEYED_DIALECTS = ("duckdb", "postgres", "snowflake")


def _create_table(name: str, dialect: str) -> exp.Create:
    cols: list[exp.Expression] = [exp.ColumnDef(this=ident(c), kind=exp.DataType.build(t)) for c, t in _TABLES[name]]
    if name in _KEYS and dialect in _KEYED_DIALECTS:
        cols.append(exp.PrimaryKey(expressions=[ident(c) for c in _KEYS[name]]))
    return exp.Create(this=exp.Schema(this=table_expr(REBUILD_SCHEMA, name), expressions=cols), kind="TABLE")


def _literal(v) -> exp.Expression:
    if v is None:
        return exp.Null()
    if isinstance(v, bool):
        return exp.Boolean(this=v)
    if isinstance(v, int):
        return exp.Literal.number(v)
    return exp.Literal.string(str(v))


def _inserts(name: str, rows: list[tuple]) -> list[exp.Insert]:
    out = []
    for i in range(0, len(rows), CHUNK):
        values = exp.Values(expressions=[exp.Tuple(expressions=[_literal(v) for v in r]) for r in rows[i : i + CHUNK]])
        out.append(exp.Insert(this=table_expr(REBUILD_SCHEMA, name), expression=values))
    return out


def rebuild_statements(con: Connector, name: str, dialect: str = "duckdb") -> list[exp.Expression]:
    """The statements, as expressions, that rebuild the current version of ``name``."""
    run = catalog.latest_success(con, name) if catalog.has_catalog(con) else None
    if run is None:
        raise SpecError(f"No published release named {name!r} in {con.url}.")
    spec = spec_from_dict(run.spec)
    version = run.version
    private = lambda t: quote_table(Q.PRIVATE_SCHEMA, t, con.dialect)  # noqa: E731
    hier = con.query(f"SELECT release, version, attribute, level, leaf, value, leaf_count FROM {private('hierarchies')} "
                     "WHERE release = ? AND version = ? ORDER BY attribute, level, leaf", [name, version])
    sup = con.query(f"SELECT release, version, key FROM {private('suppressed')} WHERE release = ? AND version = ? ORDER BY key", [name, version])
    rids = con.query(f"SELECT release, key, row_id FROM {private('row_ids')} WHERE release = ? ORDER BY key", [name])
    source = Q.Source(spec.schema, spec.table, spec.query, "duckdb")
    select = Q.release_select(source, release=name, version=version, columns=_released_columns(con, spec, version),
                              levels={q: int(g) for q, g in run.solution["levels"].items()}, key=spec.key,
                              private_schema=REBUILD_SCHEMA)
    table = table_expr(spec.output_schema, f"{name}__v{version}")
    view = table_expr(spec.output_schema, name)
    stmts: list[exp.Expression] = [
        exp.Create(this=table_expr(None, REBUILD_SCHEMA).this, kind="SCHEMA", exists=True),
        exp.Create(this=ident(spec.output_schema), kind="SCHEMA", exists=True),
    ]
    for t, frame in (("hierarchies", hier), ("suppressed", sup), ("row_ids", rids)):
        stmts.append(_create_table(t, dialect))
        stmts += _inserts(t, frame.rows())
    stmts.append(exp.Create(this=table, kind="TABLE", expression=select))
    stmts.append(exp.Create(this=view, kind="VIEW", replace=True,
                            expression=exp.select(exp.Star()).from_(table_expr(spec.output_schema, f"{name}__v{version}"))))
    return stmts


def _released_columns(con: Connector, spec, version: int) -> list[str]:
    cols = con.relation_columns(spec.output_schema, f"{spec.output_name}__v{version}") or []
    return [c for c, _ in cols if c != Q.ROW_ID]


def rebuild_script(con: Connector, name: str, dialect: str) -> str:
    """The rebuild script in ``dialect``; unsupported constructs raise instead of vanishing."""
    if dialect not in DIALECTS:
        raise SpecError(f"Unknown dialect {dialect!r}. Known: {', '.join(DIALECTS)}.")
    stmts = rebuild_statements(con, name, dialect)
    try:
        body = [s.sql(dialect=dialect, unsupported_level=ErrorLevel.RAISE) for s in stmts]
    except sqlglot.errors.UnsupportedError as exc:
        raise SpecError(f"The release cannot be expressed in {dialect}: {exc}") from None
    header = f"-- ppdp: rebuild {name!r} (current version) in {dialect}; needs the source table under its own name\n"
    return header + ";\n".join(body) + ";\n"
