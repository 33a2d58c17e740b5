"""Spark connector: a release of adult through Spark SQL in local mode equals
the DuckDB release row for row, and a failed run leaves the published view as it was (Spark
has no transaction to roll back).

One Spark session for the module (``spark_url``, started once per process: ~20 s); 2,000 rows.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import duckdb
import polars as pl
import pytest

from ppdp.connectors import connect
from ppdp.connectors.base import TRANSACTIONAL_DDL
from ppdp.engine.core.spec import load_spec
from ppdp.engine.release.run import run_release
from ppdp.errors import ConnectorError, VerificationError
from ppdp.sql.dialect import DUCKDB, SPARK
from ppdp.sql.spark import spark_statements
from tests.conftest import load_adult, write_spec

pytestmark = [pytest.mark.spark, pytest.mark.slow]

K5 = '[[privacy.models]]\nname = "k-anonymity"\nk = 5\n'


def released_rows(frame: pl.DataFrame) -> list[tuple]:
    """The view's rows as text, without the random row ids, in a fixed order (a multiset)."""
    rows = frame.drop("ppdp_row_id").select(pl.all().cast(pl.String))
    return sorted(rows.iter_rows(), key=lambda r: tuple("" if v is None else v for v in r))


def duckdb_view(db: Path, name: str) -> pl.DataFrame:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.sql(f'SELECT * FROM published."{name}"').pl()
    finally:
        con.close()


@pytest.fixture(scope="module")
def env(spark_url: str, tmp_path_factory) -> dict:
    """adult (2,000 rows) in a DuckDB file and, the same rows, as a Parquet table in Spark."""
    folder = tmp_path_factory.mktemp("spark_release")
    db = load_adult(folder / "adult.duckdb", rows=2000)
    source = duckdb.connect(str(db), read_only=True)
    frame = source.sql("SELECT * FROM adult").pl()
    source.close()
    schema = f"src_{uuid.uuid4().hex[:8]}"
    con = connect(spark_url)
    con.execute(f"CREATE SCHEMA `{schema}`")
    con.write_frame(schema, "adult", frame)
    yield {"db": db, "folder": folder, "schema": schema, "con": con, "url": spark_url}
    con.close()


def spec_for(env: dict, file: str, models: str, output: str, budget: int = 10000):
    """One spec for both databases: the source table in the same schema of each."""
    return load_spec(write_spec(env["folder"] / file, db=env["db"], models=models, output=output, budget=budget,
                                schema_line=f'schema = "{env["schema"]}"'))


def test_spark_declares_what_it_cannot_promise(spark_url: str) -> None:
    con = connect(spark_url)
    try:
        assert con.dialect is SPARK and TRANSACTIONAL_DDL not in con.capabilities
        assert con.capabilities == frozenset()  # no transactions, advisory locks, roles or timeouts
    finally:
        con.close()


def test_release_through_spark_equals_the_duckdb_release(env: dict) -> None:
    """Acceptance: same levels, same utility, same rows (ignoring the random row ids)."""
    name = "adult_sp"
    spec = spec_for(env, "k5.toml", K5, name)
    # the DuckDB source sits in main; DuckDB reads the spec's schema from the same spec, so
    # give DuckDB the table under that schema too
    con = duckdb.connect(str(env["db"]))
    con.execute(f'CREATE SCHEMA "{env["schema"]}"')
    con.execute(f'CREATE TABLE "{env["schema"]}".adult AS SELECT * FROM main.adult')
    con.close()
    duck = run_release(spec, progress=False)
    spark = run_release(spec, database=env["url"], progress=False)
    assert spark.run.status == "succeeded" and spark.run.version == 1
    assert spark.run.solution["levels"] == duck.run.solution["levels"]
    assert spark.run.metrics["td"] == pytest.approx(duck.run.metrics["td"])
    assert spark.run.metrics["released_records"] == duck.run.metrics["released_records"]
    assert spark.run.verification["passed"] and all(c["passed"] for c in spark.run.verification["checks"])
    got = env["con"].query(f"SELECT * FROM `published`.`{name}`")
    want = duckdb_view(env["db"], name)
    assert got.columns == want.columns
    assert got.height == want.height > 0
    assert released_rows(got) == released_rows(want)
    # the row ids are the version's own: one per released row
    assert got["ppdp_row_id"].n_unique() == got.height


def test_failed_verification_leaves_the_previous_view(env: dict) -> None:
    """Without a rollback the failed run's table stays, but the view still shows version 1."""
    name = "adult_sp"
    con = env["con"]
    before = released_rows(con.query(f"SELECT * FROM `published`.`{name}`"))
    spec = spec_for(env, "k5b.toml", K5, name, budget=9999)

    def fail_after_verification(phase: str) -> None:
        if phase == "verified":
            raise VerificationError("Injected failure before the view switch; nothing was published.")

    with pytest.raises(VerificationError, match="Injected"):
        run_release(spec, database=env["url"], progress=False, on_phase=fail_after_verification)
    assert released_rows(con.query(f"SELECT * FROM `published`.`{name}`")) == before
    runs = con.query("SELECT status, version FROM `_ppdp`.`runs` WHERE release = ? ORDER BY started_at",
                     ['"published"."adult_sp"'])
    assert runs.rows() == [("succeeded", 1), ("failed", None)]


