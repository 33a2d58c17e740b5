"""Fixtures for tests marked ``postgres``: one throwaway server per session, a database per test.

If the server cannot be started, ``postgres`` tests are skipped with the reason — or fail with
it when ``PPDP_REQUIRE_POSTGRES=1`` (CI machines that are meant to have PostgreSQL).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from ppdp.connectors.throwaway_postgres import PostgresServer, PostgresUnavailable

__all__ = ["postgres_server", "postgres_url", "postgres_database", "_postgres_marker"]


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


@pytest.fixture
def postgres_database(postgres_server: PostgresServer) -> Iterator[str]:
    """URL of a fresh, empty database on the throwaway server, dropped after the test."""
    from ppdp.connectors import connect

    name = f"t_{uuid.uuid4().hex[:12]}"
    admin = connect(postgres_server.url)
    try:
        admin.execute(f'CREATE DATABASE "{name}"')
        yield postgres_server.url_for(name)
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        admin.close()


@pytest.fixture(autouse=True)
def _postgres_marker(request: pytest.FixtureRequest) -> None:
    """Tests marked ``postgres`` get the server (hence skip / fail) even without asking for it."""
    if request.node.get_closest_marker("postgres") is not None:
        request.getfixturevalue("postgres_server")
