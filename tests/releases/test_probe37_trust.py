"""Probe 37, what is verified is what analysts read: the search agrees with the SQL check, a
tampered view is noticed, names cannot collide, the exit codes are the table's.

Every test runs the ``ppdp`` command (tests/support/cli.py); ``PPDP_CLI_SRC=/path/src`` runs an
older worktree's command in a subprocess instead, which is how each was shown to fail at 1175431
(benchmarks/results/probe37/trust-b.md). Bad-input cases are in test_bad_input.py.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import duckdb
import pytest

from tests.conftest import load_adult, toml_str, write_spec
from tests.support.cli import assert_ok, assert_refused, file_state, ppdp
from tests.support.paths import REPO

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
    release, found by suppressing research records (S*(G) keeps the largest r <= dmax x persons);
    never a release that the SQL check then fails (exit 1)."""
    spec = write_spec(tmp_path / "s.toml", db=db, qids=["age", "sex", "race"], models=_dp(0.0, 0.3),
                      optimizer=optimizer, budget=300)
    spec.write_text(spec.read_text().replace("seed = 1\n", f"seed = 1\nevaluator = {toml_str(evaluator)}\n"))
    proc = ppdp("run", str(spec), "--no-progress")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "delta-presence" in proc.stdout and "-> PASS" in proc.stdout
    _verify_passes(db)
    if optimizer == "lattice":  # S*(G)'s delta-presence term is exact: the optimum is certified
        with duckdb.connect(str(db), read_only=True) as con:
            solution = json.loads(con.execute("SELECT solution FROM _ppdp.runs WHERE status = 'succeeded'").fetchone()[0])
            dropped = con.execute("SELECT count(*) FROM _ppdp.suppressed").fetchone()[0]
        assert solution["certified"] and not solution.get("not_certified_because"), solution
        assert dropped > 0  # research records were dropped to bring delta under dmax


@pytest.mark.parametrize("optimizer", ["ga", "de", "haef", "tlef", "descent", "dfs", "id-ga"])
def test_no_optimizer_ends_a_delta_presence_search_with_a_failed_sql_check(db, tmp_path, optimizer):
    """Every optimizer, dmax below the research share: it publishes a release that passes its
    SQL check, or (a search over S that found no feasible node in its budget) is refused with
    exit 3 before any write; never exit 1 after the search."""
    spec = write_spec(tmp_path / "s.toml", db=db, qids=["age", "sex", "race"], models=_dp(0.0, 0.3),
                      optimizer=optimizer, budget=300)
    proc = ppdp("run", str(spec), "--no-progress")
    if proc.returncode == 3:
        assert_refused(proc, "delta-presence", "budget", code=3)
    else:
        assert proc.returncode == 0, proc.stderr[-2000:]
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


# --- 18: beta-likeness reports the largest gain, the figure beta bounds -------------------------


