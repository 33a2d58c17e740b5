"""pg_cron schedules release requests: a cron job calls ppdp.request_run, the
request appears and ``ppdp worker --once`` serves it. Needs Debian's postgresql-NN-cron (.ci/run
installs it); skipped without it unless PPDP_REQUIRE_PG_CRON=1. Its own server: pg_cron must be
preloaded and bound to one database at server start."""

from __future__ import annotations

import glob
import json
import os
import time

import pytest

from ppdp.connectors import connect
from ppdp.connectors.throwaway_postgres import PostgresServer, PostgresUnavailable
from ppdp.engine.app.request_worker import ensure_requests, list_requests
from tests.adapters.test_postgres_release import adult_frame
from tests.adapters.test_postgres_requests import finished, job_spec, worker

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def test_a_pg_cron_schedule_requests_a_release_that_the_worker_serves():
    if not glob.glob("/usr/share/postgresql/*/extension/pg_cron.control"):
        if os.environ.get("PPDP_REQUIRE_PG_CRON", "") not in ("", "0"):
            pytest.fail("pg_cron is not installed (PPDP_REQUIRE_PG_CRON=1). Hint: apt-get install postgresql-15-cron")
        pytest.skip("pg_cron is not installed (Debian: postgresql-15-cron)")
    try:
        server = PostgresServer.start(settings={"shared_preload_libraries": "pg_cron", "cron.database_name": "postgres",
                                                "cron.use_background_workers": "on", "max_worker_processes": "16"})
    except PostgresUnavailable as exc:
        pytest.fail(f"PostgreSQL with pg_cron could not start: {exc}")
    try:
        con = connect(server.url)
        con.write_frame("public", "adult", adult_frame().head(2000))
        ensure_requests(con)
        con.execute('INSERT INTO "_ppdp"."jobs" (name, spec) VALUES (?, ?)', ["job_a", job_spec("job_a")])
        con.execute("CREATE EXTENSION pg_cron")
        # Every minute (pg_cron 1.4's finest schedule); the command is the same SQL a user would run.
        con.query("SELECT cron.schedule('ppdp job_a', '* * * * *', $$SELECT ppdp.request_run('job_a')$$) AS id")
        deadline = time.time() + 150
        while not list_requests(con) and time.time() < deadline:
            time.sleep(2)
        con.query("SELECT cron.unschedule('ppdp job_a') AS ok")
        scheduled = list_requests(con)
        assert scheduled, "pg_cron wrote no request within 150 s: " + json.dumps(
            con.query("SELECT status, return_message FROM cron.job_run_details").to_dicts(), default=str)
        assert scheduled[0]["job"] == "job_a" and scheduled[0]["requested_by"] == "postgres"
        out = finished(worker(server.url))
        assert out["served"][0]["status"] == "published" and out["served"][0]["request_id"] == scheduled[0]["request_id"]
        assert list_requests(con)[0]["status"] == "published"
        con.close()
    finally:
        server.stop()
