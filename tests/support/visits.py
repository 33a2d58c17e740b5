"""Synthetic visits tables: adult persons with several rows each (docs/design/person_unit.md).

Each of the first ``persons`` adult records becomes a person (``person_id`` = its id) with 1 to 4
visit rows (``visit_id`` the key); the person-level columns (age, sex, race, marital-status,
salary-class) repeat on every visit row, ``visit_month`` varies by row. Deterministic: the
number of visits and the months are arithmetic on the id.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from tests.conftest import ADULT

VISIT_QIDS = ["age", "sex", "race", "marital-status"]
VISIT_SA = "salary-class"


def visits_select(adult: str, persons: int) -> str:
    """The SELECT of a visits table over the adult relation ``adult`` (with an ``id`` column)."""
    return (
        "SELECT CAST(row_number() OVER (ORDER BY a.id, g.v) AS BIGINT) AS visit_id, a.id AS person_id, "
        'a.age, a.sex, a.race, a."marital-status", a."salary-class", '
        "CAST(1 + (a.id * 5 + g.v * 7) % 12 AS INTEGER) AS visit_month "
        f"FROM (SELECT * FROM {adult} WHERE id <= {int(persons)}) AS a "
        "CROSS JOIN (SELECT range AS v FROM range(4)) AS g WHERE g.v < 1 + (a.id * 7 % 13) % 4"
    )


def make_visits(db: Path, *, persons: int = 3000, table: str = "visits") -> Path:
    """A DuckDB file holding ``table``: ``persons`` adult persons with 1-4 visits each."""
    con = duckdb.connect(str(db))
    try:
        con.execute("CREATE TEMP TABLE adult_src AS SELECT CAST(row_number() OVER () AS BIGINT) AS id, * "
                    "FROM read_csv(?, delim = ';', header = true)", [str(ADULT / "adult.csv")])
        con.execute(f'CREATE TABLE "{table}" AS {visits_select("adult_src", persons)}')
    finally:
        con.close()
    return db
