"""SQL of the figures computed on a published version table (engine/release/stages/record.py)."""

from __future__ import annotations

from sqlglot import exp

from ppdp.sql.dialect import Dialect
from ppdp.sql.quoting import columns, count_star, render, slot


def class_counts(table: str, qids: list[str], d: Dialect) -> str:
    """Each distinct combination of published QID values with its row count (``n``).
    ``table`` is already quoted; the QID columns are user identifiers, quoted here."""
    tree = exp.select(*columns(qids), count_star("n")).from_(slot()).group_by(*columns(qids))
    return render(tree, d, {"relation": table})
