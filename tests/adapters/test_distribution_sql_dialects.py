"""The SQL checks of the sensitive-distribution models (sql/distributions.py) on DuckDB, PostgreSQL and Spark.

One random published table (two QID columns, one sensitive column with text values, one of
them with a quote and one NULL-free value that needs escaping) and its Q are written to each
database; each model's version check must give the kernel's AD and verdict, and its history
check the classes the kernel calls failing.
"""

from __future__ import annotations

import math
import uuid
from collections import Counter

import numpy as np
import polars as pl
import pytest

from ppdp.connectors import connect
from ppdp.engine.privacy import ClassStats, ModelContext, build_model
from ppdp.sql import distributions as DS
from ppdp.sql import history as H
from ppdp.sql.quoting import quote_table

VALUES = ["a", "b", "c'q", "d|e", "e", "f"]  # a quote and the key separator: escaped literals
HIER = [("a", "ab", "L", "*"), ("b", "ab", "L", "*"), ("c'q", "cd", "L", "*"), ("d|e", "cd", "L", "*"),
        ("e", "ef", "R", "*"), ("f", "ef", "R", "*")]
MODELS = [
    ("t-closeness", {"t": 0.3, "distance": "equal"}),
    ("t-closeness", {"t": 0.3, "distance": "ordered"}),
    ("t-closeness", {"t": 0.3, "distance": "hierarchical"}),
    ("recursive-cl-diversity", {"c": 2.0, "l": 2}),
    ("beta-likeness", {"beta": 1.0, "enhanced": False}),
    ("beta-likeness", {"beta": 1.0, "enhanced": True}),
]


def _world(seed: int):
    rng = np.random.default_rng(seed)
    n = 80
    table = pl.DataFrame({"g1": [str(x) for x in rng.integers(0, 4, n)], "g2": [str(x) for x in rng.integers(0, 2, n)],
                          "sa": [VALUES[int(i)] for i in rng.integers(0, len(VALUES), n)]})
    q = rng.random(len(VALUES)) + 0.05
    q /= q.sum()
    classes: dict[tuple, Counter] = {}
    for g1, g2, sa in table.iter_rows():
        classes.setdefault((g1, g2), Counter())[VALUES.index(sa)] += 1
    names = list(classes)
    pc, ps, pn = [], [], []
    for c, key in enumerate(names):
        for v, k in classes[key].items():
            pc.append(c)
            ps.append(v)
            pn.append(k)
    size = np.array([sum(classes[k].values()) for k in names], dtype=np.int64)
    stats = ClassStats(size, np.array(pc, dtype=np.int32), np.array(ps, dtype=np.int32), np.array(pn, dtype=np.int64), q)
    return table, pl.DataFrame({"sa": VALUES, "q": q.tolist()}), names, stats


@pytest.fixture(params=["duckdb", "postgres", "spark"])
def database(request, tmp_path):
    if request.param == "duckdb":
        url = f"duckdb://{tmp_path / 'd.duckdb'}"
    elif request.param == "postgres":
        request.applymarker(pytest.mark.postgres)
        url = request.getfixturevalue("postgres_database")
    else:
        request.applymarker(pytest.mark.spark)
        request.applymarker(pytest.mark.slow)
        url = request.getfixturevalue("spark_url")
    con = connect(url)
    schema = f"s_{uuid.uuid4().hex[:8]}"
    con.execute(f"CREATE SCHEMA {quote_table(None, schema, con.dialect)}")
    yield con, schema
    con.close()


def test_version_and_history_checks_equal_the_kernels(database, tmp_path) -> None:
    con, schema = database
    d = con.dialect
    table, qv, names, stats = _world(7)
    con.write_frame(schema, "t", table)
    con.write_frame(schema, "qv", qv)
    t, qd, cv = (quote_table(schema, x, d) for x in ("t", "qd", "cv"))
    con.execute(f"CREATE TABLE {qd} AS SELECT {H.sa_key(['sa'], 'x', d)} AS sa_key, x.q AS q FROM {quote_table(schema, 'qv', d)} AS x")
    con.execute(f"CREATE TABLE {cv} AS SELECT x.g1 || '/' || x.g2 AS sig_now, {H.sa_key(['sa'], 'x', d)} AS s, COUNT(*) AS n "
                f"FROM {t} AS x GROUP BY x.g1 || '/' || x.g2, {H.sa_key(['sa'], 'x', d)}")
    hier = tmp_path / "h.csv"
    hier.write_text("\n".join(";".join(r) for r in HIER) + "\n")
    ctx = ModelContext(("sa",), tuple((v,) for v in VALUES), str(tmp_path), str(hier))
    for name, params in MODELS:
        model = build_model(name, params).bind(ctx)
        per = model.class_ad(stats)
        row = con.query(model.version_sql(t, ["g1", "g2"], ["sa"], qd, d)).row(0, named=True)
        assert int(row["classes"]) == len(names), (name, params)
        expected = float(per.max())
        if math.isinf(expected):
            assert float(row["ad"]) >= DS.NOT_DIVERSE
        else:
            assert float(row["ad"]) == pytest.approx(expected, rel=1e-9, abs=1e-12), (name, params)
        (failing,) = model.history_failures("unused", lambda v: f"SELECT * FROM {cv}", lambda v: qd, [1], d=d)
        got = set(con.query(failing)["sig_now"].to_list())
        bad = {f"{g1}/{g2}" for (g1, g2), ad in zip(names, per, strict=True) if not model.feasible(float(ad))}
        assert got == bad, (name, params)
