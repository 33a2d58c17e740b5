"""Releases requested from SQL on the throwaway PostgreSQL.

A role holding only EXECUTE on ``ppdp.request_run`` asks for a release and ``ppdp worker --once``
publishes it; two workers started together on three requests run each exactly once; a worker
killed mid-run leaves the request retryable and the database as after any killed run.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from ppdp.connectors import connect
from ppdp.engine.app.request_worker import ensure_requests, list_requests
from ppdp.errors import ConnectorError
from tests.adapters.test_postgres_release import adult_frame
from tests.releases.test_jobs import SPEC

pytestmark = pytest.mark.postgres
ROOT = Path(__file__).resolve().parents[2]
WORKER_SCHEMA = json.loads(resources.files("ppdp.engine").joinpath("data/schemas/worker.schema.json").read_text())


def job_spec(output: str) -> str:
    spec = json.loads(json.dumps(SPEC))
    spec["output"]["name"] = output
    return json.dumps(spec)


@pytest.fixture
def db(postgres_database) -> Iterator[str]:
    """A database with public.adult (2,000 rows), ppdp's catalog and three jobs."""
    con = connect(postgres_database)
    try:
        con.write_frame("public", "adult", adult_frame().head(2000))
        ensure_requests(con)
        for name in ("job_a", "job_b", "job_c"):
            con.execute('INSERT INTO "_ppdp"."jobs" (name, spec) VALUES (?, ?)', [name, job_spec(name)])
    finally:
        con.close()
    yield postgres_database


def as_role(url: str, role: str) -> str:
    return url.replace("postgresql://postgres@", f"postgresql://{role}@")


