"""SQL of ``ppdp export`` (DuckDB only): list a schema's relations, copy them into a new file."""

from __future__ import annotations

from ppdp.sql.quoting import quote_ident, quote_table

EXPORT_FRAME = "__ppdp_export"  # name a copied table's rows are registered under in the target


def schema_relations_query() -> str:
    """Tables and views of one schema (bind the schema name), tables first."""
    return ("SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = ? "
            "ORDER BY table_type, table_name")


def schema_views_query() -> str:
    """DuckDB's stored definitions of the user views of one schema (bind the schema name)."""
    return "SELECT view_name, sql FROM duckdb_views() WHERE schema_name = ? AND NOT internal"


def select_all(schema: str, name: str) -> str:
    return f"SELECT * FROM {quote_table(schema, name)}"


def create_schema(schema: str) -> str:
    return f"CREATE SCHEMA {quote_ident(schema)}"


def create_table_from_frame(schema: str, name: str) -> str:
    """Create ``schema.name`` from the frame registered as EXPORT_FRAME."""
    return f"CREATE TABLE {quote_table(schema, name)} AS SELECT * FROM {EXPORT_FRAME}"
