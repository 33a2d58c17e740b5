"""Fixtures for tests marked ``postgres``: one throwaway server per session, a database per test.

If the server cannot be started, ``postgres`` tests are skipped with the reason — or fail with
it when ``PPDP_REQUIRE_POSTGRES=1`` (CI machines that are meant to have PostgreSQL).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from ppdp.connectors.throwaway_postgres import PostgresServer, PostgresUnavailable

__all__ = ["postgres_server", "postgres_url", "_postgres_admin", "postgres_database", "_postgres_marker"]


def postgres_required() -> bool:
    return os.environ.get("PPDP_REQUIRE_POSTGRES", "") not in ("", "0")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    try:
        server = PostgresServer.start()
    except PostgresUnavailable as exc:
        reason = f"PostgreSQL could not be started: {exc}"
        if postgres_required():
            pytest.fail(f"{reason} (PPDP_REQUIRE_POSTGRES=1)", pytrace=False)
        pytest.skip(reason)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgres_url(postgres_server: PostgresServer) -> str:
    """``postgresql://postgres@127.0.0.1:PORT/postgres`` of the session's throwaway server."""
    return postgres_server.url


@pytest.fixture(scope="session")
def _postgres_admin(postgres_server: PostgresServer) -> Iterator[Any]:
    """One connection to the server's ``postgres`` database that creates and drops every test's
    database (a new connection costs about 55 ms, most of it the driver's type catalog)."""
    from ppdp.connectors import connect

    admin = connect(postgres_server.url)
    try:
        yield admin
    finally:
        admin.close()


@pytest.fixture
def postgres_database(postgres_server: PostgresServer, _postgres_admin: Any) -> Iterator[str]:
    """URL of a fresh, empty database on the throwaway server, dropped after the test."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    _postgres_admin.execute(f'CREATE DATABASE "{name}"')
    yield postgres_server.url_for(name)
    _postgres_admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(autouse=True)
def _postgres_marker(request: pytest.FixtureRequest) -> None:
    """Tests marked ``postgres`` get the server (hence skip / fail) even without asking for it."""
    if request.node.get_closest_marker("postgres") is not None:
        request.getfixturevalue("postgres_server")