def worker(url: str, *extra: str, fault: str | None = None) -> subprocess.Popen:
    prefix = ["-m", "tests.support.phase_cli", fault] if fault else ["-m", "ppdp.engine.app.cli"]
    return subprocess.Popen([sys.executable, *prefix, "worker", "--db", url, "--once", "--json", *extra], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finished(proc: subprocess.Popen, timeout: float = 300) -> dict:
    stdout, stderr = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, stderr
    out = json.loads(stdout)
    jsonschema.validate(out, WORKER_SCHEMA)
    return out


def requests(url: str) -> list[dict]:
    con = connect(url)
    try:
        return list_requests(con)
    finally:
        con.close()


def query(url: str, sql: str) -> list[tuple]:
    con = connect(url)
    try:
        return [tuple(r) for r in con.query(sql).iter_rows()]
    finally:
        con.close()


def seconds_until(url: str, moment: str) -> float:
    """Seconds from now (the server's LOCALTIMESTAMP, the clock of the leases) to ``moment``, an
    expression over the one request row (a test constant, not user text)."""
    (row,) = query(url, f'SELECT EXTRACT(EPOCH FROM ({moment}) - LOCALTIMESTAMP) FROM "_ppdp"."requests"')
    return float(row[0])


def test_a_role_with_only_execute_requests_and_the_worker_publishes(db):
    role, outsider = f"analyst_{uuid.uuid4().hex[:6]}", f"outsider_{uuid.uuid4().hex[:6]}"
    admin = connect(db)
    admin.execute(f'CREATE ROLE "{role}" LOGIN')
    admin.execute(f'CREATE ROLE "{outsider}" LOGIN')
    admin.execute(f'GRANT EXECUTE ON FUNCTION "ppdp"."request_run"(text) TO "{role}"')
    admin.execute('INSERT INTO "_ppdp"."job_requesters" (job, role) VALUES (?, ?)', ["job_a", role])  # job_a only
    admin.close()
    analyst = connect(as_role(db, role))
    try:
        for forbidden in ('SELECT * FROM "_ppdp"."requests"', 'SELECT * FROM "_ppdp"."jobs"', "SELECT * FROM public.adult",
                          """INSERT INTO "_ppdp"."requests" (job, requested_by) VALUES ('job_a', 'someone else')"""):
            with pytest.raises(ConnectorError, match="permission denied"):
                analyst.query(forbidden)
        request_id = analyst.query("SELECT ppdp.request_run('job_a') AS id")["id"][0]
        # A name that is no job, one that tries SQL, and NULL: refused, nothing inserted.
        for bad in ("no_such_job", "job_a'); DELETE FROM _ppdp.jobs; --", None, "job_b"):
            with pytest.raises(ConnectorError, match="no enabled job named"):
                analyst.query("SELECT ppdp.request_run(?) AS id", [bad])
    finally:
        analyst.close()
    stranger = connect(as_role(db, outsider))
    with pytest.raises(ConnectorError, match="permission denied for function request_run"):
        stranger.query("SELECT ppdp.request_run('job_a') AS id")
    stranger.close()

    (row,) = requests(db)
    assert row["request_id"] == request_id and row["requested_by"] == role and row["status"] == "requested"
    out = finished(worker(db))
    assert [(s["request_id"], s["status"], s["version"]) for s in out["served"]] == [(request_id, "published", 1)]
    (row,) = requests(db)
    runs = query(db, 'SELECT run_id, status, version, job FROM "_ppdp"."runs"')
    assert row["status"] == "published" and row["requested_by"] == role and row["attempts"] == 1
    assert runs == [(row["run_id"], "succeeded", 1, "job_a")]
    assert query(db, 'SELECT COUNT(*) FROM "published"."job_a"')[0][0] > 0


def test_two_workers_started_together_run_three_requests_once_each(db):
    con = connect(db)
    ids = [con.query("SELECT ppdp.request_run(?) AS id", [j])["id"][0] for j in ("job_a", "job_b", "job_c")]
    con.close()
    procs = [worker(db), worker(db)]
    outs = [finished(p) for p in procs]
    served = [s["request_id"] for out in outs for s in out["served"]]
    assert sorted(served) == sorted(ids)  # each exactly once, across both workers
    assert {s["status"] for out in outs for s in out["served"]} == {"published"}, requests(db)
    rows = requests(db)
    assert {r["status"] for r in rows} == {"published"} and {r["attempts"] for r in rows} == {1}
    assert len({r["worker"] for r in rows}) >= 1
    runs = query(db, 'SELECT job, status, version FROM "_ppdp"."runs" ORDER BY job')
    assert runs == [("job_a", "succeeded", 1), ("job_b", "succeeded", 1), ("job_c", "succeeded", 1)]


def test_a_killed_worker_leaves_the_request_retryable_and_nothing_published(db):
    con = connect(db)
    request_id = con.query("SELECT ppdp.request_run('job_a') AS id")["id"][0]
    con.close()
    lease = 3.0
    proc = worker(db, "--lease", str(lease), fault="pause:300")
    assert proc.stderr is not None
    deadline = time.time() + 180
    for line in proc.stderr:
        if "FAULT: paused" in line or time.time() > deadline:
            break
    # While it runs, its heartbeat keeps the lease: a second worker started a second past the
    # lease of the claim (what a worker without a heartbeat would hold) takes nothing.
    time.sleep(max(0.0, seconds_until(db, f"started_at + INTERVAL '{lease + 1} seconds'")))
    assert finished(worker(db))["served"] == []
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    (row,) = requests(db)
    assert row["status"] == "running" and row["attempts"] == 1
    assert query(db, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'published'")[0][0] == 0
    assert query(db, 'SELECT status FROM "_ppdp"."runs"') == [("running",)]  # as after any killed run
    # no heartbeat any more: the lease lapses (half a second past the last one's lease_until)
    time.sleep(max(0.0, seconds_until(db, "lease_until + INTERVAL '0.5 seconds'")))
    out = finished(worker(db))
    assert [(s["request_id"], s["status"]) for s in out["served"]] == [(request_id, "published")]
    (row,) = requests(db)
    assert row["status"] == "published" and row["attempts"] == 2
    runs = sorted(query(db, 'SELECT status, error FROM "_ppdp"."runs"'), key=lambda r: r[0])
    assert [r[0] for r in runs] == ["failed", "succeeded"] and runs[0][1].startswith("abandoned")
