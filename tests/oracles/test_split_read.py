"""A large base table's rows read as two halves of its columns at once (validate.read_split):
the same Arrow table as one read, and one read wherever the halves could not be trusted to line
up (a view, a transaction, a subset, rows that changed between the two reads)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from ppdp.connectors.base import PARALLEL_READS
from ppdp.connectors.duckdb_connector import DuckDBConnector
from ppdp.engine.core.encoding import encode_histogram
from ppdp.engine.core.hierarchy import read_arx_csv
from ppdp.engine.release.stages import validate as VA
from ppdp.sql import queries as Q
from ppdp.sql.dialect import DUCKDB
from tests.oracles.test_encode_rows import assert_same_table

COLUMNS = ["age", "education", "marital-status", "native-country", "occupation", "race", "sex", "workclass", "salary-class"]


@pytest.fixture
def adult(adult_db: Path):
    con = DuckDBConnector(f"duckdb:///{adult_db}")
    yield con
    con.close()


def one_read(con: DuckDBConnector, source: Q.Source, types: dict[str, str]) -> pa.Table:
    return con.query_arrow(Q.text_rows_query(source, COLUMNS, types))


def test_the_halves_side_by_side_are_the_one_read(adult, monkeypatch):
    assert PARALLEL_READS in adult.capabilities
    types = dict(adult.relation_columns("main", "adult") or [])
    source = Q.Source(None, "adult", None, DUCKDB)
    split = VA.read_split(adult, source, COLUMNS, types)
    assert split is not None
    expected = one_read(adult, source, types)
    assert split.schema == expected.schema and split.equals(expected)
    # read_rows takes the split from SPLIT_READ_MIN_ROWS rows on (adult: 30,162), one read below
    single: list[str] = []
    real_query_arrow = adult.query_arrow
    monkeypatch.setattr(adult, "query_arrow", lambda sql: single.append(sql) or real_query_arrow(sql))
    assert VA.SPLIT_READ_MIN_ROWS <= 30_162
    assert VA.read_rows(adult, source, COLUMNS, 30_162, types).equals(expected) and single == []
    assert VA.read_rows(adult, source, COLUMNS, VA.SPLIT_READ_MIN_ROWS - 1, types).equals(expected) and len(single) == 1
    # and the encoded table is the GROUP BY path's, field by field
    from tests.conftest import ADULT, ADULT_QIDS
    hs = [read_arx_csv(ADULT / f"adult_hierarchy_{q}.csv", q) for q in ADULT_QIDS]
    fast = VA.read_encoded(adult, source, ADULT_QIDS, ["salary-class"], hs, n_rows=30_162, types=types)
    general = encode_histogram(adult.query(Q.histogram_query(source, ADULT_QIDS, ["salary-class"], types)),
                               ADULT_QIDS, ["salary-class"], hs)
    assert_same_table(fast, general)


def test_one_read_where_the_halves_cannot_line_up(adult):
    """No row ids (a view, a research subset) or another connection would not see the rows (a
    transaction): no split, and read_rows reads once, the same rows."""
    adult.execute('CREATE VIEW main.adult_view AS SELECT * FROM main.adult')
    types = dict(adult.relation_columns("main", "adult") or [])
    view = Q.Source(None, "adult_view", None, DUCKDB)
    assert VA.read_split(adult, view, COLUMNS, types) is None
    assert VA.read_rows(adult, view, COLUMNS, 30_162, types).equals(one_read(adult, view, types))
    subset = Q.Source(None, "adult", None, DUCKDB, research="id <= 20000")
    assert VA.read_split(adult, subset, COLUMNS, types) is None
    assert VA.read_rows(adult, subset, COLUMNS, 20_000, types).num_rows == 20_000
    with adult.transaction():
        assert VA.read_split(adult, Q.Source(None, "adult", None, DUCKDB), COLUMNS, types) is None
    with pytest.raises(ValueError, match="no storage row id"):
        Q.text_rows_query(subset, COLUMNS, types, storage_row_id=True)


def test_rows_changed_between_the_two_reads_are_read_again_once(adult, monkeypatch):
    """The attack on two snapshots: rows deleted and as many inserted between the first half's
    read and the second's (the row counts agree, the row ids do not). The halves are refused and
    the source is read once, so no row is a mix of two rows."""
    types = dict(adult.relation_columns("main", "adult") or [])
    source = Q.Source(None, "adult", None, DUCKDB)
    real = DuckDBConnector.query_arrow_parallel

    def changing(self, sqls):
        first = self.query_arrow(sqls[0])
        self.execute("DELETE FROM main.adult WHERE id <= 5")
        self.execute("INSERT INTO main.adult SELECT id + 100000, * EXCLUDE (id) FROM main.adult WHERE id BETWEEN 6 AND 10")
        second = self.query_arrow(sqls[1])
        assert first.num_rows == second.num_rows  # the counts alone would not tell
        return [first, second]

    monkeypatch.setattr(DuckDBConnector, "query_arrow_parallel", changing)
    assert VA.read_split(adult, source, COLUMNS, types) is None
    monkeypatch.setattr(DuckDBConnector, "query_arrow_parallel", real)
    after = VA.read_rows(adult, source, COLUMNS, 30_162, types)
    assert after.equals(one_read(adult, source, types)) and after.num_rows == 30_162


def test_a_failed_half_raises_after_both_reads_end(adult):
    from ppdp.errors import ConnectorError

    good = Q.text_rows_query(Q.Source(None, "adult", None, DUCKDB), COLUMNS[:2])
    with pytest.raises(ConnectorError, match="DuckDB refused a query"):
        adult.query_arrow_parallel([good, 'SELECT "no such column" FROM main.adult AS src WHERE src.nope'])
    with pytest.raises(ConnectorError, match="DuckDB refused a query"):
        adult.query_arrow_parallel(['SELECT src.nope FROM main.adult AS src', good])
    assert adult.query_arrow_parallel([good, good])[0].num_rows == 30_162  # the connection is still usable


def test_another_owners_connection_reads_in_parallel_only_when_it_says_it_may(adult_db: Path):
    """dbt-duckdb's session may hold a transaction whose rows a cursor would not see: a borrowed
    connection reads once unless its owner declares it idle between ppdp's calls."""
    import duckdb

    raw = duckdb.connect(str(adult_db))
    try:
        query = Q.text_rows_query(Q.Source(None, "adult", None, DUCKDB), COLUMNS[:2])
        assert DuckDBConnector.over(raw).query_arrow_parallel([query, query]) is None
        idle = DuckDBConnector.over(raw, idle_between_calls=True)
        first, second = idle.query_arrow_parallel([query, query])
        assert first.equals(second) and first.num_rows == 30_162
        idle.close()  # closes its cursors, not the owner's connection
        assert raw.execute("SELECT count(*) FROM main.adult").fetchall() == [(30_162,)]
        # the owner's uncommitted rows: its own reads see them, a cursor would not
        raw.execute("BEGIN TRANSACTION")
        raw.execute("DELETE FROM main.adult WHERE id <= 10")
        assert DuckDBConnector.over(raw).query_arrow_parallel([query, query]) is None
        assert len(VA.read_rows(DuckDBConnector.over(raw), Q.Source(None, "adult", None, DUCKDB), COLUMNS, 30_152,
                                None)) == 30_152
        raw.execute("ROLLBACK")
    finally:
        raw.close()


def test_a_column_named_like_the_row_ids_is_read_once(adult, monkeypatch):
    """A table with a column named rowid: DuckDB resolves the name to that column, not to the
    row ids, so the halves could not be lined up by it (here every row has the same value); no
    split, one read. Without the relation's columns (``types`` None) there is no split either."""
    adult.execute('CREATE TABLE main.adult_rowid AS SELECT 7 AS "ROWID", * FROM main.adult')
    types = dict(adult.relation_columns("main", "adult_rowid") or [])
    source = Q.Source(None, "adult_rowid", None, DUCKDB)
    parallel: list[list[str]] = []
    real = DuckDBConnector.query_arrow_parallel
    monkeypatch.setattr(DuckDBConnector, "query_arrow_parallel", lambda self, sqls: parallel.append(sqls) or real(self, sqls))
    assert VA.read_split(adult, source, COLUMNS, types) is None
    assert VA.read_rows(adult, source, COLUMNS, 30_162, types).equals(one_read(adult, source, types))
    assert VA.read_split(adult, Q.Source(None, "adult", None, DUCKDB), COLUMNS, None) is None
    assert parallel == []  # refused before any read
