"""Connector conformance: one suite, one subclass per database (after dbt's adapter tests).

A subclass only says how to get a URL of an empty database; every test of ``ConnectorSuite``
then runs against that connector. Plus unit tests of the PostgreSQL placeholder scanner.
"""

from __future__ import annotations

import datetime as dt
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from ppdp.connectors import connect
from ppdp.connectors.base import ADVISORY_LOCKS, TRANSACTIONAL_DDL, Connector
from ppdp.connectors.postgres_connector import first_keyword, number_placeholders
from ppdp.errors import ConnectorError
from ppdp.sql.dialect import Dialect
from ppdp.sql.quoting import quote_ident, quote_table


class ConnectorSuite:
    """Behaviour every connector must have. Subclasses override the ``url`` fixture."""

    @pytest.fixture
    def url(self) -> str:  # pragma: no cover - always overridden
        raise NotImplementedError

    @pytest.fixture
    def con(self, url: str) -> Iterator[Connector]:
        c = connect(url)
        yield c
        c.close()

    @pytest.fixture
    def schema(self, con: Connector) -> str:
        name = f"suite_{uuid.uuid4().hex[:8]}"
        con.execute(f"CREATE SCHEMA {quote_ident(name, con.dialect)}")
        return name

    def table(self, con: Connector, schema: str, name: str) -> str:
        return quote_table(schema, name, con.dialect)

    def count(self, con: Connector, relation: str) -> int:
        return int(con.query(f"SELECT COUNT(*) AS n FROM {relation}")["n"][0])

    def needs(self, con: Connector, capability: str) -> None:
        """Skip a promise the connector does not make (it says so in ``capabilities``)."""
        if capability not in con.capabilities:
            pytest.skip(f"{type(con).__name__} does not declare {capability}")

    # -- query / execute ---------------------------------------------------------------------

    def test_protocol_attributes(self, con: Connector, url: str) -> None:
        assert con.url == url
        assert isinstance(con.dialect, Dialect) and con.dialect.name
        assert isinstance(con.default_schema, str) and con.default_schema

    def test_query_with_parameters(self, con: Connector) -> None:
        df = con.query("SELECT CAST(? AS BIGINT) + 1 AS a, CAST(? AS VARCHAR) AS b, CAST(? AS VARCHAR) IS NULL AS c",
                       [41, "x y", None])
        assert df.to_dicts() == [{"a": 42, "b": "x y", "c": True}]

    def test_execute_with_parameters(self, con: Connector, schema: str) -> None:
        t = self.table(con, schema, "t")
        con.execute(f"CREATE TABLE {t} (i BIGINT, s VARCHAR, f DOUBLE PRECISION, ts TIMESTAMP)")
        stamp = dt.datetime(2024, 2, 29, 12, 30, 15, 123456)
        con.execute(f"INSERT INTO {t} VALUES (?, ?, ?, ?)", [1, "one", 0.5, stamp])
        con.execute(f"INSERT INTO {t} VALUES (?, ?, ?, ?)", [2, None, None, None])
        got = con.query(f"SELECT i, s, f, ts FROM {t} WHERE i >= ? ORDER BY i", [1])
        assert got.rows() == [(1, "one", 0.5, stamp), (2, None, None, None)]

    def test_question_marks_inside_quotes_are_not_placeholders(self, con: Connector) -> None:
        df = con.query("""SELECT '?' AS "q?", 'it''s ?' AS "a""?", CAST(? AS VARCHAR) AS p -- really ?
                          /* and ? here */""", ["x"])
        assert df.columns == ["q?", 'a"?', "p"]
        assert df.row(0) == ("?", "it's ?", "x")

    def test_wrong_number_of_parameters_is_a_connector_error(self, con: Connector) -> None:
        with pytest.raises(ConnectorError):
            con.query("SELECT CAST(? AS BIGINT) AS a, CAST(? AS BIGINT) AS b", [1])

    # -- write_frame ---------------------------------------------------------------------------

    def test_write_frame_round_trip(self, con: Connector, schema: str) -> None:
        frame = pl.DataFrame({
            "i": pl.Series([1, None, -(2**62), 3], dtype=pl.Int64),
            "f": pl.Series([1.5, None, -0.0, 1e300], dtype=pl.Float64),
            "s": pl.Series(["a", None, "", "ünï ? 'q' \"d\""], dtype=pl.String),
        })
        con.write_frame(schema, "frame", frame)
        back = con.query(f"SELECT * FROM {self.table(con, schema, 'frame')} ORDER BY i NULLS FIRST")
        expected = frame.sort("i", nulls_last=False)
        assert_frame_equal(back, expected)
        assert [c for c, _ in con.relation_columns(schema, "frame")] == ["i", "f", "s"]

    def test_write_frame_into_default_schema(self, con: Connector) -> None:
        name = f"frame_{uuid.uuid4().hex[:8]}"
        con.write_frame(con.default_schema, name, pl.DataFrame({"x": [1, 2, 3]}))
        assert self.count(con, self.table(con, con.default_schema, name)) == 3

    def test_write_frame_refuses_an_existing_table(self, con: Connector, schema: str) -> None:
        con.write_frame(schema, "t", pl.DataFrame({"x": [1]}))
        with pytest.raises(ConnectorError):
            con.write_frame(schema, "t", pl.DataFrame({"x": [2]}))
        assert self.count(con, self.table(con, schema, "t")) == 1

    # -- transactions --------------------------------------------------------------------------

    def test_transaction_commits(self, con: Connector, schema: str, url: str) -> None:
        t = self.table(con, schema, "t")
        with con.transaction():
            con.execute(f"CREATE TABLE {t} (x INTEGER)")
            con.execute(f"INSERT INTO {t} VALUES (?)", [1])
            con.write_frame(schema, "w", pl.DataFrame({"x": [1, 2]}))
        other = connect(url)  # the commit is visible from another connection
        try:
            assert self.count(other, t) == 1
            assert self.count(other, self.table(con, schema, "w")) == 2
        finally:
            other.close()

    def test_failing_statement_rolls_back_everything(self, con: Connector, schema: str) -> None:
        self.needs(con, TRANSACTIONAL_DDL)
        t = self.table(con, schema, "t")
        con.execute(f"CREATE TABLE {t} (x INTEGER)")
        with pytest.raises(ConnectorError), con.transaction():
            con.execute(f"INSERT INTO {t} VALUES (?)", [1])
            con.execute(f"CREATE TABLE {self.table(con, schema, 'created')} (y INTEGER)")
            con.write_frame(schema, "w", pl.DataFrame({"x": [1, 2]}))
            con.execute(f"INSERT INTO {self.table(con, schema, 'missing')} VALUES (1)")
        assert self.count(con, t) == 0
        assert con.relation_columns(schema, "created") is None
        assert con.relation_columns(schema, "w") is None
        con.execute(f"INSERT INTO {t} VALUES (?)", [2])  # the connector is usable again
        assert self.count(con, t) == 1

    def test_python_exception_rolls_back(self, con: Connector, schema: str) -> None:
        self.needs(con, TRANSACTIONAL_DDL)
        t = self.table(con, schema, "t")
        con.execute(f"CREATE TABLE {t} (x INTEGER)")
        with pytest.raises(RuntimeError, match="boom"), con.transaction():
            con.execute(f"INSERT INTO {t} VALUES (1)")
            raise RuntimeError("boom")
        assert self.count(con, t) == 0

    def test_nested_transaction_joins_the_outer_one(self, con: Connector, schema: str) -> None:
        self.needs(con, TRANSACTIONAL_DDL)
        t = self.table(con, schema, "t")
        con.execute(f"CREATE TABLE {t} (x INTEGER)")
        with pytest.raises(RuntimeError), con.transaction():
            con.execute(f"INSERT INTO {t} VALUES (1)")
            with con.transaction():
                con.execute(f"INSERT INTO {t} VALUES (2)")
            assert self.count(con, t) == 2  # the inner block did not commit on its own...
            raise RuntimeError("outer fails")
        assert self.count(con, t) == 0  # ...so the outer rollback removes both rows
        with con.transaction():
            with con.transaction():
                con.execute(f"INSERT INTO {t} VALUES (3)")
        assert self.count(con, t) == 1

    # -- catalog -------------------------------------------------------------------------------

    def test_relation_columns(self, con: Connector, schema: str) -> None:
        t = self.table(con, schema, "t")
        con.execute(f"CREATE TABLE {t} (b BIGINT, a VARCHAR, c DOUBLE PRECISION)")
        con.execute(f"CREATE VIEW {self.table(con, schema, 'v')} AS SELECT a, b FROM {t}")
        cols = con.relation_columns(schema, "t")
        assert [c for c, _ in cols] == ["b", "a", "c"]
        assert cols[0][1].upper() == "BIGINT" and all(isinstance(ty, str) and ty for _, ty in cols)
        assert [c for c, _ in con.relation_columns(schema, "v")] == ["a", "b"]
        assert con.relation_columns(schema, "missing") is None
        assert con.relation_columns("no_such_schema", "t") is None

    def test_names_with_spaces_quotes_and_keywords(self, con: Connector) -> None:
        schema, name = 'my "odd" schema', 'select from "t"'
        con.execute(f"CREATE SCHEMA {quote_ident(schema, con.dialect)}")
        frame = pl.DataFrame({"group": [1, 2], "a b": ["x", "y"], 'q"uote': [0.5, None], "order": ["?", "'"]})
        con.write_frame(schema, name, frame)
        rel = self.table(con, schema, name)
        assert con.relation_columns(schema, name) is not None
        assert [c for c, _ in con.relation_columns(schema, name)] == frame.columns
        cols = ", ".join(quote_ident(c, con.dialect) for c in frame.columns)
        back = con.query(f"SELECT {cols} FROM {rel} WHERE {quote_ident('order', con.dialect)} = ? ORDER BY 1", ["?"])
        assert back.row(0) == (1, "x", 0.5, "?")
        view = self.table(con, schema, "view of 'it'")
        con.execute(f"CREATE VIEW {view} AS SELECT {quote_ident('group', con.dialect)} FROM {rel}")
        assert self.count(con, view) == 2

    def test_run_lock(self, con: Connector) -> None:
        assert con.try_lock("ppdp:published.x")
        con.unlock("ppdp:published.x")
        assert con.try_lock("ppdp:published.x")
        con.unlock("ppdp:published.x")

    # -- errors --------------------------------------------------------------------------------

    def test_statement_error_is_a_clear_connector_error(self, con: Connector) -> None:
        with pytest.raises(ConnectorError, match="no_such_table") as info:
            con.query("SELECT * FROM no_such_table")
        assert "does not exist" in str(info.value)
        with pytest.raises(ConnectorError, match="no_such_table"):
            con.execute("DROP TABLE no_such_table")

    def test_failed_statement_does_not_poison_the_next(self, con: Connector) -> None:
        with pytest.raises(ConnectorError):
            con.query("SELEC 1")
        assert con.query("SELECT 1 AS one")["one"][0] == 1


