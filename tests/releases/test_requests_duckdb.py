"""Releases requested from SQL on DuckDB: an INSERT into ``_ppdp.requests`` and ``ppdp worker --once``
(one writer per file: no SKIP LOCKED needed, docs/guides/requests.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import duckdb
import jsonschema

from tests.conftest import load_adult
from tests.releases.test_jobs import SPEC, register_by_sql
from tests.support import cli_under_test

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str) -> subprocess.CompletedProcess:
    """``ppdp ARGS`` from the repository root, in this process (tests/support/cli_in_process.py);
    the paused worker below is a real subprocess."""
    return cli_under_test.ppdp(*args, cwd=ROOT)


def test_inserted_requests_are_served_once_by_worker_once(tmp_path):
    db = load_adult(tmp_path / "req.duckdb", rows=2000)
    register_by_sql(db, "adult_job", SPEC)
    url = f"duckdb://{db}"
    assert cli("init", "--db", url).returncode == 0
    con = duckdb.connect(str(db))
    con.execute("INSERT INTO _ppdp.requests (job) VALUES ('adult_job'), ('adult_job'), ('no_such_job')")
    con.close()
    proc = cli("worker", "--db", url, "--once", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    schema = json.loads(resources.files("ppdp.engine").joinpath("data/schemas/worker.schema.json").read_text())
    jsonschema.validate(out, schema)
    assert sorted(s["status"] for s in out["served"]) == ["error", "published", "skipped"]  # one INSERT: one requested_at
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT r.status, r.attempts, r.requested_by, r.run_id = u.run_id, u.status, r.error "
                       "FROM _ppdp.requests r LEFT JOIN _ppdp.runs u USING (run_id) "
                       "ORDER BY r.requested_at, r.request_id").fetchall()
    con.close()
    statuses = sorted((r[0], r[1], r[3], r[4]) for r in rows)
    assert statuses == [("error", 1, None, None), ("published", 1, True, "succeeded"), ("skipped", 1, True, "skipped")]
    assert {r[2] for r in rows} == {"duckdb"}  # DuckDB's CURRENT_USER: it has no roles
    assert any("No job named 'no_such_job'" in (r[5] or "") for r in rows)
    again = json.loads(cli("worker", "--db", url, "--once", "--json").stdout)
    assert again["served"] == []  # nothing is served twice


def test_sigterm_gives_the_request_back_and_exits_interrupted(tmp_path):
    import signal
    import time

    db = load_adult(tmp_path / "term.duckdb", rows=2000)
    register_by_sql(db, "adult_job", SPEC)
    url = f"duckdb://{db}"
    assert cli("init", "--db", url).returncode == 0
    con = duckdb.connect(str(db))
    con.execute("INSERT INTO _ppdp.requests (job) VALUES ('adult_job')")
    con.close()
    proc = subprocess.Popen([sys.executable, "-m", "tests.support.phase_cli", "pause:300", "worker", "--db", url, "--once",
                             "--json"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    deadline = time.time() + 180
    for line in proc.stderr:
        if "FAULT: paused" in line or time.time() > deadline:
            break
    proc.send_signal(signal.SIGTERM)
    stdout, _ = proc.communicate(timeout=120)
    out = json.loads(stdout)
    assert proc.returncode == 130 and out["status"] == "interrupted" and out["served"] == []
    con = duckdb.connect(str(db), read_only=True)
    (row,) = con.execute("SELECT status, attempts, error FROM _ppdp.requests").fetchall()
    published = con.execute("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'published'").fetchone()[0]
    con.close()
    assert row[0] == "requested" and row[1] == 1 and "interrupted" in row[2] and published == 0
    served = json.loads(cli("worker", "--db", url, "--once", "--json").stdout)["served"]
    assert [s["status"] for s in served] == ["published"]  # retried, and served
