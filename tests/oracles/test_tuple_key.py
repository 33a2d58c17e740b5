"""sql/history.py's key of a tuple of texts (``tuple_hash`` in SQL, ``tuple_key`` its Python twin):
the two agree, and a known defect is recorded: the escape (a value's '|' doubled, values joined
by '|') is not injective, so two different tuples can share a key."""

from __future__ import annotations

import duckdb
import pytest

from ppdp.sql.dialect import DUCKDB
from ppdp.sql.history import tuple_hash, tuple_key

TUPLES = [("a|", "b"), ("a", "|b"), ("a", "b"), ("", ""), (None, "x"), ("\\N", "x"), ("a||", "|"), ("é", "ß|")]


@pytest.mark.parametrize("values", TUPLES)
def test_sql_and_python_keys_agree(values):
    con = duckdb.connect()
    try:
        con.execute("CREATE TABLE t (c0 VARCHAR, c1 VARCHAR)")
        con.execute("INSERT INTO t VALUES (?, ?)", list(values))
        (sql_key,) = con.execute(f"SELECT {tuple_hash(['c0', 'c1'], 't', DUCKDB)} FROM t").fetchone()
    finally:
        con.close()
    assert sql_key == tuple_key(list(values))


@pytest.mark.xfail(strict=True, reason="known defect: doubling '|' is not an injective escape ('a|','b' and "
                                       "'a','|b' both give 'a|||b'); a fix changes stored Q keys (a migration)")
def test_different_tuples_have_different_keys():
    assert tuple_key(["a|", "b"]) != tuple_key(["a", "|b"])
