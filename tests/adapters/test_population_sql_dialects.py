"""The SQL checks of delta-presence and k-map against a population (sql/verify.py) on DuckDB,
PostgreSQL and Spark.

A random population (two QIDs with a quote in a value), a research subset of it published at
some levels of two small hierarchies stored in ``_ppdp.hierarchies``: each model's version check
must give the AD of the definition computed in Python (population generalized row by row).
"""

from __future__ import annotations

import uuid
from collections import Counter

import numpy as np
import polars as pl
import pytest

from ppdp.connectors import connect
from ppdp.engine.core import catalog
from ppdp.engine.core import hierarchy as hier
from ppdp.engine.privacy import build_model
from ppdp.sql import verify as V
from ppdp.sql.quoting import quote_table

A = ["a", "b", "c'q", "d"]
B = ["x", "y", "z"]
HA = hier.from_rows("qa", [[v, "ab" if v in ("a", "b") else "cd", "*"] for v in A])
HB = hier.from_rows("qb", [[v, "xy" if v != "z" else "z", "*"] for v in B])


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


def _expected(pop: pl.DataFrame, published: pl.DataFrame, levels: dict[str, int], dmin: float, dmax: float) -> tuple[float, float]:
    """(delta-presence AD, k-map AD) from the definitions."""
    gen = {"qa": {r[0]: r[levels["qa"]] for r in HA.rows}, "qb": {r[0]: r[levels["qb"]] for r in HB.rows}}
    persons = Counter((gen["qa"][a], gen["qb"][b]) for a, b in pop.select("qa", "qb").iter_rows())
    released = Counter(published.select("qa", "qb").iter_rows())
    dp = max(max(dmin - released.get(c, 0) / n, released.get(c, 0) / n - dmax, 0.0) for c, n in persons.items())
    dp = max([dp] + [1.0 for c in released if c not in persons])
    km = min(persons.get(c, 0) for c in released)
    return dp, float(km)


def test_population_checks_equal_the_definitions(database) -> None:
    con, schema = database
    d = con.dialect
    rng = np.random.default_rng(3)
    n = 120
    pop = pl.DataFrame({"qa": [A[int(i)] for i in rng.integers(0, len(A), n)],
                        "qb": [B[int(i)] for i in rng.integers(0, len(B), n)],
                        "flag": rng.random(n) < 0.4})
    con.write_frame(schema, "pop", pop)
    catalog.ensure_schema(con)
    release = f'"s"."r_{uuid.uuid4().hex[:8]}"'
    catalog.store_hierarchies(con, release, 1, [HA, HB], uuid.uuid4().hex)
    checked = 0
    for levels in ({"qa": 0, "qb": 0}, {"qa": 1, "qb": 0}, {"qa": 1, "qb": 1}, {"qa": 2, "qb": 1}):
        gen = {"qa": {r[0]: r[levels["qa"]] for r in HA.rows}, "qb": {r[0]: r[levels["qb"]] for r in HB.rows}}
        research = pop.filter(pl.col("flag"))
        published = pl.DataFrame({"qa": [gen["qa"][v] for v in research["qa"]], "qb": [gen["qb"][v] for v in research["qb"]]})
        table = f"v_{checked}"
        con.write_frame(schema, table, published)
        relation = quote_table(schema, table, d)
        population = V.population_classes(f"{quote_table(schema, 'pop', d)} AS src", release, 1, levels, ["qa", "qb"], d)
        for dmin, dmax in ((0.0, 0.5), (0.2, 0.9)):
            dp_model = build_model("delta-presence", {"dmin": dmin, "dmax": dmax, "research": "flag = TRUE"})
            km_model = build_model("k-map", {"k": 5, "population": "x.pop"})
            dp_exp, km_exp = _expected(pop, published, levels, dmin, dmax)
            row = con.query(dp_model.population_version_sql(relation, ["qa", "qb"], population, d)).row(0, named=True)
            assert float(row["ad"]) == pytest.approx(dp_exp, abs=1e-12), (levels, dmin, dmax)
            assert dp_model.feasible(float(row["ad"])) == dp_model.feasible(dp_exp)
            row = con.query(km_model.population_version_sql(relation, ["qa", "qb"], population, d)).row(0, named=True)
            assert float(row["ad"]) == km_exp and int(row["classes"]) == published.unique().height
        checked += 1
