"""``ppdp sql --dialect postgres`` of a DuckDB release must run on PostgreSQL and give
the same rows: DuckDB's ``* EXCLUDE`` in source.query used to come out as ``* EXCEPT`` (not
PostgreSQL), and a DOUBLE quasi-identifier rebuilt to 0 rows ('39.0' in DuckDB, '39' in
PostgreSQL for CAST(double AS VARCHAR), so no source value matched a hierarchy leaf)."""

from __future__ import annotations

import duckdb
import pytest
import sqlglot

from ppdp.connectors import connect
from ppdp.engine.app.rebuild import rebuild_script
from ppdp.engine.core.spec import load_spec
from ppdp.engine.release.run import run_release
from tests.conftest import load_adult, write_spec

pytestmark = pytest.mark.postgres

QUERY = "SELECT * EXCLUDE (race) FROM adult_d WHERE id <= 2000"


@pytest.fixture(params=["table", "exclude-query"])
def duck_release(request, tmp_path):
    db = load_adult(tmp_path / "src.duckdb", rows=2000)
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE adult_d AS SELECT * REPLACE (CAST(age AS DOUBLE) AS age) FROM adult")
    assert con.execute("SELECT typeof(age) FROM adult_d LIMIT 1").fetchone()[0] == "DOUBLE"
    con.close()
    keep = ["marital-status", "native-country", "occupation", "workclass"] + (["race"] if request.param == "table" else [])
    path = write_spec(tmp_path / "s.toml", db=db, qids=["age", "sex", "education"], output="adult_d", keep=keep,
                      hierarchies={"age": '{ type = "intervals", widths = [10, 20, 40] }'})
    source = f"query = {QUERY!r}".replace("'", '"') if request.param == "exclude-query" else 'table = "adult_d"'
    path.write_text(path.read_text().replace('table = "adult"', source))
    outcome = run_release(load_spec(path), progress=False)
    assert outcome.run.status == "succeeded"
    return db, request.param


@pytest.mark.slow
def test_duckdb_release_with_double_qid_and_exclude_rebuilds_on_postgres(duck_release, postgres_database):
    db, kind = duck_release
    con = connect(f"duckdb://{db}")
    script = rebuild_script(con, "adult_d", "postgres")
    original = con.query('SELECT * FROM published."adult_d__v1" ORDER BY ppdp_row_id')
    leaves = con.query("SELECT leaf FROM _ppdp.hierarchies WHERE attribute = 'age' AND level = 0")["leaf"].to_list()
    source = con.query("SELECT * FROM adult_d")
    con.close()
    if kind == "exclude-query":
        assert "EXCEPT" not in script.upper() and '"race"' not in script and "race" not in original.columns
    assert "39" in leaves and "39.0" not in leaves  # the canonical text of an integral double
    pg = connect(postgres_database)
    try:
        pg.write_frame("public", "adult_d", source)
        assert pg.relation_columns("public", "adult_d")[2] == ("age", "double precision")
        for stmt in sqlglot.parse(script, read="postgres"):
            pg.execute(stmt.sql(dialect="postgres"))
        rebuilt = pg.query('SELECT * FROM published."adult_d" ORDER BY ppdp_row_id')
    finally:
        pg.close()
    assert original.height > 1500
    assert rebuilt.rows() == original.rows()
