"""SQL of a file source (``source.file``): a DuckDB table function reading the file."""

from __future__ import annotations

from sqlglot import exp

READERS = frozenset({"read_parquet", "read_csv"})  # the DuckDB readers a file source may use


def file_query(reader: str, path: str) -> str:
    """``SELECT *`` of DuckDB reader ``reader`` over ``path`` (an absolute path, pasted as an
    escaped string literal: a table function's file argument cannot be a bound parameter here,
    the text becomes the release's source query)."""
    if reader not in READERS:  # the reader is pasted as is, so only our own names may reach it
        raise ValueError(f"unknown file reader {reader!r}; known: {', '.join(sorted(READERS))}")
    return f"SELECT * FROM {reader}({exp.Literal.string(path).sql(dialect='duckdb')})"
