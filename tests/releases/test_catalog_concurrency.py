"""Two sessions that create or upgrade the catalog at the same moment, on PostgreSQL (runs of two
releases hold two different run locks, so nothing else keeps them apart there). Without
``catalog.CATALOG_LOCK`` the second session failed: two CREATE SCHEMA IF NOT EXISTS at once end the
later one on a duplicate key, and two rewrites of an old catalog's Q keys would store each row
twice (the second then failed on the formats table's key). With it the second waits for the
first's commit and then finds everything done.

Each race is made certain, not left to timing: session A does its part in a transaction it holds
open until session B has started its own and has had time to collide with it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import polars as pl
import pytest

from ppdp.connectors import connect
from ppdp.connectors.base import Connector
from ppdp.engine.core import catalog
from ppdp.engine.core.spec import load_spec
from ppdp.engine.release.run import reverify, run_release
from ppdp.sql.history import SA_KEY_FORMAT
from tests.conftest import ADULT
from tests.releases.test_catalog_upgrade import ORDERED, RENAME, _make_old, _stored_keys_current
from tests.releases.test_distribution_models_release import K2, _spec_text

pytestmark = pytest.mark.postgres

HOLD_S = 1.0  # how long A keeps its transaction open after B has started


def _collide(url: str, first: Callable[[Connector], None], second: Callable[[Connector], None]) -> dict[str, Any]:
    """``first`` in a transaction of session A held open for HOLD_S after ``second`` started on
    session B. Returns each session's outcome ("ok" or the error) and when each ended."""
    a, b = connect(url), connect(url)
    out: dict[str, Any] = {}
    a_done, b_started = threading.Event(), threading.Event()

    def session_a() -> None:
        try:
            with a.transaction():
                first(a)
                a_done.set()
                b_started.wait(30)
                time.sleep(HOLD_S)
                out["a_commit"] = time.monotonic()
            out["a"] = "ok"
        except Exception as exc:  # the outcome is what the test asserts on
            out["a"] = repr(exc)
            a_done.set()

    def session_b() -> None:
        try:
            b_started.set()
            second(b)
            out["b"] = "ok"
        except Exception as exc:
            out["b"] = repr(exc)
        out["b_end"] = time.monotonic()

    try:
        ta = threading.Thread(target=session_a)
        ta.start()
        a_done.wait(60)  # A's part done, its transaction open
        tb = threading.Thread(target=session_b)
        tb.start()
        ta.join(60)
        tb.join(60)
    finally:
        a.close()
        b.close()
    return out


def _in_transaction(work: Callable[[Connector], None]) -> Callable[[Connector], None]:
    def run(con: Connector) -> None:
        with con.transaction():
            work(con)
    return run


def test_two_sessions_create_the_catalog_at_once(postgres_database) -> None:
    out = _collide(postgres_database, catalog.ensure_schema, _in_transaction(catalog.ensure_schema))
    assert out["a"] == "ok" and out["b"] == "ok", out
    assert out["b_end"] >= out["a_commit"]  # B waited for A's commit instead of colliding with it
    con = connect(postgres_database)
    try:
        assert catalog.has_catalog(con)
        assert catalog.sa_key_format(con) == SA_KEY_FORMAT
        assert con.query("SELECT COUNT(*) AS n FROM _ppdp.formats")["n"][0] == 1
    finally:
        con.close()


def _adult_on_postgres(url: str, rows: int | None = None) -> None:
    frame = pl.read_csv(ADULT / "adult.csv", separator=";").with_row_index("id", offset=1).with_columns(pl.col("id").cast(pl.Int64))
    con = connect(url)
    try:
        con.write_frame("public", "adult", frame if rows is None else frame.head(rows))
        con.execute(RENAME.format(t="public.adult"))  # values whose keys differ between the formats
    finally:
        con.close()


@pytest.mark.slow
def test_two_upgrades_at_once_rewrite_q_once(postgres_database, tmp_path) -> None:
    url = postgres_database
    _adult_on_postgres(url, rows=3000)
    spec = load_spec(_spec_text(tmp_path / "t.toml", url, "public", "occupation", K2 + ORDERED, None, "adult_t"))
    first = run_release(spec, progress=False)
    assert first.run.status == "succeeded"
    con = connect(url)
    try:
        rows_before = int(con.query("SELECT COUNT(*) AS n FROM _ppdp.distributions")["n"][0])
    finally:
        con.close()
    assert _make_old(url, first.run.release) == 2
    assert not _stored_keys_current(url)

    out = _collide(url, catalog.ensure_schema, catalog.upgrade)
    assert out["a"] == "ok" and out["b"] == "ok", out
    assert out["b_end"] >= out["a_commit"]
    con = connect(url)
    try:
        assert int(con.query("SELECT COUNT(*) AS n FROM _ppdp.distributions")["n"][0]) == rows_before
        assert con.query("SELECT COUNT(*) AS n FROM _ppdp.formats")["n"][0] == 1
        checked = reverify(con, "adult_t")
    finally:
        con.close()
    assert _stored_keys_current(url)
    assert checked["passed"] and checked["version"] == 1
