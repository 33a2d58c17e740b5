"""Probe 37, what is verified is what analysts read: the search agrees with the SQL check, a
tampered view is noticed, names cannot collide, the exit codes are the table's.

Every test runs the ``ppdp`` command (tests/support/cli.py); ``PPDP_CLI_SRC=/path/src`` runs an
older worktree's command in a subprocess instead, which is how each was shown to fail at 1175431
(benchmarks/results/probe37/trust-b.md). Bad-input cases are in test_bad_input.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from tests.conftest import load_adult, toml_str, write_spec
from tests.support.cli import assert_ok, assert_refused, file_state, ppdp

RESEARCH = "workclass = 'Private' AND age < 50"  # 1,223 of the first 2,000 rows: a share of 0.61


def _dp(dmin: float, dmax: float) -> str:
    return (f'[[privacy.models]]\nname = "delta-presence"\ndmin = {dmin}\ndmax = {dmax}\n'
            f"research = {toml_str(RESEARCH)}\n")


@pytest.fixture(scope="module")
def small_template(tmp_path_factory) -> Path:
    return load_adult(tmp_path_factory.mktemp("probe37") / "adult.duckdb", rows=2000)


@pytest.fixture
def db(small_template: Path, tmp_path: Path) -> Path:
    target = tmp_path / "adult.duckdb"
    target.write_bytes(small_template.read_bytes())
    return target


def _verify_passes(db: Path, name: str = "adult") -> None:
    out = assert_ok(ppdp("verify", name, "--db", f"duckdb://{db}"))
    assert "verification passed" in out, out


# --- 6: search-side feasibility equals the SQL check -------------------------------------------


@pytest.mark.parametrize("optimizer, evaluator", [("lattice", "numba"), ("lattice", "duckdb"), ("id-dga", "numba")])
def test_delta_presence_below_the_research_share_suppresses_research_records(db, tmp_path, optimizer, evaluator):
    """dmax = 0.3 under a research share of 0.61: the root keeping 0.3 of the population is a
    release, found by suppressing research records (S*(G) caps each class at dmax x persons);
    never a release that the SQL check then fails (exit 1)."""
    spec = write_spec(tmp_path / "s.toml", db=db, qids=["age", "sex", "race"], models=_dp(0.0, 0.3),
                      optimizer=optimizer, budget=300)
    spec.write_text(spec.read_text().replace("seed = 1\n", f"seed = 1\nevaluator = {toml_str(evaluator)}\n"))
    proc = ppdp("run", str(spec), "--no-progress")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "delta-presence" in proc.stdout and "-> PASS" in proc.stdout
    _verify_passes(db)


def test_a_search_result_the_search_found_infeasible_is_refused_before_any_write(db, tmp_path):
    """A budget of one evaluation (the bottom node, whose classes fall below dmin = 0.5): the
    search's best is infeasible, so the run is refused with exit 3 before any version is
    written, not published and failed by the SQL check (exit 1)."""
    spec = write_spec(tmp_path / "s.toml", db=db, qids=["age", "sex", "race"], models=_dp(0.5, 0.7), budget=1)
    proc = ppdp("run", str(spec), "--no-progress")
    line = assert_refused(proc, "delta-presence", code=3)
    assert "workclass" not in line, "the research predicate is not repeated"
    con = duckdb.connect(str(db), read_only=True)
    try:
        tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables "
                                            "WHERE table_schema = 'published'").fetchall()}
    finally:
        con.close()
    assert tables == set()


def test_quasi_identifiers_swapped_with_a_kept_column_are_refused_before_the_search(db, tmp_path):
    """v1: QIDs age and sex, race kept; v2: QIDs age and race, sex kept. The cross-version rule
    compares classes over one QID set: refused before the search (exit 3, one line), v1 stays."""
    v1 = write_spec(tmp_path / "v1.toml", db=db, qids=["age", "sex"], sensitive=[])
    assert_ok(ppdp("run", str(v1), "--no-progress"))
    v2 = write_spec(tmp_path / "v2.toml", db=db, qids=["age", "race"], sensitive=[])
    before = file_state(db)
    line = assert_refused(ppdp("run", str(v2), "--no-progress"), "quasi-identifiers", "v1", code=3)
    assert "age, sex -> age, race" in line
    after = file_state(db)
    assert after[1] == before[1], "no version table or view was written"
    _verify_passes(db)


# --- 7: verify and a rerun notice a view or version that is not what was published ------------

TAMPER = {
    "view at the source": ('CREATE OR REPLACE VIEW published.adult AS SELECT * FROM main.adult',
                           'does not select exactly "published"."adult__v1"'),
    "version edited": ("UPDATE published.adult__v1 SET age = '*' WHERE ppdp_row_id IN "
                       "(SELECT ppdp_row_id FROM published.adult__v1 LIMIT 1)",
                       '"published"."adult__v1" was changed after it was published'),
    "view and version dropped": ("DROP VIEW published.adult; DROP TABLE published.adult__v1",
                                 '"published"."adult__v1" is missing'),
}


@pytest.mark.parametrize("case", list(TAMPER))
def test_a_tampered_view_or_version_fails_verify_and_a_rerun_publishes_again(db, tmp_path, case):
    sql, reason = TAMPER[case]
    spec = write_spec(tmp_path / "s.toml", db=db, qids=["age", "sex"], sensitive=[])
    assert_ok(ppdp("run", str(spec), "--no-progress"))
    con = duckdb.connect(str(db))
    con.execute(sql)
    con.close()
    url = f"duckdb://{db}"
    proc = ppdp("verify", "adult", "--db", url)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("ppdp: error: ")]
    assert len(errors) == 1 and reason in errors[0], proc.stderr
    js = ppdp("verify", "adult", "--db", url, "--json")
    assert js.returncode == 1 and reason in json.loads(js.stdout)["error"] and reason in js.stderr
    rerun = ppdp("run", str(spec), "--no-progress")
    assert rerun.returncode == 0, rerun.stderr[-2000:]  # not 99 "skipped"
    assert "republished" in rerun.stdout and '"published"."adult__v2"' in rerun.stdout
    _verify_passes(db)
    con = duckdb.connect(str(db), read_only=True)
    try:
        view = con.execute("SELECT * FROM published.adult ORDER BY ppdp_row_id").fetchall()
        table = con.execute("SELECT * FROM published.adult__v2 ORDER BY ppdp_row_id").fetchall()
    finally:
        con.close()
    assert view == table and len(view) > 0
    assert ppdp("run", str(spec), "--no-progress").returncode == 99  # intact again: skipped
