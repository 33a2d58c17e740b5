"""The anti-joins of a release (new row ids, withheld keys, suppressed keys) must be
plans PostgreSQL runs with hashes. ``x NOT IN (SELECT ...)`` is a SubPlan there (NULL semantics
forbid an anti-join; past work_mem it re-scans the subquery per row: a 1M-row rerun hung)."""

from __future__ import annotations

import polars as pl
import pytest

from ppdp.connectors import connect
from ppdp.engine.core import catalog
from ppdp.sql import queries as Q
from ppdp.sql.dialect import POSTGRES

pytestmark = pytest.mark.postgres

ROWS = 20_000


def plan(con, sql: str, params: list | None = None) -> str:
    return "\n".join(con.query(f"EXPLAIN {sql}", params)["QUERY PLAN"].to_list())


@pytest.fixture
def con(postgres_database):
    con = connect(postgres_database)
    try:
        con.write_frame("public", "src", pl.DataFrame({"id": range(ROWS), "a": [i % 7 for i in range(ROWS)]}))
        catalog.ensure_schema(con)
        con.execute("INSERT INTO _ppdp.row_ids SELECT 'r', CAST(id AS VARCHAR), md5(CAST(id AS VARCHAR)) FROM public.src WHERE id % 2 = 0")
        con.execute("INSERT INTO _ppdp.suppressed SELECT 'r', 1, CAST(id AS VARCHAR) FROM public.src WHERE id % 3 = 0")
        con.write_frame(Q.PRIVATE_SCHEMA, "withheld_x", pl.DataFrame({"key": [str(i) for i in range(0, ROWS, 5)]}))
        con.execute("ANALYZE _ppdp.row_ids")
        con.execute("ANALYZE _ppdp.suppressed")
        yield con
    finally:
        con.close()


def assert_hash_anti_join(text: str) -> None:
    assert "SubPlan" not in text, text
    assert "Hash Anti Join" in text or "Hash Right Anti Join" in text, text


def test_new_row_ids_is_a_hash_anti_join(con):
    source = Q.Source("public", "src", None, POSTGRES, key="id")
    assert_hash_anti_join(plan(con, Q.new_row_ids_statement(source), ["r", "r"]))
    # and it still does what it says: only keys without an id get one, once
    con.execute(Q.new_row_ids_statement(source), ["r", "r"])
    con.execute(Q.new_row_ids_statement(source), ["r", "r"])
    counts = con.query("SELECT COUNT(*) AS n, COUNT(DISTINCT key) AS k FROM _ppdp.row_ids WHERE release = 'r'").row(0)
    assert counts == (ROWS, ROWS)


def test_withheld_filter_is_a_hash_anti_join(con):
    source = Q.Source("public", "src", None, POSTGRES, withheld="withheld_x", key="id")
    sql = f"SELECT COUNT(*) AS n FROM {source.sql()}"
    assert_hash_anti_join(plan(con, sql))
    assert con.query(sql)["n"][0] == ROWS - len(range(0, ROWS, 5))


def test_release_select_suppression_is_a_hash_anti_join(con):
    source = Q.Source("public", "src", None, POSTGRES)
    select = Q.release_select(source, release="r", version=1, columns=["a"], levels={}, key="id")
    sql = select.sql(dialect="postgres")
    assert_hash_anti_join(plan(con, sql))
    # rows with a row id (even ids) that are not suppressed (multiples of 3)
    expected = sum(1 for i in range(ROWS) if i % 2 == 0 and i % 3 != 0)
    assert con.query(f"SELECT COUNT(*) AS n FROM ({sql}) AS x")["n"][0] == expected
