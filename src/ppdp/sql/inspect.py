"""Read-only probes of a source relation."""

from __future__ import annotations


def empty_select(source_from: str) -> str:
    """No rows, all columns: the column names of a FROM-clause text (``Source.sql()``)."""
    return f"SELECT * FROM {source_from} LIMIT 0"
