"""SQL of the figures computed on a published version table (engine/release/figures.py)."""

from __future__ import annotations

from ppdp.sql.dialect import Dialect
from ppdp.sql.quoting import quote_ident


def class_counts(table: str, qids: list[str], d: Dialect) -> str:
    """Each distinct combination of published QID values with its row count (``n``).
    ``table`` is already quoted; the QID columns are user identifiers, quoted here."""
    cols = ", ".join(quote_ident(q, d) for q in qids)
    return f"SELECT {cols}, COUNT(*) AS n FROM {table} GROUP BY {cols}"
