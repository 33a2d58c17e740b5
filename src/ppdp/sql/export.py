"""SQL of ``ppdp export``: which relations of a schema ppdp published, and the share file's DDL.

The list of relations comes from ppdp's own record (``_ppdp.releases`` and the succeeded runs of
``_ppdp.runs``), never from the schema's catalog: a schema may hold anything else
(the source table with its keys), and only what ppdp published may leave in a share file.
"""

from __future__ import annotations

from sqlglot import exp

from ppdp.sql.catalog import private
from ppdp.sql.dialect import DUCKDB, Dialect
from ppdp.sql.quoting import table_expr

EXPORT_FRAME = "__ppdp_export"  # name a copied table's rows are registered under in the target


def published_versions_query(d: Dialect) -> str:
    """(output_name, version) of every version ppdp published into one schema (bind the schema)."""
    return (f"SELECT r.output_name AS name, u.version AS version FROM {private('releases', d)} AS r "
            f"JOIN {private('runs', d)} AS u ON u.release = r.release "
            "WHERE r.output_schema = ? AND u.status = 'succeeded' AND u.version IS NOT NULL "
            "GROUP BY r.output_name, u.version ORDER BY 1, 2")


def select_all(schema: str, name: str, d: Dialect) -> str:
    return exp.select(exp.Star()).from_(table_expr(schema, name)).sql(dialect=d.name)


def create_schema(schema: str) -> str:
    """In the share file (DuckDB); ``main`` exists in every DuckDB file already."""
    return exp.Create(this=table_expr(None, schema), kind="SCHEMA", exists=True).sql(dialect=DUCKDB.name)


def create_table_from_frame(schema: str, name: str) -> str:
    """Create ``schema.name`` from the frame registered as EXPORT_FRAME."""
    frame = exp.select(exp.Star()).from_(exp.to_table(EXPORT_FRAME))
    return exp.Create(this=table_expr(schema, name), kind="TABLE", expression=frame).sql(dialect=DUCKDB.name)


def create_view(schema: str, view: str, table: str) -> str:
    """The release's view over its current version, as ppdp defines it (sql/publish.create_view)."""
    current = exp.select(exp.Star()).from_(table_expr(schema, table))
    return exp.Create(this=table_expr(schema, view), kind="VIEW", expression=current).sql(dialect=DUCKDB.name)