class TestDuckDB(ConnectorSuite):
    @pytest.fixture
    def url(self, tmp_path: Path) -> str:
        return f"duckdb://{tmp_path / 'suite.duckdb'}"


@pytest.mark.spark
class TestSpark(ConnectorSuite):
    """Spark in local mode; one session per process (``spark_url``), a schema per test."""

    @pytest.fixture
    def url(self, spark_url: str) -> str:
        return spark_url

    def test_no_transaction_means_statements_stand(self, con: Connector, schema: str) -> None:
        """What Spark does instead of a rollback: each statement stands on its own (ppdp's safety
        comes from verifying before the view switch, tests/adapters/test_spark_connector.py)."""
        assert TRANSACTIONAL_DDL not in con.capabilities and ADVISORY_LOCKS not in con.capabilities
        t = self.table(con, schema, "t")
        con.execute(f"CREATE TABLE {t} (x INTEGER)")
        with pytest.raises(RuntimeError), con.transaction():
            con.execute(f"INSERT INTO {t} VALUES (1)")
            raise RuntimeError("boom")
        assert self.count(con, t) == 1

    def test_names_with_spaces_quotes_and_keywords(self, con: Connector, schema: str) -> None:
        """Spark's catalog takes schema and table names of letters, digits and _ only (a clear
        ConnectorError otherwise); column names may be anything, quoted."""
        with pytest.raises(ConnectorError, match="not a valid name"):
            con.execute(f"CREATE SCHEMA {quote_ident('my odd schema', con.dialect)}")
        frame = pl.DataFrame({"group": [1, 2], "a b": ["x", "y"], 'q"uote': [0.5, None], "order": ["?", "'"]})
        con.write_frame(schema, "select", frame)
        rel = self.table(con, schema, "select")
        assert [c for c, _ in con.relation_columns(schema, "select")] == frame.columns
        cols = ", ".join(quote_ident(c, con.dialect) for c in frame.columns)
        back = con.query(f"SELECT {cols} FROM {rel} WHERE {quote_ident('order', con.dialect)} = ? ORDER BY 1", ["?"])
        assert back.row(0) == (1, "x", 0.5, "?")
        view = self.table(con, schema, "from")
        con.execute(f"CREATE VIEW {view} AS SELECT {quote_ident('group', con.dialect)} FROM {rel}")
        assert self.count(con, view) == 2

    def test_run_lock_excludes_another_connector(self, con: Connector, url: str) -> None:
        """The flock of a local warehouse: a second holder (here another connector) is refused."""
        other = connect(url)
        try:
            assert con.try_lock("ppdp:published.y")
            assert not other.try_lock("ppdp:published.y")
            con.unlock("ppdp:published.y")
            assert other.try_lock("ppdp:published.y")
            other.unlock("ppdp:published.y")
        finally:
            other.close()


