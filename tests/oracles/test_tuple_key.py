"""sql/history.py's key of a tuple of texts (``tuple_hash`` in SQL, ``tuple_key`` its Python twin):
the two agree on DuckDB and PostgreSQL, and the key is injective: every tuple over an alphabet
of the escape's own characters has a key of its own (the format before SA_KEY_FORMAT 2 doubled
'|', so ('a|', 'b') and ('a', '|b') shared one, and so did NULL and the text '\\N')."""

from __future__ import annotations

import itertools

import duckdb
import pytest

from ppdp.sql.dialect import DUCKDB
from ppdp.sql.history import tuple_hash, tuple_key

TUPLES = [("a|", "b"), ("a", "|b"), ("a", "b"), ("", ""), (None, "x"), ("\\N", "x"), ("~N", "x"), ("a||", "|"),
          ("é", "ß|"), ("~1", "~"), ("~", "1"), ("|", "~0")]


def _sql_keys(con, tuples) -> list[str]:
    return [con.execute(f"SELECT {tuple_hash(['c0', 'c1'], 't', DUCKDB)} FROM (SELECT ?::VARCHAR AS c0, ?::VARCHAR AS c1) AS t",
                        list(values)).fetchone()[0] for values in tuples]


def test_sql_and_python_keys_agree_on_duckdb():
    con = duckdb.connect()
    try:
        assert _sql_keys(con, TUPLES) == [tuple_key(list(t)) for t in TUPLES]
    finally:
        con.close()


@pytest.mark.postgres
def test_sql_and_python_keys_agree_on_postgres(postgres_database):
    from ppdp.connectors import connect

    con = connect(postgres_database)
    try:
        con.execute("CREATE TABLE t (i INTEGER, c0 VARCHAR, c1 VARCHAR)")
        for i, (a, b) in enumerate(TUPLES):
            con.execute("INSERT INTO t VALUES (?, ?, ?)", [i, a, b])
        got = con.query(f"SELECT i, {tuple_hash(['c0', 'c1'], 't', con.dialect)} AS k FROM t AS t ORDER BY i")["k"].to_list()
    finally:
        con.close()
    assert got == [tuple_key(list(t)) for t in TUPLES]


@pytest.mark.spark
def test_sql_and_python_keys_agree_on_spark(spark_url):
    """Spark reads a backslash in a literal as an escape: the escape's backslash is CHR(92)."""
    from ppdp.connectors import connect

    con = connect(spark_url)
    try:
        rows = " UNION ALL ".join(f"SELECT {i} AS i, CAST(? AS VARCHAR(40)) AS c0, CAST(? AS VARCHAR(40)) AS c1"
                                  for i in range(len(TUPLES)))
        params = [v for t in TUPLES for v in t]
        got = con.query(f"SELECT t.i, {tuple_hash(['c0', 'c1'], 't', con.dialect)} AS k FROM ({rows}) AS t ORDER BY t.i",
                        params)["k"].to_list()
    finally:
        con.close()
    assert got == [tuple_key(list(t)) for t in TUPLES]


# every text of at most 3 characters over the escape's characters and a letter, and NULL
TEXTS = [None, *("".join(p) for n in range(4) for p in itertools.product("|~01Na\\", repeat=n))]


def test_every_pair_of_short_texts_has_its_own_key():
    keys = {tuple_key([a, b]) for a in TEXTS for b in TEXTS}
    assert len(keys) == len(TEXTS) ** 2


def test_tuples_of_different_lengths_have_their_own_keys():
    texts = TEXTS[:60]
    keys = [tuple_key(list(t)) for n in (1, 2, 3) for t in itertools.product(texts, repeat=n) if n < 3 or t[0] is None]
    assert len(set(keys)) == len(keys)


def test_the_old_collisions_are_gone():
    assert tuple_key(["a|", "b"]) != tuple_key(["a", "|b"])
    assert tuple_key([None]) != tuple_key(["\\N"])
