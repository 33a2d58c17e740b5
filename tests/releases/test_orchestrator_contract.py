"""The orchestrator contract: every exit code of the table is produced here,
every ``--json`` output is one JSON object on stdout that validates against the checked-in
schema, and the Python API returns the same frozen record.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path

import duckdb
import jsonschema
import pytest

import ppdp
from ppdp.engine.app.outcome import STATUS, ExitCode, exit_code_of
from ppdp.errors import (
    CrossVersionRefusal,
    DataError,
    ModelRefusal,
    SpecError,
    VerificationError,
)
from tests.conftest import load_adult, write_spec
from tests.releases.test_jobs import SPEC, register_by_sql
from tests.support import cli_under_test

ROOT = Path(__file__).resolve().parents[2]


def schema(name: str) -> dict:
    """A schema as shipped in the package (package data, so the wheel carries it too)."""
    return json.loads(resources.files("ppdp.engine").joinpath(f"data/schemas/{name}.schema.json").read_text())


def ppdp_cli(*args: str) -> subprocess.CompletedProcess:
    """``ppdp ARGS`` from the repository root, in this process (tests/support/cli_in_process.py:
    the same stdout, stderr and exit code); SIGTERM and the injected bug run in a real subprocess."""
    return cli_under_test.ppdp(*args, cwd=ROOT)


def reject(token: str):
    raise AssertionError(f"{token} is not JSON")


def the_json(proc: subprocess.CompletedProcess, name: str) -> dict:
    """stdout is exactly one JSON object valid against ``name``; its exit_code is the process's."""
    out = json.loads(proc.stdout, parse_constant=reject)  # raises on anything but one strict JSON document
    assert isinstance(out, dict) and proc.stdout.strip().count("\n") == 0
    jsonschema.validate(out, schema(name))
    assert out["exit_code"] == proc.returncode
    return out


@pytest.fixture
def job_db(tmp_path) -> str:
    db = load_adult(tmp_path / "contract.duckdb", rows=3000)
    register_by_sql(db, "adult_job", SPEC)
    impossible = json.loads(json.dumps(SPEC))
    impossible["privacy"]["models"][0]["k"] = 5000  # more than the 3,000 rows: no release can meet it
    impossible["output"]["name"] = "adult_impossible"
    register_by_sql(db, "impossible", impossible)
    return f"duckdb://{db}"


def published_tables(url: str) -> list[str]:
    con = duckdb.connect(url.removeprefix("duckdb://"), read_only=True)
    try:
        return [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables "
                                          "WHERE table_schema = 'published' ORDER BY 1").fetchall()]
    finally:
        con.close()


def test_published_skipped_refused_and_spec_error_codes_with_json(job_db):
    first = the_json(ppdp_cli("job", "run", "adult_job", "--db", job_db, "--json"), "run")
    assert first["status"] == "published" and first["exit_code"] == ExitCode.PUBLISHED == 0
    assert first["version"] == 1 and first["verified"] is True and first["k"] >= 5
    assert first["models"][0]["model"] == "k-anonymity" and first["models"][0]["achieved"] >= 5
    assert first["suppressed"] == first["records"] - first["released"] and first["td"] > 0

    again = ppdp_cli("job", "run", "adult_job", "--db", job_db, "--json")
    skipped = the_json(again, "run")
    assert skipped["status"] == "skipped" and again.returncode == ExitCode.SKIPPED == 99
    assert skipped["version"] == 1 and "skipped" in again.stderr  # the human text went to stderr

    refused = ppdp_cli("job", "run", "impossible", "--db", job_db, "--json")
    out = the_json(refused, "run")
    assert refused.returncode == ExitCode.REFUSED == 3 and out["status"] == "refused"
    assert "No release can satisfy k-anonymity" in out["error"] and out["job"] == "impossible"

    missing = ppdp_cli("job", "run", "nope", "--db", job_db, "--json")
    out = the_json(missing, "run")
    assert missing.returncode == ExitCode.SPEC_ERROR == 2 and out["status"] == "error" and "No job named" in out["error"]
    assert published_tables(job_db) == ["adult_job", "adult_job__v1"]


