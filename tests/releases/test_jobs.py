"""Release jobs in the database: SQL registration, run keys, dry runs, certificates, locks, faults."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import duckdb
import pytest

from ppdp.engine.app import jobs
from ppdp.errors import SpecError
from tests.conftest import ADULT, load_adult
from tests.support import cli_under_test

SPEC = {
    "source": {"table": "adult", "key": "id", "keep": ["education", "native-country", "workclass", "occupation"]},
    "quasi_identifiers": [{"column": q, "hierarchy": {"type": "arx", "file": str(ADULT / f"adult_hierarchy_{q}.csv")}}
                          for q in ("age", "sex", "race", "marital-status")],
    "sensitive": {"columns": ["salary-class"]},
    # the kept columns single out rows; these tests are about jobs, so publish with the warning
    "privacy": {"models": [{"name": "k-anonymity", "k": 5}], "kept_columns": "warn"},
    "optimizer": {"name": "lattice", "budget": 5000, "seed": 3},
    "output": {"schema": "published", "name": "adult_job"},
}


def register_by_sql(db, name: str, spec: dict) -> None:
    """A job registered with a plain SQL INSERT (the catalog tables are created by any ppdp call)."""
    con = duckdb.connect(str(db))
    con.execute("CREATE SCHEMA IF NOT EXISTS _ppdp")
    con.execute("CREATE TABLE IF NOT EXISTS _ppdp.jobs (name VARCHAR PRIMARY KEY, spec VARCHAR NOT NULL, "
                "created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, enabled BOOLEAN DEFAULT TRUE)")
    con.execute("INSERT INTO _ppdp.jobs (name, spec) VALUES (?, ?)", [name, json.dumps(spec)])
    con.close()


def ppdp(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """``ppdp ARGS``, in this process (tests/support/cli_in_process.py); the paused and killed runs
    below are real subprocesses."""
    return cli_under_test.ppdp(*args, env=env)


def test_sql_registered_job_runs_skips_and_certifies(tmp_path):
    db = load_adult(tmp_path / "jobs.duckdb", rows=4000)
    url = f"duckdb://{db}"
    register_by_sql(db, "adult_job", SPEC)
    first = jobs.run_job(url, "adult_job", progress=False)
    assert first.run.status == "succeeded" and first.run.version == 1 and first.run.job == "adult_job"
    again = jobs.run_job(url, "adult_job", progress=False)
    assert again.run.status == "skipped" and again.run.version == 1
    cert = jobs.certificate(url, "adult_job")
    assert cert["models"][0]["achieved"] >= 5 and cert["verification_passed"]
    assert cert["optimizer"]["certified_optimal"] and "GROUP BY" in cert["models"][0]["verification_query"]
    md = jobs.certificate_markdown(cert)
    assert "| k-anonymity |" in md and "certified optimal" in md
    history = ppdp("job", "history", "adult_job", "--db", url)
    assert history.returncode == 0 and "succeeded" in history.stdout and "skipped" in history.stdout


def test_dry_run_prints_sql_and_writes_only_the_run_record(tmp_path):
    db = load_adult(tmp_path / "dry.duckdb", rows=3000)
    url = f"duckdb://{db}"
    register_by_sql(db, "adult_job", SPEC)
    out = ppdp("job", "run", "adult_job", "--dry-run", "--db", url)
    assert out.returncode == 98, out.stderr  # DRY_RUN: nothing was published
    assert "-- materialize\nCREATE TABLE" in out.stdout and "-- verify k-anonymity" in out.stdout
    assert "would publish version 1" in out.stdout
    con = duckdb.connect(str(db), read_only=True)
    published = con.execute("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'published'").fetchone()[0]
    runs = con.execute("SELECT status, version FROM _ppdp.runs").fetchall()
    hier = con.execute("SELECT COUNT(*) FROM _ppdp.hierarchies").fetchone()[0]
    con.close()
    assert published == 0 and hier == 0 and runs == [("dry-run", None)]


def test_invalid_job_json_is_reported_at_run_time(tmp_path):
    db = load_adult(tmp_path / "bad.duckdb", rows=100)
    bad = json.loads(json.dumps(SPEC))
    bad["privacy"]["models"][0]["k"] = "five"
    register_by_sql(db, "bad_job", bad)
    with pytest.raises(SpecError, match="Job 'bad_job': k-anonymity needs an integer k >= 1, got 'five'"):
        jobs.run_job(f"duckdb://{db}", "bad_job", progress=False)
    out = ppdp("job", "run", "nope", "--db", f"duckdb://{db}")
    assert out.returncode == 2 and "No job named 'nope'" in out.stderr


def _start_paused_run(url: str, seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "tests.support.fault_runner", url, "adult_job", f"pause-after-materialize:{seconds}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    for line in proc.stderr:
        if "FAULT: paused" in line:
            return proc
        if time.time() > deadline:
            break
    proc.kill()
    proc.communicate()
    raise AssertionError("the run never reached the pause point")


def test_concurrent_run_fails_at_once_and_killed_run_leaves_nothing(tmp_path):
    db = load_adult(tmp_path / "lock.duckdb", rows=3000)
    url = f"duckdb://{db}"
    register_by_sql(db, "adult_job", SPEC)
    first = _start_paused_run(url, 60)
    try:
        t0 = time.time()
        second = ppdp("job", "run", "adult_job", "--db", url, "--no-progress")
        assert time.time() - t0 < 30
        assert second.returncode == 2 and "in use by another process" in second.stderr
    finally:
        first.kill()  # SIGKILL: the process dies between materialization and the view switch
        first.communicate()  # reap it and close its pipes
    con = duckdb.connect(str(db), read_only=True)
    published = con.execute("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'published'").fetchone()[0]
    runs = con.execute("SELECT status FROM _ppdp.runs").fetchall()
    con.close()
    assert published == 0 and runs == [("running",)]
    recovered = jobs.run_job(url, "adult_job", progress=False)
    assert recovered.run.status == "succeeded" and recovered.run.version == 1
    con = duckdb.connect(str(db), read_only=True)
    statuses = sorted(r[0] for r in con.execute("SELECT status FROM _ppdp.runs").fetchall())
    error = con.execute("SELECT error FROM _ppdp.runs WHERE status = 'failed'").fetchone()[0]
    con.close()
    assert statuses == ["failed", "succeeded"] and error.startswith("abandoned")


def test_process_exit_inside_the_transaction_publishes_nothing(tmp_path):
    db = load_adult(tmp_path / "exit.duckdb", rows=3000)
    url = f"duckdb://{db}"
    register_by_sql(db, "adult_job", SPEC)
    dead = subprocess.run([sys.executable, "-m", "tests.support.fault_runner", url, "adult_job", "exit-after-materialize"],
                          capture_output=True, text=True)
    assert dead.returncode == 9
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'published'").fetchone()[0] == 0
    con.close()
    assert jobs.run_job(url, "adult_job", progress=False).run.version == 1


def test_register_from_toml_and_list(tmp_path):
    from tests.conftest import write_spec

    db = load_adult(tmp_path / "reg.duckdb", rows=500)
    spec = write_spec(tmp_path / "s.toml", db=db, qids=["age", "sex"], output="small")
    out = ppdp("job", "register", str(spec), "--db", f"duckdb://{db}")
    assert out.returncode == 0 and "registered job 'small'" in out.stdout
    listing = ppdp("job", "list", "--db", f"duckdb://{db}")
    assert "small" in listing.stdout and "enabled" in listing.stdout
    run = ppdp("job", "run", "small", "--db", f"duckdb://{db}", "--no-progress")
    assert run.returncode == 0 and 'published: "published"."small"' in run.stdout
