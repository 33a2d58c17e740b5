"""adult released inside a throwaway PostgreSQL server, checked against the same release on DuckDB.

The source is loaded once (ADBC bulk ingest) into ``public.adult`` and, from the same frame, into
a DuckDB file, so keys are identical. Each spec runs on both; TD, levels, suppressed keys and the
published rows must be identical, and the connector's statement log shows that the histogram
GROUP BY and the verification queries ran in PostgreSQL.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

import ppdp.engine.release.run as release_module
from ppdp.connectors import connect
from ppdp.connectors.postgres_connector import PostgresConnector
from ppdp.engine.core.spec import ReleaseSpec, load_spec
from ppdp.engine.release.run import run_release
from ppdp.sql import queries as Q
from ppdp.sql.dialect import POSTGRES
from tests.conftest import ADULT, ADULT_COLUMNS, ADULT_QIDS, toml_str, write_spec

pytestmark = pytest.mark.postgres

K5 = '[[privacy.models]]\nname = "k-anonymity"\nk = 5\n'
T02 = '[[privacy.models]]\nname = "t-closeness"\nt = 0.2\n'
ADULT_ROWS = 30162


def adult_frame() -> pl.DataFrame:
    frame = pl.read_csv(ADULT / "adult.csv", separator=";")
    return frame.with_row_index("id", offset=1).with_columns(pl.col("id").cast(pl.Int64))


@pytest.fixture(scope="module")
def adult_sources(postgres_server, tmp_path_factory) -> Iterator[tuple[str, Path]]:
    """(URL of a PostgreSQL database holding public.adult, DuckDB file holding main.adult)."""
    frame = adult_frame()
    name = f"adult_{uuid.uuid4().hex[:8]}"
    admin = connect(postgres_server.url)
    admin.execute(f'CREATE DATABASE "{name}"')
    url = postgres_server.url_for(name)
    duck = tmp_path_factory.mktemp("pg_release") / "adult.duckdb"
    try:
        for target, schema in ((url, "public"), (f"duckdb://{duck}", "main")):
            con = connect(target)
            try:
                con.write_frame(schema, "adult", frame)
            finally:
                con.close()
        yield url, duck
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


@pytest.fixture
def opened(monkeypatch) -> list:
    """Every connector run_release opens (it closes them; their logs remain readable)."""
    seen: list = []

    def recording_connect(url: str, **options):
        con = connect(url, **options)
        seen.append(con)
        return con

    monkeypatch.setattr(release_module, "connect", recording_connect)
    return seen


def spec_for(path: Path, url: str, schema: str, **kw) -> ReleaseSpec:
    """A release spec like tests/conftest.py ``write_spec`` writes, for any database URL."""
    placeholder = Path("/placeholder.duckdb")
    write_spec(path, db=placeholder, schema_line=f"schema = {toml_str(schema)}", **kw)
    text = path.read_text()
    path.write_text(text.replace(f"database = {toml_str('duckdb://' + str(placeholder))}", f"database = {toml_str(url)}"))
    assert path.read_text() != text
    return load_spec(path)


def published(con, release: str, version: int) -> tuple[pl.DataFrame, list[str]]:
    view = con.query(f'SELECT * FROM published."{release}"').drop(Q.ROW_ID)  # random per database
    keys = con.query("SELECT key FROM _ppdp.suppressed WHERE release = ? AND version = ? ORDER BY key", [f'"published"."{release}"', version])
    return view.sort(view.columns), keys["key"].to_list()


@pytest.mark.parametrize(("models", "output"), [(K5, "adult_k5"), (T02, "adult_t02")], ids=["k5", "t0.2"])
def test_adult_release_inside_postgres_matches_duckdb(adult_sources, opened, tmp_path, models, output, capsys):
    pg_url, duck = adult_sources
    pg_spec = spec_for(tmp_path / "postgres.toml", pg_url, "public", models=models, output=output)
    duck_spec = spec_for(tmp_path / "duckdb.toml", f"duckdb://{duck}", "main", models=models, output=output)

    pg_out = run_release(pg_spec, progress=False)
    pg_con = opened[-1]
    assert isinstance(pg_con, PostgresConnector)
    duck_out = run_release(duck_spec, progress=False)

    # the release succeeded and its independent SQL verification passed, inside PostgreSQL
    assert pg_out.run.status == "succeeded" and pg_out.result.certified
    assert pg_out.run.verification["passed"]
    log = pg_con.statements
    histogram = Q.histogram_query(Q.Source("public", "adult", None, POSTGRES), ADULT_QIDS, ["salary-class"])
    assert histogram in log, "the histogram GROUP BY was not sent to PostgreSQL"
    for check in pg_out.run.verification["checks"]:
        assert check["query"] in log, f"verification of {check['model']} did not run in PostgreSQL"
    assert any(s.startswith("CREATE TABLE") and '"published"' in s for s in log)
    assert log.index(histogram) < log.index("BEGIN") < log.index("COMMIT")

    # identical to DuckDB: optimum, levels, suppressed keys, published rows
    assert pg_out.result.td == duck_out.result.td
    assert pg_out.run.solution["levels"] == duck_out.run.solution["levels"]
    assert pg_out.run.metrics["released_records"] == duck_out.run.metrics["released_records"]
    for a, b in zip(pg_out.run.verification["checks"], duck_out.run.verification["checks"], strict=True):
        assert a["classes"] == b["classes"] and a["ad"] == pytest.approx(b["ad"], abs=1e-9)
    pg_read, duck_read = connect(pg_url), connect(f"duckdb://{duck}")
    try:
        pg_rows, pg_keys = published(pg_read, output, pg_out.run.version)
        duck_rows, duck_keys = published(duck_read, output, duck_out.run.version)
    finally:
        pg_read.close()
        duck_read.close()
    assert pg_rows.height == duck_rows.height == ADULT_ROWS - pg_out.run.metrics["suppressed"]
    assert pg_keys == duck_keys
    assert pg_rows.columns == duck_rows.columns == [c for c in adult_frame().columns if c != "id"]
    assert pg_rows.equals(duck_rows)

    with capsys.disabled():
        print(f"\n[{output}] PostgreSQL: {len(log)} statements, {pg_con.bytes_in:,} Arrow bytes in, "
              f"{pg_con.bytes_out:,} Arrow bytes out; TD {pg_out.result.td:.4f}, {pg_rows.height} rows published")


def test_view_switch_survives_a_renamed_source_column(postgres_database, tmp_path):
    """PostgreSQL refuses CREATE OR REPLACE VIEW when a column's name changes: the switch must
    drop and recreate the view then (inside the publishing transaction)."""
    con = connect(postgres_database)
    try:
        con.write_frame("public", "adult", adult_frame().head(3000))
        spec = spec_for(tmp_path / "small.toml", postgres_database, "public", qids=["age", "sex", "race"], models=K5,
                        output="adult_small", hierarchies={"age": '{ type = "intervals", widths = [5, 10, 20] }'})
        assert run_release(spec, progress=False).run.version == 1
        con.execute('ALTER TABLE public.adult RENAME COLUMN "workclass" TO "work class"')
        con.execute("UPDATE public.adult SET \"work class\" = 'changed' WHERE id = 7")
        # Every source column needs a role: the renamed one is kept under its new name.
        keep = [c for c in ADULT_COLUMNS if c not in {"id", "age", "sex", "race", "salary-class", "workclass"}] + ["work class"]
        spec = spec_for(tmp_path / "small2.toml", postgres_database, "public", qids=["age", "sex", "race"], models=K5,
                        output="adult_small", hierarchies={"age": '{ type = "intervals", widths = [5, 10, 20] }'}, keep=keep)
        second = run_release(spec, progress=False)
        assert second.run.status == "succeeded" and second.run.version == 2
        cols = [c for c, _ in con.relation_columns("published", "adult_small")]
        assert "work class" in cols and "workclass" not in cols
        assert con.query('SELECT COUNT(*) AS n FROM published."adult_small"')["n"][0] == second.run.metrics["released_records"]
    finally:
        con.close()
