"""``ppdp sql`` is a capability of each release method (engine/methods/base.py ``rebuild_rows``):
it used to assume generalization and died with ``KeyError: 'levels'`` on the other two.

A microaggregation version is rebuilt from its groups, labels and forged records, a
heterogeneous one from its generalized values, each by the SELECT the method ran when it
published them (the generalization script is covered by tests/adapters/test_sql_dialects.py and
the PostgreSQL tests). Records withheld for privacy across versions are left out as they were;
a version whose rows stand for records the source no longer has is refused in one line."""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl
import pytest
import sqlglot

from ppdp.connectors import connect
from ppdp.engine.app.cli import main
from ppdp.engine.app.rebuild import rebuild_script
from ppdp.engine.core.spec import load_spec
from ppdp.engine.release.run import run_release
from tests.conftest import load_adult, snapshot
from tests.releases.test_heterogeneous_versions import LONE, spec_of
from tests.releases.test_microaggregation_release import K8, adult_with_disease, micro_spec
from tests.releases.test_microaggregation_versions import change, dynamic_spec
from tests.support.cli import ppdp

OTHER_DIALECTS = ("postgres", "snowflake", "bigquery", "spark")


def scripts(db: Path, name: str) -> dict[str, str]:
    con = connect(f"duckdb://{db}")
    try:
        return {d: rebuild_script(con, name, d) for d in ("duckdb", *OTHER_DIALECTS)}
    finally:
        con.close()


def published(db: Path, name: str, version: int) -> pl.DataFrame:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.sql(f'SELECT * FROM published."{name}__v{version}" ORDER BY ppdp_row_id').pl()
    finally:
        con.close()


def rebuilt_on_fresh_duckdb(db: Path, script: str, name: str, fresh: Path) -> pl.DataFrame:
    """The script run on a new database that holds only a copy of the source table."""
    con = duckdb.connect(str(fresh))
    try:
        con.execute(f"ATTACH '{db}' AS origin (READ_ONLY)")
        con.execute("CREATE TABLE adult AS SELECT * FROM origin.adult")
        con.execute("DETACH origin")
        for stmt in filter(None, sqlglot.parse(script, read="duckdb")):
            con.execute(stmt.sql(dialect="duckdb"))
        return con.sql(f'SELECT * FROM published."{name}" ORDER BY ppdp_row_id').pl()
    finally:
        con.close()


def assert_rebuilds(db: Path, name: str, version: int, tmp_path: Path) -> dict[str, str]:
    out = scripts(db, name)
    original = published(db, name, version)
    rebuilt = rebuilt_on_fresh_duckdb(db, out["duckdb"], name, tmp_path / f"fresh_{name}_v{version}.duckdb")
    assert rebuilt.schema == original.schema
    assert rebuilt.rows() == original.rows() and original.height > 0
    for d in OTHER_DIALECTS:  # the same script in every dialect parses back
        statements = sqlglot.parse(out[d], read=d, error_level=sqlglot.ErrorLevel.RAISE)
        tables = [s for s in statements if isinstance(s, sqlglot.exp.Create) and s.args.get("kind") == "TABLE"
                  and s.expression is not None]
        assert len(statements) > len(tables) > 0
        assert len(tables) == 1 and f"{name}__v{version}" in tables[0].sql(dialect=d)
    return out


def test_microaggregation_versions_are_rebuilt_with_withheld_records_left_out(tmp_path):
    """v2 adds one record unlike the rest: it and the forged record DRASL adds to its group are
    withheld by the history stage; the script leaves both out, as the version did."""
    db = adult_with_disease(tmp_path / "m.duckdb", rows=400)
    spec = load_spec(dynamic_spec(tmp_path, db))
    run_release(spec, progress=False)
    v1 = assert_rebuilds(db, "adult_micro", 1, tmp_path)["duckdb"]
    assert '"ppdp_rebuild"."micro_groups"' in v1 and '"ppdp_rebuild"."hierarchies"' not in v1
    change(db, ["INSERT INTO adult SELECT 500000, sex, 99, * EXCLUDE (id, sex, age) FROM adult WHERE id = 7"])
    run = run_release(spec, progress=False).run
    held = run.cross_version["held_back"]
    assert run.version == 2 and held["inserts_withheld"] >= 1 and held["deletes_delayed"] == held["changes_delayed"] == 0
    assert_rebuilds(db, "adult_micro", 2, tmp_path)
    # in process, as the command: the script on stdout, exit 0
    assert main(["sql", "adult_micro", "--db", f"duckdb://{db}"]) == 0


