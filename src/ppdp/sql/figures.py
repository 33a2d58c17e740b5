"""SQL of the figures computed on a published version table (engine/release/figures.py)."""

from __future__ import annotations

from sqlglot import exp

from ppdp.sql.dialect import Dialect
from ppdp.sql.quoting import columns, count_star, relation


def class_counts(table: str, qids: list[str], d: Dialect) -> str:
    """Each distinct combination of published QID values with its row count (``n``).
    ``table`` is already quoted; the QID columns are user identifiers, quoted here."""
    return (exp.select(*columns(qids), count_star("n")).from_(relation(table, d)).group_by(*columns(qids))
            .sql(dialect=d.name))
