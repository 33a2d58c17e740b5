"""ppdp sql: the rebuild script reproduces the published version row for row (DuckDB here,
PostgreSQL in test_postgres_release), and the other dialects parse back with sqlglot."""

from __future__ import annotations

import duckdb
import pytest
import sqlglot

from ppdp.connectors import connect
from ppdp.engine.app.rebuild import rebuild_script
from ppdp.engine.core.spec import load_spec
from ppdp.engine.release.run import run_release
from tests.conftest import load_adult, write_spec

T = '[[privacy.models]]\nname = "k-anonymity"\nk = 4\n[[privacy.models]]\nname = "t-closeness"\nt = 0.3\n'


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sqlgen")
    db = load_adult(tmp / "src.duckdb", rows=5000)
    run_release(load_spec(write_spec(tmp / "s.toml", db=db, qids=["age", "education", "sex", "race"], models=T, output="adult")), progress=False)
    con = connect(f"duckdb://{db}")
    scripts = {d: rebuild_script(con, "adult", d) for d in ("duckdb", "postgres", "snowflake", "bigquery", "spark")}
    con.close()
    return tmp, db, scripts


def test_duckdb_script_rebuilds_the_version_on_a_fresh_database(published):
    tmp, db, scripts = published
    fresh = load_adult(tmp / "fresh.duckdb", rows=5000)
    con = duckdb.connect(str(fresh))
    for stmt in sqlglot.parse(scripts["duckdb"], read="duckdb"):
        con.execute(stmt.sql(dialect="duckdb"))
    rebuilt = con.execute("SELECT * FROM published.adult ORDER BY ppdp_row_id").fetchall()
    con.close()
    src = duckdb.connect(str(db), read_only=True)
    original = src.execute("SELECT * FROM published.adult__v1 ORDER BY ppdp_row_id").fetchall()
    src.close()
    assert len(original) > 1000 and rebuilt == original


@pytest.mark.parametrize("dialect", ["postgres", "snowflake", "bigquery", "spark"])
def test_other_dialects_parse_back(published, dialect):
    _, _, scripts = published
    statements = sqlglot.parse(scripts[dialect], read=dialect, error_level=sqlglot.ErrorLevel.RAISE)
    kinds = [type(s).__name__ for s in statements]
    assert kinds.count("Create") >= 6 and "Insert" in kinds
    create_table = [s for s in statements if isinstance(s, sqlglot.exp.Create) and s.args.get("kind") == "TABLE" and s.expression is not None]
    assert len(create_table) == 1 and "adult__v1" in create_table[0].sql(dialect=dialect)


def test_unknown_dialect_is_an_error(published):
    tmp, db, _ = published
    from ppdp.errors import SpecError

    con = connect(f"duckdb://{db}")
    with pytest.raises(SpecError, match="Unknown dialect 'oracle'"):
        rebuild_script(con, "adult", "oracle")
    con.close()
