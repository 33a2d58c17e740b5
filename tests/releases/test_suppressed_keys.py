"""suppressed_keys_query (rewritten for PostgreSQL's planner: one hash column per combination,
ranking only partly kept combinations) against the rule it implements, computed in Python:
per (QID, SA) combination keep the ``n`` smallest keys, suppress the rest; combinations absent
from the retained table (or kept 0 times) lose every row. NULLs and look-alike texts included."""

from __future__ import annotations

import random

import polars as pl

from ppdp.connectors import connect
from ppdp.sql import queries as Q
from ppdp.sql.dialect import DUCKDB


def test_suppressed_keys_follow_the_rule(tmp_path):
    rng = random.Random(7)
    values_a = ["x", "x|", "|x", None, "1:x", "N"]  # separators, length prefixes and NULL look-alikes
    rows = [(i, rng.choice(values_a), rng.choice([1.0, 2.5, None]), rng.choice(["s", "t"])) for i in range(1, 601)]
    src = pl.DataFrame(rows, schema={"id": pl.Int64, "a": pl.String, "b": pl.Float64, "sa": pl.String}, orient="row")
    con = connect(f"duckdb://{tmp_path / 'x.duckdb'}")
    try:
        con.write_frame("main", "src", src)
        text = lambda v: None if v is None else (str(v).removesuffix(".0") if isinstance(v, float) else v)  # noqa: E731
        groups: dict[tuple, list[int]] = {}
        for i, a, b, sa in rows:
            groups.setdefault((text(a), text(b), sa), []).append(i)
        combos = sorted(groups, key=str)
        keep = {c: rng.choice([0, 1, len(groups[c]) // 2, len(groups[c]), len(groups[c]) + 3]) for c in combos}
        kept_rows = [c for c in combos if rng.random() < 0.9]  # the others are absent: all suppressed
        retained = pl.DataFrame([(*c, keep[c]) for c in kept_rows], orient="row",
                                schema={"a": pl.String, "b": pl.String, "sa": pl.String, Q.COUNT_COLUMN: pl.Int64})
        con.execute("CREATE SCHEMA _ppdp")
        con.write_frame("_ppdp", "retained_t", retained)
        sql = Q.suppressed_keys_query(Q.Source("main", "src", None, DUCKDB), "id", ["a", "b"], ["sa"], "retained_t")
        got = sorted(int(k) for k in con.query(sql)["key"].to_list())
    finally:
        con.close()
    expected = []
    for c, ids in groups.items():
        n = keep[c] if c in kept_rows else 0
        expected += sorted(ids)[n:]
    assert len(expected) > 50 and got == sorted(expected)