def test_beta_likeness_achieved_is_the_largest_gain(db, tmp_path):
    spec = write_spec(tmp_path / "s.toml", db=db, qids=["age", "sex", "race"],
                      models='[[privacy.models]]\nname = "beta-likeness"\nbeta = 1.0\n')
    proc = ppdp("run", str(spec), "--no-progress", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (check,) = json.loads(proc.stdout)["models"]
    con = duckdb.connect(str(db), read_only=True)
    try:
        q = dict(con.execute('SELECT "salary-class", COUNT(*) / SUM(COUNT(*)) OVER () FROM main.adult GROUP BY 1').fetchall())
        rows = con.execute('SELECT age, sex, race, "salary-class", COUNT(*) FROM published.adult GROUP BY ALL').fetchall()
    finally:
        con.close()
    size: dict[tuple, int] = {}
    for a, s, r, _, n in rows:
        size[(a, s, r)] = size.get((a, s, r), 0) + n
    gain = max((n / size[(a, s, r)] - q[v]) / q[v] for a, s, r, v, n in rows)
    assert check["passed"] and check["achieved"] == pytest.approx(gain, abs=1e-9)
    assert 0 < check["achieved"] <= 1.0  # a gain, compared with beta = 1: not gain - beta (< 0)
    verified = json.loads(ppdp("verify", "adult", "--db", f"duckdb://{db}", "--json").stdout)
    assert verified["models"][0]["achieved"] == pytest.approx(gain, abs=1e-9)


# --- 17, 21: the exit-code table, row by row ----------------------------------------------------


def _table_rows(path: Path) -> dict[int, str]:
    """code -> name of the exit-code table in a Markdown file."""
    import re

    rows = re.findall(r"^\| (\d+) \| `([A-Z_]+)` \|", path.read_text(), re.MULTILINE)
    return {int(c): n for c, n in rows}


def _signal_worker(db: Path) -> subprocess.CompletedProcess:
    """``ppdp worker`` polling an empty queue, stopped by SIGTERM after it started."""
    import os
    import signal
    import sys
    import time

    from tests.support.cli import OLD_SRC, _src_module

    assert_ok(ppdp("init", "--db", f"duckdb://{db}"))
    env = {**os.environ, "PYTHONPATH": OLD_SRC or str(REPO / "src")}
    proc = subprocess.Popen([sys.executable, "-m", _src_module(OLD_SRC) if OLD_SRC else "ppdp.engine.app.cli", "worker",
                             "--db", f"duckdb://{db}", "--poll", "60"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    if OLD_SRC:  # an older ppdp says nothing when it starts polling
        time.sleep(6)
    else:  # its first line: polling, its SIGTERM handler installed
        assert proc.stderr is not None
        assert "waiting for requests" in proc.stderr.readline()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _internal_error() -> subprocess.CompletedProcess:
    """A bug in a command (one replaced by a function that divides by zero)."""
    import os
    import sys

    from tests.support.cli import OLD_SRC, _src_module

    module = _src_module(OLD_SRC) if OLD_SRC else "ppdp.engine.app.cli"
    code = (f"import sys, {module} as c; c.COMMANDS['runs'] = lambda args: 1 / 0; "
            "sys.exit(c.main(['runs', '--db', 'duckdb://:memory:']))")
    env = {**os.environ, "PYTHONPATH": OLD_SRC or str(REPO / "src")}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def test_every_row_of_the_exit_code_table_is_what_the_command_returns(db, tmp_path):
    """README "Exit codes", docs/reference/exit-codes.md, ``ppdp.ExitCode`` and the JSON schemas
    name the same codes, and each row's situation ends with its code."""
    from ppdp.engine.app.outcome import ExitCode

    readme, docs = _table_rows(REPO / "README.md"), _table_rows(REPO / "docs" / "reference" / "exit-codes.md")
    assert readme == docs == {int(c): c.name for c in ExitCode}
    from ppdp.engine.app.outcome import STATUS

    schemas = REPO / "src/ppdp/engine/data/schemas"
    run_schema = json.loads((schemas / "run.schema.json").read_text())
    assert set(run_schema["properties"]["exit_code"]["enum"]) == set(readme)
    assert set(run_schema["properties"]["status"]["enum"]) == set(STATUS.values())  # one status per code
    for schema in schemas.glob("*.schema.json"):  # every command's codes are rows of the table
        assert set(json.loads(schema.read_text())["properties"]["exit_code"]["enum"]) <= set(readme), schema.name

    url = f"duckdb://{db}"
    spec = write_spec(tmp_path / "s.toml", db=db, qids=["age", "sex"], sensitive=[])
    got: dict[int, int] = {}
    got[0] = ppdp("run", str(spec), "--no-progress").returncode
    got[99] = ppdp("run", str(spec), "--no-progress").returncode
    bad = write_spec(tmp_path / "bad.toml", db=db, qids=["age", "sex"], sensitive=[], table="nope")
    got[2] = ppdp("run", str(bad), "--no-progress").returncode
    refused = write_spec(tmp_path / "r.toml", db=db, qids=["age", "sex"], sensitive=[], output="big",
                         models='[[privacy.models]]\nname = "k-anonymity"\nk = 2001\n')
    got[3] = ppdp("run", str(refused), "--no-progress").returncode
    assert_ok(ppdp("job", "register", str(spec), "--name", "j", "--db", url))
    got[98] = ppdp("job", "run", "j", "--dry-run", "--no-progress", "--db", url).returncode
    con = duckdb.connect(str(db))
    con.execute("UPDATE published.adult__v1 SET age = '*' WHERE ppdp_row_id IN "
                "(SELECT ppdp_row_id FROM published.adult__v1 LIMIT 1)")
    con.close()
    got[1] = ppdp("verify", "adult", "--db", url).returncode
    got[70] = _internal_error().returncode
    got[130] = _signal_worker(tmp_path / "worker.duckdb").returncode
    assert got == {code: code for code in readme}


def test_a_second_version_under_a_model_without_a_history_check_is_refused_with_3(db, tmp_path):
    """Item 17: the cross-version rule refuses it: 3 ("refused"), not 2 ("the spec is wrong")."""
    spec = write_spec(tmp_path / "s.toml", db=db, qids=["age", "sex"], sensitive=[],
                      models='[[privacy.models]]\nname = "sample-uniqueness"\nthreshold = 0.05\n')
    assert_ok(ppdp("run", str(spec), "--no-progress"))
    con = duckdb.connect(str(db))
    con.execute("DELETE FROM adult WHERE id % 50 = 0")
    con.close()
    assert_refused(ppdp("run", str(spec), "--no-progress"), "sample-uniqueness", "union of classes", code=3)


def test_verify_json_errors_go_to_stderr_and_verify_result_has_ok(db, tmp_path):
    """Item 21: ``verify --json`` of an unknown release prints its one line on stderr as well
    as the JSON object; ``VerifyResult.ok`` as ``RunResult.ok``."""
    import os
    import sys

    from tests.support.cli import OLD_SRC

    proc = ppdp("verify", "nope", "--db", f"duckdb://{db}", "--json")
    assert proc.returncode == 2 and json.loads(proc.stdout)["error"]
    assert_refused(proc, "nope", code=2)
    spec = write_spec(tmp_path / "s.toml", db=db, qids=["age", "sex"], sensitive=[])
    assert_ok(ppdp("run", str(spec), "--no-progress"))
    code = ("import sys\ntry:\n    from ppdp.engine.app.api import verify_release\nexcept ImportError:\n"
            "    from ppdp.engine.api import verify_release\n"
            f"r = verify_release('adult', db={f'duckdb://{db}'!r})\nprint(r.ok, verify_release('nope', db={f'duckdb://{db}'!r}).ok)")
    env = {**os.environ, "PYTHONPATH": OLD_SRC or str(REPO / "src")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0 and out.stdout.split() == ["True", "False"], out.stderr[-2000:]


def test_a_jobs_source_query_error_names_the_job(db, tmp_path):
    """Item 21 (docs/guides/jobs.md): a stored job's errors are prefixed with the job's name,
    also those found once the source is read (source.query)."""
    spec = write_spec(tmp_path / "s.toml", db=db, qids=["age", "sex"], sensitive=[])
    spec.write_text(spec.read_text().replace('table = "adult"', 'query = "SELECT * FROM adult WHERE"'))
    con = duckdb.connect(str(db))
    con.execute("CREATE SCHEMA IF NOT EXISTS _ppdp")
    con.close()
    url = f"duckdb://{db}"
    registered = ppdp("job", "register", str(spec), "--name", "nightly", "--db", url)
    if registered.returncode == 0:  # stored; the query is read when the job runs
        assert_refused(ppdp("job", "run", "nightly", "--no-progress", "--db", url), "Job 'nightly': ", "source.query")
    else:  # refused when registered: then the TOML's own error, which names the file
        assert_refused(registered, "source.query")
