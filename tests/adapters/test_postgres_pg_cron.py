"""pg_cron schedules release requests: a cron job calls ppdp.request_run, the
request appears and ``ppdp worker --once`` serves it. Needs Debian's postgresql-NN-cron (.ci/run
installs it); skipped without it unless PPDP_REQUIRE_PG_CRON=1. Its own server: pg_cron must be
preloaded and bound to one database at server start. The server and its schedule are set up when
the test run starts (tests/support/pg_cron_early.py: pg_cron's first run is up to a minute away),
or here when this test runs without that."""

from __future__ import annotations

import os

import pytest

from ppdp.connectors import connect
from ppdp.connectors.throwaway_postgres import PostgresServer, PostgresUnavailable
from ppdp.engine.app.request_worker import list_requests
from tests.adapters.test_postgres_requests import finished, worker
from tests.support.pg_cron_early import (
    SETTINGS,
    cron_runs,
    early_url,
    pg_cron_installed,
    schedule_a_request,
)

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def test_a_pg_cron_schedule_requests_a_release_that_the_worker_serves():
    if not pg_cron_installed():
        if os.environ.get("PPDP_REQUIRE_PG_CRON", "") not in ("", "0"):
            pytest.fail("pg_cron is not installed (PPDP_REQUIRE_PG_CRON=1). Hint: apt-get install postgresql-15-cron")
        pytest.skip("pg_cron is not installed (Debian: postgresql-15-cron)")
    url = early_url()
    server = None
    if url is None:
        try:
            server = PostgresServer.start(settings=SETTINGS)
        except PostgresUnavailable as exc:
            pytest.fail(f"PostgreSQL with pg_cron could not start: {exc}")
        url = server.url
    try:
        con = connect(url)
        scheduled = list_requests(con) if server is None else schedule_a_request(con)
        assert scheduled, "pg_cron wrote no request: " + cron_runs(con)
        assert con.query("SELECT COUNT(*) AS n FROM cron.job")["n"][0] == 0, "the schedule is removed"
        assert scheduled[0]["job"] == "job_a" and scheduled[0]["requested_by"] == "postgres"
        out = finished(worker(url))
        assert out["served"][0]["status"] == "published" and out["served"][0]["request_id"] == scheduled[0]["request_id"]
        assert list_requests(con)[0]["status"] == "published"
        con.close()
    finally:
        if server is not None:
            server.stop()
