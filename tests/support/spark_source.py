"""Adult in a DuckDB file and, table for table, in the test Spark session's warehouse."""

from __future__ import annotations

import uuid
from pathlib import Path

import duckdb

__all__ = ["adult_in_duckdb_and_spark"]


def adult_in_duckdb_and_spark(tmp_path: Path, spark_url: str, *, rows: int) -> tuple[Path, str, str]:
    """The first ``rows`` rows of adult in ``main.adult`` of a new DuckDB file and in a fresh
    schema of its own there and in Spark: ``(db, schema, release_name)``, the release name
    unique to this call too (the Spark session is shared by every Spark test of the process)."""
    from ppdp.connectors import connect
    from tests.conftest import load_adult

    db = load_adult(tmp_path / "a.duckdb", rows=rows)
    schema = f"src_{uuid.uuid4().hex[:8]}"
    con = duckdb.connect(str(db))
    frame = con.sql("SELECT * FROM adult").pl()
    con.execute(f'CREATE SCHEMA "{schema}"')
    con.execute(f'CREATE TABLE "{schema}".adult AS SELECT * FROM main.adult')
    con.close()
    sp = connect(spark_url)
    sp.execute(f"CREATE SCHEMA `{schema}`")
    sp.write_frame(schema, "adult", frame)
    sp.close()
    return db, schema, f"adult_{schema}"
