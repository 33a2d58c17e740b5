"""SQL of ``ppdp demo``: load the bundled adult CSV, and the analyst query shown on the release."""

from __future__ import annotations

from ppdp.sql.dialect import DUCKDB
from ppdp.sql.quoting import quote_ident


def load_csv_with_id(table: str) -> str:
    """CREATE ``table`` from the ';'-separated CSV whose path is bound as ``?``, with a BIGINT
    ``id`` column numbering the rows first (the release spec's key)."""
    return (f"CREATE TABLE {quote_ident(table, DUCKDB)} AS SELECT CAST(row_number() OVER () AS BIGINT) AS id, * "
            "FROM read_csv(?, delim = ';', header = true, all_varchar = false)")


# What an analyst might ask of the published 5-anonymous view (engine/data/adult_k5.toml
# publishes published.adult): people per occupation and their share over 50K. A fixed
# constant, printed and run as is by the demo.
ANALYST_QUERY = (
    "SELECT occupation, COUNT(*) AS people,\n"
    "       ROUND(100.0 * AVG(CASE WHEN \"salary-class\" = '>50K' THEN 1 ELSE 0 END), 1) AS pct_over_50k\n"
    "FROM published.adult\nGROUP BY occupation\nORDER BY people DESC\nLIMIT 8"
)


def load_csv_sample_with_id(table: str, rows: int) -> str:
    """``load_csv_with_id`` limited to the first ``rows`` rows (an integer, not user text)."""
    return load_csv_with_id(table) + f" LIMIT {int(rows)}"


def add_catalogue_column(table: str, column: str) -> list[str]:
    """Statements adding ``column`` filled from the list bound as ``?`` by a fixed hash of ``id``
    (a sensitive value for the warm-up's microaggregation release)."""
    t, c = quote_ident(table, DUCKDB), quote_ident(column, DUCKDB)
    return [f"ALTER TABLE {t} ADD COLUMN {c} VARCHAR",
            f"UPDATE {t} SET {c} = list_extract(?, CAST(hash(id, 7) % len(?) AS INTEGER) + 1)"]