def test_published_forged_rows_are_rebuilt_with_the_sensitive_columns_type(tmp_path):
    """K = 2: one new record and its forged record are published together; the forged row's
    sensitive value is cast to the column's type, as when it was published."""
    db = adult_with_disease(tmp_path / "m.duckdb", rows=400)
    p = micro_spec(tmp_path / "s.toml", db, 'catalogue = "diseases32", k = 2', models=K8.replace("8", "2"))
    p.write_text(p.read_text() + "[dynamic]\nmax_repair_fraction = 1.0\n")
    spec = load_spec(p)
    run_release(spec, progress=False)
    change(db, ["INSERT INTO adult SELECT id + 200000, adult.* EXCLUDE (id) FROM adult WHERE id = 5"])
    run = run_release(spec, progress=False).run
    forged = next(c for c in run.verification["method_checks"] if "forged_rows" in c)["forged_rows"]
    assert run.version == 2 and forged > 0
    out = assert_rebuilds(db, "adult_micro", 2, tmp_path)
    assert "UNION ALL" in out["duckdb"] and "CAST(mg.sa AS" in out["duckdb"]


def test_heterogeneous_versions_are_rebuilt_with_a_withheld_insert_left_out(tmp_path):
    db = load_adult(tmp_path / "h.duckdb", rows=300)
    spec = spec_of(tmp_path, db)
    run_release(spec, progress=False)
    v1 = assert_rebuilds(db, "adult_het", 1, tmp_path)["duckdb"]
    assert '"ppdp_rebuild"."hetero_values"' in v1 and '"age_min"' in v1
    change(db, [LONE])
    run = run_release(spec, progress=False).run
    assert run.version == 2 and run.metrics["held_back"]["inserts_withheld"] == 1
    assert_rebuilds(db, "adult_het", 2, tmp_path)


def test_a_microaggregation_version_with_standing_rows_is_refused_in_one_line(tmp_path):
    """Deleted records whose rows stand in v2 (held back) are not in the source: no script can
    rebuild them from it. The command says so on one line, exits 2 and prints no script."""
    db = adult_with_disease(tmp_path / "m.duckdb", rows=400)
    spec = load_spec(dynamic_spec(tmp_path, db))
    run_release(spec, progress=False)
    change(db, ["DELETE FROM adult WHERE id % 50 = 1"])
    run = run_release(spec, progress=False).run
    assert run.cross_version["held_back"]["deletes_delayed"] > 0
    before = snapshot(db)
    # the command in this process (tests/support/cli.py; PPDP_TEST_CLI_SUBPROCESS=1: a subprocess),
    # exit code, stdout and stderr as the entry point gives them
    proc = ppdp("sql", "adult_micro", "--db", f"duckdb://{db}")
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ppdp: error: v2 of ") and "held back" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert snapshot(db) == before


@pytest.mark.postgres
@pytest.mark.parametrize("method", ["microaggregation", "heterogeneous"])
def test_duckdb_releases_of_both_methods_rebuild_on_postgres(tmp_path, postgres_database, method):
    if method == "microaggregation":  # forged rows published: the cast type is written for PostgreSQL
        db = adult_with_disease(tmp_path / "m.duckdb", rows=400)
        p = micro_spec(tmp_path / "s.toml", db, 'catalogue = "diseases32", k = 2', models=K8.replace("8", "2"))
        p.write_text(p.read_text() + "[dynamic]\nmax_repair_fraction = 1.0\n")
        spec, name = load_spec(p), "adult_micro"
        run_release(spec, progress=False)
        change(db, ["INSERT INTO adult SELECT id + 200000, adult.* EXCLUDE (id) FROM adult WHERE id = 5"])
    else:  # numeric bounds travel as DOUBLE literals
        db = load_adult(tmp_path / "h.duckdb", rows=300)
        spec, name = spec_of(tmp_path, db), "adult_het"
        run_release(spec, progress=False)
        change(db, [LONE])
    assert run_release(spec, progress=False).run.version == 2
    script = scripts(db, name)["postgres"]
    original = published(db, name, 2)
    origin = duckdb.connect(str(db), read_only=True)
    source = origin.sql("SELECT * FROM adult").pl()
    origin.close()
    pg = connect(postgres_database)
    try:
        pg.write_frame("public", "adult", source)
        for stmt in filter(None, sqlglot.parse(script, read="postgres")):
            pg.execute(stmt.sql(dialect="postgres"))
        rebuilt = pg.query(f'SELECT * FROM published."{name}" ORDER BY ppdp_row_id')
    finally:
        pg.close()
    assert rebuilt.columns == original.columns and rebuilt.height == original.height > 0
    assert rebuilt.rows() == original.rows()