@pytest.mark.postgres
class TestPostgres(ConnectorSuite):
    @pytest.fixture
    def url(self, postgres_database: str) -> str:
        return postgres_database

    def test_dollar_quotes_and_statement_log(self, con: Connector) -> None:
        df = con.query("SELECT $$it's ?$$ AS a, $tag$?$tag$ AS b, CAST(? AS BIGINT) AS c", [7])
        assert df.row(0) == ("it's ?", "?", 7)
        assert con.statements[-1].endswith("CAST($1 AS BIGINT) AS c")
        assert con.bytes_in > 0

    def test_statements_that_copy_cannot_wrap(self, con: Connector) -> None:
        assert con.query("SHOW standard_conforming_strings").row(0) == ("on",)
        plan = con.query("EXPLAIN SELECT 1")
        assert plan.height >= 1
        assert con.query("/* c */ (SELECT 2 AS two)")["two"][0] == 2  # and back to COPY

    def test_bytes_out_counts_ingested_frames(self, con: Connector, schema: str) -> None:
        before = con.bytes_out
        frame = pl.DataFrame({"x": list(range(1000))})
        con.write_frame(schema, "t", frame)
        assert con.bytes_out - before >= 8000
        assert con.statements[-2:] == [f'COPY "{schema}"."t" FROM STDIN -- ADBC bulk ingest, 1000 rows',
                                       f'ANALYZE "{schema}"."t"']

    def test_run_lock_excludes_other_sessions(self, con: Connector, url: str) -> None:
        other = connect(url)
        try:
            assert con.try_lock("ppdp:published.adult")
            assert not other.try_lock("ppdp:published.adult")
            assert other.try_lock("ppdp:published.other")
            con.unlock("ppdp:published.adult")
            assert other.try_lock("ppdp:published.adult")
        finally:
            other.close()  # closing the session frees its locks...
        deadline = time.monotonic() + 5  # ...once its backend has exited, which the close does not wait for
        while not con.try_lock("ppdp:published.adult"):
            assert time.monotonic() < deadline, "the closed session's lock was never freed"
            time.sleep(0.05)

    def test_numeric_results_come_back_as_floats(self, con: Connector) -> None:
        df = con.query("SELECT COUNT(*) * 1.0 / 3 AS r, CAST(2.5 AS NUMERIC) AS n")
        assert df.schema == pl.Schema({"r": pl.Float64, "n": pl.Float64})
        assert df.row(0) == (pytest.approx(1 / 3), 2.5)

    def test_unreachable_server_is_a_connector_error(self, postgres_server) -> None:
        with pytest.raises(ConnectorError, match="Cannot connect to PostgreSQL") as info:
            connect(postgres_server.url_for("no_such_database").replace("postgres@", "postgres:secret@"))
        assert "secret" not in str(info.value) and "no_such_database" in str(info.value)


