"""The person unit on DuckDB, PostgreSQL and Spark: the same visits table, the same release
(levels, persons and rows released, the per-person checks), docs/design/person_unit.md."""

from __future__ import annotations

import uuid
from pathlib import Path

import duckdb
import polars as pl
import pytest

from ppdp.connectors import connect
from ppdp.engine.core.spec import spec_from_dict
from ppdp.engine.release.run import run_release
from tests.conftest import ADULT
from tests.support.visits import VISIT_QIDS, VISIT_SA, make_visits

PERSONS = 800


def visits_frame(tmp_path: Path) -> pl.DataFrame:
    db = make_visits(tmp_path / "v.duckdb", persons=PERSONS)
    con = duckdb.connect(str(db))
    try:
        rows = con.execute("SELECT * FROM visits ORDER BY visit_id").fetchall()
        cols = [d[0] for d in con.description]
    finally:
        con.close()
    return pl.DataFrame(rows, schema=cols, orient="row")


def spec(url: str, schema: str, output: str):
    return spec_from_dict({
        "source": {"database": url, "schema": schema, "table": "visits", "key": "visit_id", "person": "person_id",
                   "drop": ["visit_month"]},
        "quasi_identifiers": [{"column": q, "hierarchy": str(ADULT / f"adult_hierarchy_{q}.csv")} for q in VISIT_QIDS],
        "sensitive": {"columns": [VISIT_SA]},
        "privacy": {"models": [{"name": "k-anonymity", "k": 5}, {"name": "distinct-l-diversity", "l": 2}]},
        "output": {"schema": f"{schema}_pub", "name": output},
    })


def outcome(url: str, schema: str, frame: pl.DataFrame, output: str) -> tuple:
    con = connect(url)
    try:
        con.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        con.write_frame(schema, "visits", frame)
    finally:
        con.close()
    run = run_release(spec(url, schema, output), progress=False).run
    checks = [(c["model"], c["ad"], c["passed"], c.get("unit")) for c in run.verification["checks"]]
    risk = run.verification["risk"]["release"]
    return (run.solution["levels"], run.metrics["released_records"], run.metrics["records"], run.verification["rows"],
            checks, risk["rows"], risk["prosecutor"]["highest"], run.verification["risk"]["unit"])


@pytest.mark.postgres
@pytest.mark.slow
def test_person_release_same_on_duckdb_and_postgres(tmp_path, postgres_database):
    frame = visits_frame(tmp_path)
    on_duckdb = outcome(f"duckdb://{tmp_path / 'd.duckdb'}", "main", frame, "visits")
    on_postgres = outcome(postgres_database, "public", frame, "visits")
    assert on_duckdb == on_postgres
    checks = on_duckdb[4]
    assert all(passed and unit == "person" for _, _, passed, unit in checks) and checks[0][1] >= 5
    assert on_duckdb[6] <= 1 / 5 and on_duckdb[7] == "person (person_id)"


@pytest.mark.spark
@pytest.mark.slow
def test_person_release_same_on_duckdb_and_spark(tmp_path, spark_url):
    frame = visits_frame(tmp_path)
    on_duckdb = outcome(f"duckdb://{tmp_path / 'd.duckdb'}", "main", frame, "visits")
    schema = f"p{uuid.uuid4().hex[:8]}"
    on_spark = outcome(spark_url, schema, frame, "visits")
    assert on_duckdb == on_spark
