"""The DuckDB connector's Arrow reads (``query_arrow``; engine.release.stages.validate reads a
source's rows with it): DuckDB's private one-step ``_submit`` where its self-test passed, the
relation API otherwise, and the same table from both, for every column type ppdp reads."""

from __future__ import annotations

import duckdb
import pytest

from ppdp.connectors import duckdb_connector as D
from ppdp.errors import ConnectorError

QUERIES = [
    "SELECT * FROM t ORDER BY i",
    "SELECT s, COUNT(*) AS n FROM t GROUP BY s ORDER BY s NULLS FIRST",
    "SELECT i, s, d, x, day, big FROM t WHERE i > 1000000",  # no rows
    "SELECT i, s FROM t",  # storage order
    "SELECT COUNT(*) AS n, MIN(s) AS lo, MAX(d) AS hi FROM t",
]


@pytest.fixture
def con():
    c = duckdb.connect(":memory:")
    c.execute("""CREATE TABLE t AS SELECT range::INTEGER AS i,
                 CASE WHEN range % 7 = 0 THEN NULL ELSE 'v' || (range % 13)::VARCHAR || 'é' END AS s,
                 CASE WHEN range % 5 = 0 THEN NULL ELSE range / 3.0 END AS d,
                 (range % 4)::DECIMAL(9, 2) AS x, DATE '2020-01-01' + (range % 400)::INTEGER AS day,
                 range::BIGINT * 1000003 AS big FROM range(300000)""")  # above one Arrow batch
    yield c
    c.close()


def test_the_self_test_passes_on_the_installed_duckdb() -> None:
    """DuckDB 2 (make test installs it) has ``_submit``: the reads take the one-step path."""
    assert duckdb.__version__.startswith("2.") and D._submit_works()


@pytest.mark.parametrize("sql", QUERIES)
def test_one_step_read_is_the_relation_read(con, sql: str) -> None:
    got = D._arrow_of(con, sql)
    want = con.sql(sql).to_arrow_table()
    assert got.schema == want.schema
    assert got.equals(want)
    assert got.num_rows == want.num_rows


def test_a_failed_self_test_reads_through_the_relation_api(con, monkeypatch) -> None:
    """Where the self-test failed (a DuckDB whose ``_submit`` is missing or behaves otherwise)
    ``_submit`` is never called, and the reads are the same."""
    monkeypatch.setattr(D, "_SUBMIT_CHECKED", [False])
    calls = []

    class Spy:
        def __init__(self, c):
            self.c = c

        def _submit(self, *a):
            calls.append(a)
            raise AssertionError("not to be called")

        def sql(self, q):
            return self.c.sql(q)

    got = D._arrow_of(Spy(con), QUERIES[0])  # type: ignore[arg-type]
    assert not calls and got.equals(con.sql(QUERIES[0]).to_arrow_table())


def test_a_refused_query_is_a_connector_error_either_way(con, monkeypatch) -> None:
    for checked in ([True], [False]):
        monkeypatch.setattr(D, "_SUBMIT_CHECKED", checked)
        with pytest.raises(ConnectorError, match="DuckDB refused a query"):
            D._arrow_of(con, "SELECT nope FROM t")


def test_a_probe_that_differs_disables_the_one_step_path(monkeypatch) -> None:
    """The self-test compares with the public path: a ``_submit`` giving another table, or
    raising, fails it."""
    real_connect = duckdb.connect

    class Other:
        def __init__(self, c, answer):
            self.c, self.answer = c, answer

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.c.close()

        def _submit(self, sql, values, fmt, batch):
            if self.answer is None:
                raise TypeError("a changed signature")
            return self.c._submit(self.answer, values, fmt, batch)

        def sql(self, q):
            return self.c.sql(q)

    for answer in ("SELECT 2 AS a", None):
        monkeypatch.setattr(D, "_SUBMIT_CHECKED", [])
        monkeypatch.setattr(D, "_SUBMIT_PROBE", "SELECT 1 AS a")
        monkeypatch.setattr(duckdb, "connect", lambda *a, _ans=answer, **k: Other(real_connect(*a, **k), _ans))
        assert D._submit_works() is False
    monkeypatch.setattr(D, "_SUBMIT_CHECKED", [])
    monkeypatch.setattr(duckdb, "connect", real_connect)
    assert D._submit_works() is True