@pytest.mark.parametrize(("sql", "expected", "n"), [
    ("SELECT ?", "SELECT $1", 1),
    ("SELECT ?, ?, ?", "SELECT $1, $2, $3", 3),
    ("SELECT '?', ?", "SELECT '?', $1", 1),
    ("SELECT 'it''s ?' , ?", "SELECT 'it''s ?' , $1", 1),
    ('SELECT "a?""b?" FROM t WHERE x = ?', 'SELECT "a?""b?" FROM t WHERE x = $1', 1),
    ("SELECT E'\\'?' , ?", "SELECT E'\\'?' , $1", 1),
    ("SELECT e'\\\\' , ?", "SELECT e'\\\\' , $1", 1),
    ("SELECT note'\\' , ?", "SELECT note'\\' , $1", 1),  # not an E-string: the backslash is plain
    ("SELECT $$?$$, $q$ ' ? $q$, ?", "SELECT $$?$$, $q$ ' ? $q$, $1", 1),
    ("SELECT $1, ?", "SELECT $1, $1", 1),
    ("SELECT a$b, ?", "SELECT a$b, $1", 1),
    ("SELECT 1 -- ? comment\n, ?", "SELECT 1 -- ? comment\n, $1", 1),
    ("SELECT /* ? /* nested ? */ ? */ ?", "SELECT /* ? /* nested ? */ ? */ $1", 1),
    ("SELECT 'unterminated ?", "SELECT 'unterminated ?", 0),
    ("", "", 0),
])
def test_number_placeholders(sql: str, expected: str, n: int) -> None:
    assert number_placeholders(sql) == (expected, n)


@pytest.mark.parametrize(("sql", "word"), [
    ("SELECT 1", "SELECT"), ("  with x AS (SELECT 1) SELECT * FROM x", "WITH"), ("((select 1))", "SELECT"),
    ("-- c\n/* d /* e */ */ EXPLAIN SELECT 1", "EXPLAIN"), ("show search_path", "SHOW"), ("", ""),
])
def test_first_keyword(sql: str, word: str) -> None:
    assert first_keyword(sql) == word
