"""Every bad input of the foundation issue (point 11): a clear error, and the database unchanged."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from ppdp.engine.errors import DataError, HierarchyError, SpecError
from ppdp.engine.release import run_release
from ppdp.engine.spec import load_spec
from tests.conftest import ADULT, load_adult, snapshot, write_spec

SMALL = ["age", "sex", "race"]


@pytest.fixture
def small_db(tmp_path) -> Path:
    return load_adult(tmp_path / "small.duckdb", rows=500)


def expect_failure(spec_path: Path, db: Path, error: type[Exception], pattern: str) -> None:
    before = snapshot(db)
    with pytest.raises(error, match=pattern):
        run_release(load_spec(spec_path), progress=False)
    assert snapshot(db) == before, "a failed run must leave the database as it was"


def test_missing_table(small_db, tmp_path):
    spec = write_spec(tmp_path / "s.toml", db=small_db, table="adlut", qids=SMALL)
    expect_failure(spec, small_db, DataError, r"Source table \"adlut\" does not exist in duckdb://.*Hint")


def test_missing_column_suggests_the_name(small_db, tmp_path):
    spec = write_spec(tmp_path / "s.toml", db=small_db, qids=["age", "sex", "raec"],
                      hierarchies={"raec": str(ADULT / "adult_hierarchy_race.csv")})
    expect_failure(spec, small_db, DataError, r"quasi-identifier column 'raec' is not in .*Did you mean 'race'\?")


def test_value_missing_from_hierarchy_names_column_value_and_file(small_db, tmp_path):
    short = tmp_path / "race.csv"
    rows = [r for r in (ADULT / "adult_hierarchy_race.csv").read_text().splitlines() if not r.startswith("Black")]
    short.write_text("\n".join(rows) + "\n")
    spec = write_spec(tmp_path / "s.toml", db=small_db, qids=SMALL, hierarchies={"race": str(short)})
    expect_failure(spec, small_db, HierarchyError, rf"Column 'race' has value\(s\) 'Black' .*\({short}\)")


def test_nulls_in_qids_error_policy_and_suppress_policy(small_db, tmp_path):
    con = duckdb.connect(str(small_db))
    con.execute("UPDATE adult SET age = NULL WHERE id IN (1, 2, 3)")
    con.close()
    spec = write_spec(tmp_path / "s.toml", db=small_db, qids=SMALL)
    expect_failure(spec, small_db, DataError, r"3 source rows have NULL in quasi-identifier\(s\) 'age'.*null_policy")
    spec2 = write_spec(tmp_path / "s2.toml", db=small_db, qids=SMALL, extra_source='null_policy = "suppress"')
    out = run_release(load_spec(spec2), progress=False)
    assert out.run.verification["passed"]
    assert out.run.metrics["suppressed"] >= 3
    con = duckdb.connect(str(small_db), read_only=True)
    withheld = {r[0] for r in con.execute("SELECT key FROM _ppdp.suppressed").fetchall()}
    con.close()
    assert {"1", "2", "3"} <= withheld


def test_empty_table(small_db, tmp_path):
    con = duckdb.connect(str(small_db))
    con.execute("CREATE TABLE empty AS SELECT * FROM adult WHERE false")
    con.close()
    spec = write_spec(tmp_path / "s.toml", db=small_db, table="empty", qids=SMALL)
    expect_failure(spec, small_db, DataError, "is empty: there is nothing to release")


def test_k_larger_than_table(small_db, tmp_path):
    spec = write_spec(tmp_path / "s.toml", db=small_db, qids=SMALL, models='[[privacy.models]]\nname = "k-anonymity"\nk = 501\n')
    expect_failure(spec, small_db, DataError, r"k = 501 is larger than the table \(500 rows\)")


@pytest.mark.parametrize("t", ["0", "1.5", "-0.1", '"0.2"'])
def test_t_outside_unit_interval(small_db, tmp_path, t):
    spec = write_spec(tmp_path / "s.toml", db=small_db, qids=SMALL, models=f'[[privacy.models]]\nname = "t-closeness"\nt = {t}\n')
    expect_failure(spec, small_db, SpecError, r"t-closeness needs t in \(0, 1\]")


def test_malformed_toml(small_db, tmp_path):
    spec = write_spec(tmp_path / "s.toml", db=small_db, qids=SMALL)
    spec.write_text(spec.read_text().replace("[output]", "[output"))
    before = snapshot(small_db)
    with pytest.raises(SpecError, match=r"is not valid TOML: .*line \d+"):
        load_spec(spec)
    assert snapshot(small_db) == before


def test_unknown_model_and_key_suggest_names(small_db, tmp_path):
    spec = write_spec(tmp_path / "s.toml", db=small_db, qids=SMALL, models='[[privacy.models]]\nname = "k-anonimity"\nk = 2\n')
    expect_failure(spec, small_db, SpecError, "Unknown privacy model 'k-anonimity'. Did you mean 'k-anonymity'")
    spec.write_text(spec.read_text().replace("k-anonimity", "k-anonymity").replace("budget =", "budgett ="))
    with pytest.raises(SpecError, match="Unknown key 'budgett' in \\[optimizer\\]. Did you mean 'budget'"):
        load_spec(spec)


def test_names_that_need_quoting_work_end_to_end(tmp_path):
    """Spaces, double quotes and SQL keywords in table and column names; an injection attempt
    as a name is just a name."""
    db = tmp_path / "weird.duckdb"
    table = 'my "odd" table; DROP TABLE adult; --'
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE adult AS SELECT CAST(row_number() OVER () AS BIGINT) AS id, * FROM read_csv(?, delim=';', header=true) LIMIT 800",
                [str(ADULT / "adult.csv")])
    con.execute('CREATE TABLE "my ""odd"" table; DROP TABLE adult; --" AS SELECT id AS "select", age AS "the age", sex AS "se""x", '
                'race AS "from", "salary-class" AS "salary class" FROM adult')
    con.close()
    spec = write_spec(tmp_path / "w.toml", db=db, table=table, key="select", qids=["the age", 'se"x', "from"],
                      hierarchies={"the age": str(ADULT / "adult_hierarchy_age.csv"), 'se"x': str(ADULT / "adult_hierarchy_sex.csv"),
                                   "from": str(ADULT / "adult_hierarchy_race.csv")},
                      sensitive=["salary class"], output='rel "x"; --', keep=[],
                      models='[[privacy.models]]\nname = "k-anonymity"\nk = 3\n[[privacy.models]]\nname = "t-closeness"\nt = 0.3\n')
    out = run_release(load_spec(spec), progress=False)
    assert out.run.verification["passed"]
    con = duckdb.connect(str(db), read_only=True)
    cols = [r[0] for r in con.execute("SELECT column_name FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position", ['rel "x"; --']).fetchall()]
    still_there = con.execute("SELECT COUNT(*) FROM adult").fetchone()[0]
    mins = con.execute('SELECT MIN(n) FROM (SELECT COUNT(*) AS n FROM published."rel ""x""; --" GROUP BY "the age", "se""x", "from")').fetchone()[0]
    con.close()
    assert cols == ["ppdp_row_id", "the age", 'se"x', "from", "salary class"]
    assert still_there == 800 and mins >= 3


def test_cli_bad_input_exit_code_2_one_line(small_db, tmp_path):
    spec = write_spec(tmp_path / "s.toml", db=small_db, table="nope", qids=SMALL)
    before = snapshot(small_db)
    proc = subprocess.run([sys.executable, "-m", "ppdp.engine.cli", "run", str(spec), "--no-progress"], capture_output=True, text=True)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ppdp: error: Source table") and "does not exist" in lines[0]
    assert snapshot(small_db) == before
