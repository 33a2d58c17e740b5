"""The microaggregation release method (DRASL Alg. 1) through the shared release pipeline, on
DuckDB and on a real PostgreSQL server: groups of at least K, generalized values that cover
their records, an independent SQL check that catches a wrong one, and clear refusals."""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl
import pytest

from ppdp.connectors import connect
from ppdp.engine.core.spec import load_spec
from ppdp.engine.release.run import run_release
from ppdp.errors import SpecError, VerificationError
from tests.conftest import load_adult, snapshot, write_spec
from tests.support import paths as PATHS

K8 = '[[privacy.models]]\nname = "k-anonymity"\nk = 8\n'
QIDS = ["age", "sex", "race", "education"]
KEEP = ["marital-status", "native-country", "workclass", "occupation", "salary-class"]
CATALOGUE = PATHS.CATALOGUES / "diseases32.csv"
DISEASES = [line.split(";")[0] for line in CATALOGUE.read_text().splitlines()]


def adult_with_disease(db: Path, rows: int = 1200) -> Path:
    """adult with a Disease column drawn from the 32-disease catalogue (a fixed hash of the key)."""
    load_adult(db, rows=rows)
    con = duckdb.connect(str(db))
    con.execute("ALTER TABLE adult ADD COLUMN disease VARCHAR")
    con.execute("UPDATE adult SET disease = list_extract(?, CAST(hash(id, 7) % 32 AS INTEGER) + 1)", [DISEASES])
    con.close()
    return db


def micro_spec(path: Path, db: Path, params: str = 'catalogue = "diseases32"', models: str = K8) -> Path:
    p = write_spec(path, db=db, qids=QIDS, sensitive=["disease"], keep=KEEP, output="adult_micro", models=models)
    p.write_text(p.read_text() + f"[method]\nname = \"microaggregation\"\nparams = {{ {params} }}\n")
    return p


def read(db: Path, sql: str) -> pl.DataFrame:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.sql(sql).pl()
    finally:
        con.close()


def test_first_release_publishes_groups_of_k_that_cover_their_records(tmp_path):
    db = adult_with_disease(tmp_path / "m.duckdb")
    out = run_release(load_spec(micro_spec(tmp_path / "s.toml", db)), progress=False)
    v = out.run.verification
    assert out.run.status == "succeeded" and v["passed"]
    assert v["checks"][0]["model"] == "k-anonymity" and v["checks"][0]["ad"] >= 8
    assert v["method_checks"][0]["uncovered"] == 0
    assert out.run.metrics["groups"] == 1200 // 8 and out.run.metrics["group_size"]["min"] >= 8
    pub = read(db, "SELECT * FROM published.adult_micro")
    assert pub.height == 1200 and "grp" not in pub.columns  # membership stays private
    # an independent re-check: every published age range covers the record's age, from the source
    src = read(db, 'SELECT CAST(id AS VARCHAR) AS key, age, sex FROM adult')
    ids = read(db, "SELECT key, row_id AS ppdp_row_id FROM _ppdp.row_ids")
    joined = pub.join(ids, on="ppdp_row_id").join(src, on="key", suffix="_src")
    bounds = joined["age"].str.strip_chars("[]").str.split(", ")
    lo, hi = bounds.list.get(0).cast(pl.Float64), bounds.list.get(1).cast(pl.Float64)
    assert ((joined["age_src"] >= lo) & (joined["age_src"] <= hi)).all()
    assert joined.group_by(QIDS).len()["len"].min() >= 8
    assert set(pub["disease"].to_list()) <= set(DISEASES)


def test_a_wrong_generalized_value_fails_the_independent_check(tmp_path):
    db = adult_with_disease(tmp_path / "m.duckdb")
    spec = load_spec(micro_spec(tmp_path / "s.toml", db))
    import ppdp.engine.methods.microaggregation.method as MA

    original = MA.M.candidate_select

    def shifted(*args, **kw):  # every published age range moved by 1000 years: covers nobody
        sql = original(*args, **kw)
        return sql.replace('l0.value AS "age"', "'[1000, 1001]' AS \"age\"")

    MA.M.candidate_select = shifted
    try:
        with pytest.raises(VerificationError, match="generalized values cover the source values failed"):
            run_release(spec, progress=False)
    finally:
        MA.M.candidate_select = original
    assert read(db, "SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_schema = 'published'")["n"][0] == 0


def test_bad_parameters_are_refused_before_any_write(tmp_path):
    db = adult_with_disease(tmp_path / "m.duckdb", rows=200)
    before = snapshot(db)
    cases = [('catalogue = "nope.csv"', "Catalogue .*nope.csv.* does not exist"),
             ('catalogue = "diseases32", k = 5', "must be an integer >= 2 equal to the k-anonymity model's k \\(8\\)"),
             ('catalogue = "diseases32", kinds = { sex = "ordinal" }', "publishes continuous, semantic, nominal QIDs"),
             ('catalogue = "diseases32", colour = 1', "does not take \\['colour'\\]")]
    for params, message in cases:
        with pytest.raises(SpecError, match=message):
            run_release(load_spec(micro_spec(tmp_path / "s.toml", db, params)), progress=False)
    assert snapshot(db) == before


def test_a_later_version_with_other_grouping_parameters_is_refused_with_the_reason(tmp_path):
    db = adult_with_disease(tmp_path / "m.duckdb", rows=400)
    run_release(load_spec(micro_spec(tmp_path / "s.toml", db)), progress=False)
    con = duckdb.connect(str(db))
    con.execute("DELETE FROM adult WHERE id % 10 = 0")
    con.close()
    with pytest.raises(SpecError, match="was grouped with other alpha; its groups cannot be continued"):
        run_release(load_spec(micro_spec(tmp_path / "s.toml", db, 'catalogue = "diseases32", alpha = 0.5')), progress=False)
    assert read(db, "SELECT COUNT(*) AS n FROM published.adult_micro")["n"][0] == 400  # v1 stays published
    assert read(db, "SELECT MAX(version) AS v FROM _ppdp.micro_groups")["v"][0] == 1  # nothing of v2 was kept


@pytest.mark.postgres
def test_postgres_release_equals_duckdb(tmp_path, postgres_database):
    db = adult_with_disease(tmp_path / "m.duckdb", rows=800)
    frame = read(db, "SELECT * FROM adult")
    pg = connect(postgres_database)
    pg.write_frame("public", "adult", frame)
    pg.close()
    duck = run_release(load_spec(micro_spec(tmp_path / "d.toml", db)), progress=False)
    p = micro_spec(tmp_path / "p.toml", db)
    p.write_text(p.read_text().replace(f'database = "duckdb://{db}"', f'database = "{postgres_database}"')
                 .replace('table = "adult"', 'table = "adult"\nschema = "public"'))
    post = run_release(load_spec(p), progress=False)
    assert post.run.verification["passed"] and post.run.verification["method_checks"][0]["uncovered"] == 0
    cols = QIDS + KEEP + ["disease"]
    con = connect(postgres_database)
    a = con.query(f"SELECT {', '.join(chr(34) + c + chr(34) for c in cols)} FROM published.adult_micro").sort(cols)
    con.close()
    b = read(db, f"SELECT {', '.join(chr(34) + c + chr(34) for c in cols)} FROM published.adult_micro").sort(cols)
    assert duck.run.metrics["groups"] == post.run.metrics["groups"] == 100
    assert a.equals(b)
