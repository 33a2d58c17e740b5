"""SQL of ``ppdp demo``: load the bundled adult CSV, and the analyst query shown on the release."""

from __future__ import annotations

from sql.quoting import quote_ident


def load_csv_with_id(table: str) -> str:
    """CREATE ``table`` from the ';'-separated CSV whose path is bound as ``?``, with a BIGINT
    ``id`` column numbering the rows first (the release spec's key)."""
    return (f"CREATE TABLE {quote_ident(table)} AS SELECT CAST(row_number() OVER () AS BIGINT) AS id, * "
            "FROM read_csv(?, delim = ';', header = true, all_varchar = false)")


# What an analyst might ask of the published 5-anonymous view (engine/data/adult_k5.toml
# publishes published.adult): people per occupation and their share over 50K. A fixed
# constant, printed and run as is by the demo.
ANALYST_QUERY = (
    "SELECT occupation, COUNT(*) AS people,\n"
    "       ROUND(100.0 * AVG(CASE WHEN \"salary-class\" = '>50K' THEN 1 ELSE 0 END), 1) AS pct_over_50k\n"
    "FROM published.adult\nGROUP BY occupation\nORDER BY people DESC\nLIMIT 8"
)