def test_a_run_after_a_failed_one_equals_duckdb(env: dict) -> None:
    """The next run reuses version 2 and writes it over the failed run's leftovers: its rows must
    equal DuckDB's version 2 (another run key: a new budget), not carry the failed run's private rows."""
    name = "adult_sp"
    spec = spec_for(env, "k5b.toml", K5, name, budget=9999)
    duck = run_release(spec, progress=False)
    spark = run_release(spec, database=env["url"], progress=False)
    assert spark.run.version == duck.run.version == 2
    assert spark.run.solution["levels"] == duck.run.solution["levels"]
    got = env["con"].query(f"SELECT * FROM `published`.`{name}`")
    assert released_rows(got) == released_rows(duckdb_view(env["db"], name))
    hier = env["con"].query("SELECT attribute, level, leaf, COUNT(*) AS n FROM `_ppdp`.`hierarchies` "
                            "WHERE release = ? AND version = 2 GROUP BY attribute, level, leaf HAVING COUNT(*) > 1",
                            ['"published"."adult_sp"'])
    assert hier.height == 0  # no hierarchy leaf stored twice for version 2


def test_delete_and_update_are_rewritten_for_parquet_tables(env: dict) -> None:
    """Parquet tables have no DELETE/UPDATE: the rewrite must keep NULL-condition rows (DELETE
    keeps rows whose condition is NULL) and change only the matching rows."""
    con, schema = env["con"], env["schema"]
    con.execute(f"CREATE TABLE `{schema}`.`dml` (k VARCHAR, v INTEGER, s VARCHAR)")
    con.execute(f"INSERT INTO `{schema}`.`dml` VALUES ('a', 1, 'x'), ('b', 2, 'y'), (NULL, 3, 'z'), ('it''s', 4, 'w')")
    con.execute(f"DELETE FROM `{schema}`.`dml` WHERE k = ?", ["b"])
    con.execute(f"UPDATE `{schema}`.`dml` SET s = 'changed', v = v + 10 WHERE k = ?", ["it's"])
    rows = con.query(f"SELECT k, v, s FROM `{schema}`.`dml` ORDER BY v").rows()
    assert rows == [("a", 1, "x"), (None, 3, "z"), ("it's", 14, "changed")]
    assert con.relation_columns(schema, "dml") == [("k", "STRING"), ("v", "INT"), ("s", "STRING")]


def test_parameters_are_bound_as_escaped_literals() -> None:
    """A value can never close its string literal (Spark strings also escape with backslash)."""
    text = spark_statements("SELECT ? AS a, ? AS b, ? AS c", ["x' OR '1'='1", "back\\slash'", None])[0]
    assert text == "SELECT 'x\\' OR \\'1\\'=\\'1' AS a, 'back\\\\slash\\'' AS b, NULL AS c"


def test_wrong_parameter_count_is_a_connector_error(env: dict) -> None:
    with pytest.raises(ConnectorError, match="placeholder"):
        env["con"].query("SELECT ? AS a", [])


def test_parameters_bind_in_text_order_through_ctes() -> None:
    """sqlglot attaches a WITH after the SELECT that follows it: binding by tree order put the
    CTE's value last (found while writing the connector; values are numbered by token now)."""
    text = spark_statements("WITH a AS (SELECT ? AS x) SELECT ? AS y, x FROM a WHERE x = ?", [1, 2, 3])[0]
    assert text == "WITH a AS (SELECT 1 AS x) SELECT 2 AS y, x FROM a WHERE x = 3"


def test_fingerprint_of_a_large_table_equals_duckdbs(env: dict) -> None:
    """The source fingerprint sums one 48-bit hash per row: Spark's BIGINT SUM overflowed (an
    ANSI error) past ~65,000 rows, so a 200,000-row release failed before its search (found by
    benchmarks/scale.py --engine spark). Same rows, same fingerprint as DuckDB's exact HUGEINT sum."""
    from ppdp.engine.release.stages.validate import source_fingerprint
    from ppdp.sql.queries import Source

    rows = 100_000
    schema = env["schema"]
    env["con"].execute(f"CREATE TABLE `{schema}`.`big` AS SELECT id, CAST(id * 7 AS STRING) AS v FROM range({rows})")
    spark = source_fingerprint(env["con"], Source(schema, "big", None, SPARK), "id", ["id", "v"])
    duck = connect(f"duckdb://{env['folder'] / 'big.duckdb'}")
    try:
        duck.execute(f"CREATE TABLE big AS SELECT CAST(range AS BIGINT) AS id, CAST(range * 7 AS VARCHAR) AS v FROM range({rows})")
        want = source_fingerprint(duck, Source(None, "big", None, DUCKDB), "id", ["id", "v"])
    finally:
        duck.close()
    assert spark.startswith(f"{rows}:") and spark == want