def test_run_spec_json_and_python_api_agree(tmp_path):
    db = load_adult(tmp_path / "api.duckdb", rows=2000)
    spec = write_spec(tmp_path / "s.toml", db=db, qids=["age", "sex", "race"], output="small")
    proc = ppdp_cli("run", str(spec), "--no-progress", "--json")
    out = the_json(proc, "run")
    assert out["status"] == "published" and out["output"] == '"published"."small"'

    result = ppdp.run_release(spec)  # the same spec again: nothing changed
    assert isinstance(result, ppdp.RunResult) and result.status == "skipped" and result.exit_code == ExitCode.SKIPPED
    assert result.version == out["version"] and result.td == pytest.approx(out["td"]) and result.k == out["k"]
    jsonschema.validate(result.to_json(), schema("run"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.status = "published"  # type: ignore[misc]

    bad = ppdp.run_release(tmp_path / "missing.toml")
    assert bad.status == "error" and bad.exit_code == ExitCode.SPEC_ERROR and bad.run_id is None
    jsonschema.validate(bad.to_json(), schema("run"))


def test_verify_json_passed_then_failed_on_a_tampered_version(job_db):
    assert ppdp.run_job("adult_job", db=job_db).status == "published"
    ok = ppdp_cli("verify", "adult_job", "--db", job_db, "--json")
    out = the_json(ok, "verify")
    assert ok.returncode == 0 and out["status"] == "verified" and out["rows"] == out["expected_rows"]
    # Someone deletes a published row behind ppdp's back: the re-verification must notice.
    con = duckdb.connect(job_db.removeprefix("duckdb://"))
    con.execute('DELETE FROM published.adult_job__v1 WHERE rowid = (SELECT MIN(rowid) FROM published.adult_job__v1)')
    con.close()
    bad = ppdp_cli("verify", "adult_job", "--db", job_db, "--json")
    out = the_json(bad, "verify")
    assert bad.returncode == ExitCode.VERIFICATION_FAILED == 1 and out["status"] == "verification_failed"
    assert out["rows"] == out["expected_rows"] - 1 and out["passed"] is False
    text = ppdp_cli("verify", "adult_job", "--db", job_db)  # without --json: the same code
    assert text.returncode == 1 and "verification FAILED" in text.stdout
    missing = ppdp_cli("verify", "nope", "--db", job_db, "--json")
    assert the_json(missing, "verify")["status"] == "error" and missing.returncode == 2


def test_sigterm_mid_run_exits_interrupted_and_publishes_nothing(job_db):
    proc = subprocess.Popen([sys.executable, "-m", "tests.support.phase_cli", "pause:120", "job", "run", "adult_job",
                             "--db", job_db, "--json"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 180
    assert proc.stderr is not None
    for line in proc.stderr:
        if "FAULT: paused" in line or time.time() > deadline:
            break
    proc.send_signal(signal.SIGTERM)  # what an orchestrator does to cancel a task
    stdout, stderr = proc.communicate(timeout=120)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    out = the_json(done, "run")
    assert proc.returncode == ExitCode.INTERRUPTED == 130 and out["status"] == "interrupted"
    assert published_tables(job_db) == []  # the materialized table rolled back with the transaction
    con = duckdb.connect(job_db.removeprefix("duckdb://"), read_only=True)
    runs = con.execute("SELECT status FROM _ppdp.runs").fetchall()
    con.close()
    assert runs == [("failed",)]


def test_a_bug_exits_internal_error_with_traceback(job_db):
    proc = subprocess.run([sys.executable, "-m", "tests.support.phase_cli", "raise", "job", "run", "adult_job",
                           "--db", job_db, "--json"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    out = the_json(proc, "run")
    assert proc.returncode == ExitCode.INTERNAL_ERROR == 70 and out["status"] == "internal_error"
    assert "RuntimeError: injected bug" in out["error"] and "Traceback" in proc.stderr
    assert published_tables(job_db) == []


def test_errors_keep_the_shape_of_each_command_schema(tmp_path):
    gone = f"duckdb://{tmp_path}/no/such/dir/x.duckdb"
    worker = ppdp_cli("worker", "--db", gone, "--once", "--json")
    out = the_json(worker, "worker")
    assert worker.returncode == 2 and out["status"] == "error" and out["served"] == []
    verify = ppdp_cli("verify", "adult", "--db", gone, "--json")
    assert the_json(verify, "verify")["status"] == "error" and verify.returncode == 2


def test_exit_code_of_refusals_comes_before_their_base_classes():
    # A cross-version refusal is a VerificationError and a model refusal a DataError (existing
    # handlers keep catching them), but an orchestrator must see "refused", not "failed"/"bad input".
    assert exit_code_of(CrossVersionRefusal("x")) == ExitCode.REFUSED
    assert exit_code_of(ModelRefusal("x")) == ExitCode.REFUSED
    assert exit_code_of(VerificationError("x")) == ExitCode.VERIFICATION_FAILED
    assert exit_code_of(DataError("x")) == exit_code_of(SpecError("x")) == ExitCode.SPEC_ERROR
    assert exit_code_of(KeyboardInterrupt()) == ExitCode.INTERRUPTED
    assert exit_code_of(ZeroDivisionError()) == ExitCode.INTERNAL_ERROR
    assert set(STATUS) == set(ExitCode)


def test_schemas_list_exactly_the_codes_and_statuses_of_the_table():
    run = schema("run")["properties"]
    assert set(run["exit_code"]["enum"]) == {int(c) for c in ExitCode}
    assert set(run["status"]["enum"]) == set(STATUS.values()) | {"dry_run"}
    for name in ("run", "verify", "worker", "risk"):
        jsonschema.Draft202012Validator.check_schema(schema(name))


def test_readme_documents_every_exit_code():
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("## Exit codes"):]
    for code in ExitCode:
        assert f"| {int(code)} | `{code.name}`" in table


def test_ppdp_exports_the_api_lazily():
    code = "import sys, ppdp.sql; assert 'ppdp.engine' not in sys.modules; import ppdp; ppdp.run_job; print('ok')"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ})
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_cross_version_refusal_is_refused_with_its_run_and_the_repair_reports_held_back(tmp_path):
    """A crafted change breaks the joint classes of v1 and v2 (tests/releases/test_dynamic.py):
    the strict policy refuses the step (exit 3, the failed run named), the default repairs it
    and says how many records it held back."""
    db = load_adult(tmp_path / "craft.duckdb", rows=3000)
    toml = write_spec(tmp_path / "s.toml", db=db, qids=["age", "sex", "race"], output="small")
    assert the_json(ppdp_cli("run", str(toml), "--no-progress", "--json"), "run")["version"] == 1
    con = duckdb.connect(str(db))
    con.execute("UPDATE adult SET age = age + 7 WHERE id % 3 = 0 AND age < 80")
    con.close()
    toml.write_text(toml.read_text() + '[dynamic]\npolicy = "strict"\n')
    refused = ppdp_cli("run", str(toml), "--no-progress", "--json")
    out = the_json(refused, "run")
    assert refused.returncode == ExitCode.REFUSED and out["status"] == "refused" and out["version"] is None
    assert "Cross-version privacy check failed" in out["error"] and out["release"] == '"published"."small"'
    con = duckdb.connect(str(db), read_only=True)
    failed = con.execute("SELECT status FROM _ppdp.runs WHERE run_id = ?", [out["run_id"]]).fetchall()
    con.close()
    assert failed == [("failed",)] and published_tables(f"duckdb://{db}") == ["small", "small__v1"]
    toml.write_text(toml.read_text().replace('policy = "strict"', 'policy = "stable-levels"\nmax_repair_fraction = 0.5'))
    repaired = the_json(ppdp_cli("run", str(toml), "--no-progress", "--json"), "run")
    held = repaired["held_back"]
    assert repaired["status"] == "published" and repaired["version"] == 2
    assert held is not None and held["inserts_withheld"] + held["deletes_delayed"] + held["changes_delayed"] > 0


def test_risk_json_and_the_kept_columns_refusal(tmp_path):
    db = load_adult(tmp_path / "risk.duckdb", rows=2000)
    url = f"duckdb://{db}"
    # The product's default for kept columns that single out records beside the QIDs: refuse (exit 3).
    spec = write_spec(tmp_path / "s.toml", db=db, qids=["age", "sex", "race"], output="kept", kept_columns=None)
    refused = ppdp_cli("run", str(spec), "--no-progress", "--json")
    out = the_json(refused, "run")
    assert refused.returncode == ExitCode.REFUSED and out["status"] == "refused" and "kept_columns" in out["error"]
    assert published_tables(url) == []
    measured = ppdp_cli("risk", "--table", "main.adult", "--qids", "age,sex,race", "--db", url, "--json")
    risk = the_json(measured, "risk")
    assert measured.returncode == 0 and risk["status"] == "measured" and risk["rows"] == 2000
    assert 0 < risk["prosecutor"]["average"] <= risk["prosecutor"]["highest"] <= 1
    missing = ppdp_cli("risk", "nope", "--db", url, "--json")
    assert the_json(missing, "risk")["status"] == "error" and missing.returncode == 2
