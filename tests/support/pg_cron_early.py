"""pg_cron's schedule set up when the test run starts, not inside its test.

pg_cron 1.4's finest schedule is a minute: a job scheduled inside
tests/adapters/test_postgres_pg_cron.py waited up to a minute for its first run, holding one of the
suite's two workers idle. Here the process that starts the run (pytest-xdist's controller, or a
plain ``pytest``) starts that test's server in a thread when the run includes the test, schedules
the job, waits for pg_cron's first request and unschedules it, while the workers run the other
tests. The test then reads the server's URL from the file named in PPDP_TEST_PG_CRON_EARLY (or the
line saying why the server could not start) and serves the request; the run's cleanup stops the
server. Without the file (the test run alone from another folder, say) the test sets everything up
itself, as before.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

__all__ = ["pytest_sessionstart", "pytest_collection_modifyitems"]

EARLY_ENV = "PPDP_TEST_PG_CRON_EARLY"
TEST_FILE = Path(__file__).parents[1] / "adapters" / "test_postgres_pg_cron.py"
# pg_cron must be preloaded and bound to one database at server start
SETTINGS = {"shared_preload_libraries": "pg_cron", "cron.database_name": "postgres",
            "cron.use_background_workers": "on", "max_worker_processes": "16"}
FIRST_RUN_WITHIN = 150.0  # seconds: a minute's schedule, and a loaded machine
ERROR = "error: "


def pg_cron_installed() -> bool:
    return bool(glob.glob("/usr/share/postgresql/*/extension/pg_cron.control"))


def schedule_a_request(con: Any, wait: float = FIRST_RUN_WITHIN) -> list[dict]:
    """public.adult (2,000 rows), ppdp's catalog and job_a; pg_cron calls ppdp.request_run('job_a')
    every minute until a request appears (or ``wait`` seconds pass), then the schedule is removed.
    Returns the requests."""
    from ppdp.engine.app.request_worker import ensure_requests, list_requests
    from tests.adapters.test_postgres_release import adult_frame
    from tests.adapters.test_postgres_requests import job_spec

    con.write_frame("public", "adult", adult_frame().head(2000))
    ensure_requests(con)
    con.execute('INSERT INTO "_ppdp"."jobs" (name, spec) VALUES (?, ?)', ["job_a", job_spec("job_a")])
    con.execute("CREATE EXTENSION pg_cron")
    # Every minute (pg_cron 1.4's finest schedule); the command is the same SQL a user would run.
    con.query("SELECT cron.schedule('ppdp job_a', '* * * * *', $$SELECT ppdp.request_run('job_a')$$) AS id")
    deadline = time.time() + wait
    while not list_requests(con) and time.time() < deadline:
        time.sleep(2)
    con.query("SELECT cron.unschedule('ppdp job_a') AS ok")
    return list_requests(con)


def cron_runs(con: Any) -> str:
    """What pg_cron recorded of its runs (the message of a test that found no request)."""
    return json.dumps(con.query("SELECT status, return_message FROM cron.job_run_details").to_dicts(), default=str)


def early_url(timeout: float = FIRST_RUN_WITHIN + 60) -> str | None:
    """The early server's URL once its request is there; None without an early server. Fails the
    test with the reason when the early server could not start or schedule."""
    path = os.environ.get(EARLY_ENV)
    if not path:
        return None
    deadline = time.time() + timeout
    while not Path(path).exists() and time.time() < deadline:
        time.sleep(1)
    if not Path(path).exists():
        pytest.fail(f"the early pg_cron server did not finish setting up within {timeout:.0f} s")
    text = Path(path).read_text()
    if text.startswith(ERROR):
        pytest.fail(f"the early pg_cron server: {text[len(ERROR):]}")
    return text


def _selected(config: pytest.Config) -> bool:
    """The run's paths include the pg_cron test (no path: the whole suite)."""
    paths = [a.split("::", 1)[0] for a in config.args if not a.startswith("-")]
    if not paths:
        return True
    target = TEST_FILE.resolve()
    return any(target == (p := Path(config.invocation_params.dir, a).resolve()) or p in target.parents for a in paths)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The pg_cron test last, so that the minute it may wait for passes while the others run."""
    target = TEST_FILE.resolve()
    items.sort(key=lambda item: Path(str(item.fspath)).resolve() == target)  # stable: the rest keep their order


def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    if hasattr(config, "workerinput") or os.environ.get(EARLY_ENV) or not _selected(config) or not pg_cron_installed():
        return
    folder = tempfile.mkdtemp(prefix="ppdp-pg-cron-early-")
    out = Path(folder) / "url"
    os.environ[EARLY_ENV] = str(out)  # before pytest-xdist starts its workers: they inherit it
    held: dict[str, Any] = {}

    def set_up() -> None:
        from ppdp.connectors import connect
        from ppdp.connectors.throwaway_postgres import PostgresServer

        try:
            held["server"] = server = PostgresServer.start(settings=SETTINGS)
            con = connect(server.url)
            try:
                if not schedule_a_request(con):
                    raise RuntimeError(f"pg_cron wrote no request within {FIRST_RUN_WITHIN:.0f} s: {cron_runs(con)}")
            finally:
                con.close()
            text = server.url
        except Exception as exc:  # the test reports it
            text = ERROR + f"{type(exc).__name__}: {exc}"
        tmp = out.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(out)

    thread = threading.Thread(target=set_up, name="pg_cron early", daemon=True)
    thread.start()

    def stop() -> None:
        thread.join(timeout=FIRST_RUN_WITHIN + 60)
        if "server" in held:
            held["server"].stop()
        shutil.rmtree(folder, ignore_errors=True)

    config.add_cleanup(stop)
