"""``ppdp sql``: a self-contained script that rebuilds a release's current version elsewhere.

The script creates a helper schema ``ppdp_rebuild`` with the private tables that version's rows
are derived from (as INSERT ... VALUES): the row ids, and the release method's own state (a
generalization's hierarchies and suppressed keys, a microaggregation's groups, labels and forged
records, a heterogeneous release's generalized values). Then it creates the version table by the
same SELECT ppdp itself ran over the source and that state, and the view. It reads the source
table under its own name, so it runs in any database that holds the source.

Every statement is a sqlglot expression generated with ``unsupported_level=RAISE``: sqlglot
otherwise passes DuckDB-only syntax through or drops constructs it cannot express.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel
from sqlglot.optimizer.qualify import qualify

from ppdp.sql import queries as Q
from ppdp.sql.dialect import Dialect
from ppdp.sql.errors import build_error
from ppdp.sql.quoting import ident, table_expr
from ppdp.sql.relations import ReleaseRelation

DIALECTS = ("duckdb", "postgres", "snowflake", "bigquery", "spark")  # the script's targets
REBUILD_SCHEMA = "ppdp_rebuild"
CHUNK = 500



@dataclass(frozen=True)
class PrivateRows:
    """One private table the script ships: created in ``ppdp_rebuild`` and filled with its rows."""

    name: str
    columns: tuple[tuple[str, str], ...]  # (column, type)
    rows: tuple[tuple[Any, ...], ...]
    key: tuple[str, ...] = ()  # a primary key, for the planner (where the dialect takes one)


def hierarchies_table(rows: tuple[tuple[Any, ...], ...]) -> PrivateRows:
    """``_ppdp.hierarchies`` rows of one version: (release, version, attribute, level, leaf, value, leaf_count)."""
    return PrivateRows("hierarchies", (("release", "VARCHAR"), ("version", "INT"), ("attribute", "VARCHAR"), ("level", "INT"),
                                       ("leaf", "VARCHAR"), ("value", "VARCHAR"), ("leaf_count", "BIGINT")),
                       rows, ("release", "version", "attribute", "level", "leaf"))


def suppressed_table(rows: tuple[tuple[Any, ...], ...]) -> PrivateRows:
    """``_ppdp.suppressed`` rows of one version: (release, version, key)."""
    return PrivateRows("suppressed", (("release", "VARCHAR"), ("version", "INT"), ("key", "VARCHAR")), rows)


def row_ids_table(rows: tuple[tuple[Any, ...], ...]) -> PrivateRows:
    """``_ppdp.row_ids`` rows of the release: (release, key, row_id)."""
    return PrivateRows("row_ids", (("release", "VARCHAR"), ("key", "VARCHAR"), ("row_id", "VARCHAR")), rows, ("release", "key"))


class RowsSelect(Protocol):
    """How a release method's published rows are derived from the source and its private tables
    (the same SELECT the method ran when it published them), for one target dialect."""

    def select(self, source: Q.Source, *, release: str, version: int, columns: list[str], key: str,
               private_schema: str) -> exp.Query: ...


@dataclass(frozen=True)
class GeneralizedRows:
    """A generalization release: QIDs joined to the stored hierarchies at ``levels``, suppressed keys left out."""

    levels: dict[str, int]

    def select(self, source: Q.Source, *, release: str, version: int, columns: list[str], key: str,
               private_schema: str) -> exp.Query:
        return Q.release_select(source, release=release, version=version, columns=columns, levels=dict(self.levels),
                                key=key, private_schema=private_schema)


@dataclass(frozen=True)
class RebuildRows:
    """A release method's part of the script: the private tables it ships (besides the row ids)
    and the SELECT of its rows over them."""

    rows: RowsSelect
    tables: tuple[PrivateRows, ...]


def _create_table(table: PrivateRows, dialect: Dialect) -> exp.Create:
    cols: list[exp.Expression] = [exp.ColumnDef(this=ident(c), kind=exp.DataType.build(t)) for c, t in table.columns]
    # Keys give PostgreSQL's planner the statistics it needs for the generalization joins
    # (without them the rebuild nested-loops for over a minute on adult).
    if table.key and dialect.keyed_tables:
        cols.append(exp.PrimaryKey(expressions=[ident(c) for c in table.key]))
    return exp.Create(this=exp.Schema(this=table_expr(REBUILD_SCHEMA, table.name), expressions=cols), kind="TABLE")


def _literal(v: Any) -> exp.Expression:
    if v is None:
        return exp.Null()
    if isinstance(v, bool):
        return exp.Boolean(this=v)
    if isinstance(v, int):
        return exp.Literal.number(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise build_error(f"The private value {v!r} cannot be written as a SQL literal.")
        return exp.Literal.number(repr(v))  # the shortest text that reads back as the same double
    return exp.Literal.string(str(v))


def _inserts(name: str, rows: list[tuple[Any, ...]]) -> list[exp.Insert]:
    out = []
    for i in range(0, len(rows), CHUNK):
        values = exp.Values(expressions=[exp.Tuple(expressions=[_literal(v) for v in r]) for r in rows[i : i + CHUNK]])
        out.append(exp.Insert(this=table_expr(REBUILD_SCHEMA, name), expression=values))
    return out


@dataclass(frozen=True)
class RebuildData:
    """What a rebuild script needs, read from the catalog by engine.app.rebuild (plain values only)."""

    name: str  # output name: the version table and view are named after it
    release: str  # the release's identity (schema and name), the key of its private rows
    version: int
    output_schema: str
    source_schema: str | None
    source_table: str | None
    source_query: str | None
    source_dialect: Dialect  # the dialect the release ran in (source.query is written in it)
    key: str
    columns: tuple[str, ...]  # released columns in order, without the row id
    rows: RowsSelect  # the method's SELECT of the published rows
    tables: tuple[PrivateRows, ...]  # the private tables that SELECT reads, row ids included
    # {schema: {table: {column: type}}} of the tables source.query reads: ``* EXCLUDE`` (DuckDB)
    # has no PostgreSQL form, so such stars are expanded to column lists with it.
    query_tables: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    research: str | None = None  # the research subset's predicate (delta-presence): only its rows are released


def portable_query(query: str, read: Dialect, write: Dialect, tables: dict[str, dict[str, dict[str, str]]]) -> str:
    """``query`` with stars that exclude, replace or rename columns expanded to explicit columns
    (sqlglot otherwise writes DuckDB's ``* EXCLUDE (c)`` as ``* EXCEPT (c)`` for PostgreSQL,
    which PostgreSQL rejects); unchanged when it has none or ``write == read``."""
    parsed = sqlglot.parse_one(query, read=read.name)
    special = [s for s in parsed.find_all(exp.Star) if any(s.args.get(a) for a in ("except", "except_", "replace", "rename"))]
    if not special or write == read:
        return query
    schema: dict[str, object] = dict(tables)  # (qualify's parameter is an invariant dict)
    try:
        expanded = qualify(parsed, schema=schema, dialect=read.name, quote_identifiers=True, validate_qualify_columns=True)
    except (sqlglot.errors.OptimizeError, sqlglot.errors.SchemaError) as exc:
        raise build_error(f"source.query cannot be written in {write}: {str(exc).splitlines()[0]}. "
                          "Hint: list the columns instead of * EXCLUDE / REPLACE.") from None
    return expanded.sql(dialect=read.name)


def rebuild_statements(data: RebuildData, dialect: Dialect) -> list[exp.Expression]:
    """The statements, as expressions, that rebuild version ``data.version`` of ``data.name``."""
    query = data.source_query
    if query is not None:
        query = portable_query(query, data.source_dialect, dialect, data.query_tables)
    # Built for the target dialect (the canonical text of values differs per dialect); the user
    # query is read in the dialect it was written in.
    source = Q.Source(data.source_schema, data.source_table, query, dialect, query_dialect=data.source_dialect,
                      research=data.research)
    select = data.rows.select(source, release=data.release, version=data.version, columns=list(data.columns), key=data.key,
                              private_schema=REBUILD_SCHEMA)
    published = ReleaseRelation(data.output_schema, data.name, dialect)
    table, view = published.version_expr(data.version), published.view_expr()
    stmts: list[exp.Expression] = [
        exp.Create(this=table_expr(None, REBUILD_SCHEMA).this, kind="SCHEMA", exists=True),
        exp.Create(this=ident(data.output_schema), kind="SCHEMA", exists=True),
    ]
    for t in data.tables:
        stmts.append(_create_table(t, dialect))
        stmts += _inserts(t.name, list(t.rows))
    stmts.append(exp.Create(this=table, kind="TABLE", expression=select))
    stmts.append(exp.Create(this=view, kind="VIEW", replace=True,
                            expression=exp.select(exp.Star()).from_(published.version_expr(data.version))))
    return stmts


def render_script(data: RebuildData, dialect: Dialect) -> str:
    """The rebuild script in ``dialect``; unsupported constructs raise instead of vanishing."""
    if dialect.name not in DIALECTS:
        raise build_error(f"Unknown dialect {dialect.name!r}. Known: {', '.join(DIALECTS)}.")
    stmts = rebuild_statements(data, dialect)
    try:
        body = [s.sql(dialect=dialect.name, unsupported_level=ErrorLevel.RAISE) for s in stmts]
    except sqlglot.errors.UnsupportedError as exc:
        raise build_error(f"The release cannot be expressed in {dialect}: {exc}") from None
    header = f"-- ppdp: rebuild {data.name!r} (current version) in {dialect}; needs the source table under its own name\n"
    return header + ";\n".join(body) + ";\n"
