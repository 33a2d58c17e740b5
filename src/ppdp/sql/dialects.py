"""``ppdp sql``: a self-contained script that rebuilds a release's current version elsewhere.

The script creates a helper schema ``ppdp_rebuild`` with the hierarchy, suppressed-key and
row-id tables of that version (as INSERT ... VALUES), then the version table by the same
generalization joins and anti-join ppdp itself ran, and the view. It reads the source table
under its own name, so it runs in any database that holds the source.

Every statement is a sqlglot expression generated with ``unsupported_level=RAISE``: sqlglot
otherwise passes DuckDB-only syntax through or drops constructs it cannot express.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel
from sqlglot.optimizer.qualify import qualify

from ppdp.sql import queries as Q
from ppdp.sql.errors import build_error
from ppdp.sql.quoting import ident, table_expr

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


@dataclass(frozen=True)
class RebuildData:
    """What a rebuild script needs, read from the catalog by engine.rebuild (plain values only)."""

    name: str  # output name: the version table and view are named after it
    release: str  # the release's identity (schema and name), the key of its private rows
    version: int
    output_schema: str
    source_schema: str | None
    source_table: str | None
    source_query: str | None
    source_dialect: str  # the dialect the release ran in (source.query is written in it)
    key: str
    columns: tuple[str, ...]  # released columns in order, without the row id
    levels: dict[str, int]
    hierarchies: tuple[tuple, ...]  # (release, version, attribute, level, leaf, value, leaf_count)
    suppressed: tuple[tuple, ...]  # (release, version, key)
    row_ids: tuple[tuple, ...]  # (release, key, row_id)
    # {schema: {table: {column: type}}} of the tables source.query reads: ``* EXCLUDE`` (DuckDB)
    # has no PostgreSQL form, so such stars are expanded to column lists with it.
    query_tables: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)


def portable_query(query: str, read: str, write: str, tables: dict[str, dict[str, dict[str, str]]]) -> str:
    """``query`` with stars that exclude, replace or rename columns expanded to explicit columns
    (sqlglot otherwise writes DuckDB's ``* EXCLUDE (c)`` as ``* EXCEPT (c)`` for PostgreSQL,
    which PostgreSQL rejects); unchanged when it has none or ``write == read``."""
    parsed = sqlglot.parse_one(query, read=read)
    special = [s for s in parsed.find_all(exp.Star) if any(s.args.get(a) for a in ("except", "except_", "replace", "rename"))]
    if not special or write == read:
        return query
    schema: dict[str, object] = dict(tables)  # (qualify's parameter is an invariant dict)
    try:
        expanded = qualify(parsed, schema=schema, dialect=read, quote_identifiers=True, validate_qualify_columns=True)
    except (sqlglot.errors.OptimizeError, sqlglot.errors.SchemaError) as exc:
        raise build_error(f"source.query cannot be written in {write}: {str(exc).splitlines()[0]}. "
                          "Hint: list the columns instead of * EXCLUDE / REPLACE.") from None
    return expanded.sql(dialect=read)


def rebuild_statements(data: RebuildData, dialect: str = "duckdb") -> list[exp.Expression]:
    """The statements, as expressions, that rebuild version ``data.version`` of ``data.name``."""
    query = data.source_query
    if query is not None:
        query = portable_query(query, data.source_dialect, dialect, data.query_tables)
    # Built for the target dialect (the canonical text of values differs per dialect); the user
    # query is read in the dialect it was written in.
    source = Q.Source(data.source_schema, data.source_table, query, dialect, query_dialect=data.source_dialect)
    select = Q.release_select(source, release=data.release, version=data.version, columns=list(data.columns),
                              levels=dict(data.levels), key=data.key, private_schema=REBUILD_SCHEMA)
    table = table_expr(data.output_schema, f"{data.name}__v{data.version}")
    view = table_expr(data.output_schema, data.name)
    stmts: list[exp.Expression] = [
        exp.Create(this=table_expr(None, REBUILD_SCHEMA).this, kind="SCHEMA", exists=True),
        exp.Create(this=ident(data.output_schema), kind="SCHEMA", exists=True),
    ]
    for t, rows in (("hierarchies", data.hierarchies), ("suppressed", data.suppressed), ("row_ids", data.row_ids)):
        stmts.append(_create_table(t, dialect))
        stmts += _inserts(t, list(rows))
    stmts.append(exp.Create(this=table, kind="TABLE", expression=select))
    stmts.append(exp.Create(this=view, kind="VIEW", replace=True,
                            expression=exp.select(exp.Star()).from_(table_expr(data.output_schema, f"{data.name}__v{data.version}"))))
    return stmts


def render_script(data: RebuildData, dialect: str) -> str:
    """The rebuild script in ``dialect``; unsupported constructs raise instead of vanishing."""
    if dialect not in DIALECTS:
        raise build_error(f"Unknown dialect {dialect!r}. Known: {', '.join(DIALECTS)}.")
    stmts = rebuild_statements(data, dialect)
    try:
        body = [s.sql(dialect=dialect, unsupported_level=ErrorLevel.RAISE) for s in stmts]
    except sqlglot.errors.UnsupportedError as exc:
        raise build_error(f"The release cannot be expressed in {dialect}: {exc}") from None
    header = f"-- ppdp: rebuild {data.name!r} (current version) in {dialect}; needs the source table under its own name\n"
    return header + ";\n".join(body) + ";\n"
