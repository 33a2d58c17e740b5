"""Connector capabilities, read-only opening and PostgreSQL session safety."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from ppdp.connectors import connect
from ppdp.connectors.base import ADVISORY_LOCKS, CAPABILITIES, ROLES, TRANSACTIONAL_DDL
from ppdp.errors import ConnectorError
from tests.support import paths as PATHS

ROOT = PATHS.REPO


def test_duckdb_capabilities_are_declared(tmp_path):
    con = connect(f"duckdb://{tmp_path / 'x.duckdb'}")
    try:
        assert con.capabilities <= CAPABILITIES and TRANSACTIONAL_DDL in con.capabilities
        assert ROLES not in con.capabilities and ADVISORY_LOCKS not in con.capabilities
        assert con.max_identifier_length > 10_000
    finally:
        con.close()


def test_duckdb_connector_over_a_borrowed_connection_leaves_it_usable(tmp_path):
    """``DuckDBConnector.over`` (dbt-duckdb's session, the benchmarks' connection) must leave no
    open result behind: the owner registers frames on the same connection afterwards."""
    import duckdb
    import polars as pl

    from ppdp.connectors.duckdb_connector import DuckDBConnector

    raw = duckdb.connect(str(tmp_path / "borrowed.duckdb"))
    try:
        con = DuckDBConnector.over(raw)
        assert con.path.endswith("borrowed.duckdb")
        raw.register("frame", pl.DataFrame({"a": [1, 2, 3]}))  # refused while a result is unfinished
        assert raw.execute("SELECT SUM(a) FROM frame").fetchall() == [(6,)]
        con.close()  # borrowed: leaves the connection open
        assert raw.execute("SELECT 1").fetchall() == [(1,)]
    finally:
        raw.close()


def test_duckdb_read_only_does_not_create_a_missing_file(tmp_path):
    missing = tmp_path / "typo.duckdb"
    with pytest.raises(ConnectorError, match=r"typo\.duckdb' does not exist"):
        connect(f"duckdb://{missing}", read_only=True)
    assert not missing.exists()


def test_duckdb_read_only_refuses_writes(tmp_path):
    db = tmp_path / "x.duckdb"
    con = connect(f"duckdb://{db}")
    con.execute("CREATE TABLE t AS SELECT 1 AS a")
    con.close()
    ro = connect(f"duckdb://{db}", read_only=True)
    try:
        assert ro.query("SELECT a FROM t")["a"].to_list() == [1]
        with pytest.raises(ConnectorError, match="read-only"):
            ro.execute("INSERT INTO t VALUES (2)")
    finally:
        ro.close()


@pytest.mark.postgres
def test_postgres_capabilities_and_identifier_limit(postgres_database):
    con = connect(postgres_database)
    try:
        assert {ROLES, ADVISORY_LOCKS, TRANSACTIONAL_DDL} <= con.capabilities <= CAPABILITIES
        assert con.max_identifier_length == 63  # NAMEDATALEN - 1 of a stock build, read from the server
    finally:
        con.close()


@pytest.mark.postgres
def test_postgres_read_only_session_refuses_writes(postgres_database):
    con = connect(postgres_database, read_only=True)
    try:
        with pytest.raises(ConnectorError, match="read-only transaction"):
            con.execute("CREATE TABLE t (a INT)")
    finally:
        con.close()


@pytest.mark.postgres
def test_statement_timeout_from_the_url(postgres_database):
    con = connect(postgres_database + "?statement_timeout=300ms")
    try:
        t0 = time.perf_counter()
        with pytest.raises(ConnectorError, match="statement timeout"):
            con.query("SELECT pg_sleep(5) AS s")
        assert time.perf_counter() - t0 < 3
    finally:
        con.close()
    with pytest.raises(ConnectorError, match="statement_timeout.*not valid.*a duration"):
        connect(postgres_database + "?statement_timeout=1;DROP")


CHILD = textwrap.dedent("""
    import sys
    from ppdp.connectors import connect
    con = connect(sys.argv[1])
    assert con.try_lock("ppdp:published.adult")
    pid = con.query("SELECT pg_backend_pid() AS p")["p"][0]
    print(pid, flush=True)
    con.query("SELECT pg_sleep(60) AS s")
""")


@pytest.mark.postgres
def test_killed_client_leaves_no_backend_and_frees_the_run_lock(postgres_database):
    child = subprocess.Popen([sys.executable, "-c", CHILD, postgres_database], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    watcher = connect(postgres_database)
    try:
        backend = int(child.stdout.readline())
        running = "SELECT COUNT(*) AS n FROM pg_stat_activity WHERE pid = ? AND query LIKE '%pg_sleep%' AND state = 'active'"
        deadline = time.monotonic() + 10
        while watcher.query(running, [backend])["n"][0] == 0:
            assert time.monotonic() < deadline, "the child's pg_sleep never started"
            time.sleep(0.05)
        assert not watcher.try_lock("ppdp:published.adult")  # held by the child
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        killed_at = time.monotonic()
        alive = "SELECT COUNT(*) AS n FROM pg_stat_activity WHERE pid = ?"
        while watcher.query(alive, [backend])["n"][0]:
            assert time.monotonic() - killed_at < 8, "the killed client's backend is still running its statement"
            time.sleep(0.1)
        assert watcher.try_lock("ppdp:published.adult")  # the session-level lock died with the session
        watcher.unlock("ppdp:published.adult")
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()
        watcher.close()
