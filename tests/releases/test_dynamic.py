"""Dynamic publishing: versions from a changing source, delta tables, cross-version privacy."""

from __future__ import annotations

import duckdb
import polars as pl
import pytest

from ppdp.engine.core.spec import load_spec
from ppdp.engine.release.run import run_release
from ppdp.errors import VerificationError
from tests.conftest import ADULT_COLUMNS, ADULT_QIDS, load_adult, write_spec

K5 = '[[privacy.models]]\nname = "k-anonymity"\nk = 5\n'
COLS = ["ppdp_row_id"] + ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation", "salary-class"]


def mutate(db, *, inserts: int, deletes: int, updates: int, seed: int = 7) -> None:
    """Insert copies of random rows under new keys, delete random rows, update QIDs of others."""
    con = duckdb.connect(str(db))
    con.execute(f"SELECT setseed({seed / 100})")
    con.execute(f"INSERT INTO adult SELECT 1000000 + row_number() OVER () AS id, * EXCLUDE (id) FROM "
                f"(SELECT * FROM adult ORDER BY random() LIMIT {inserts})")
    con.execute(f"DELETE FROM adult WHERE id IN (SELECT id FROM adult WHERE id < 1000000 ORDER BY random() LIMIT {deletes})")
    # updates: a new age (a QID) and a flipped salary class for random surviving rows
    con.execute(f"UPDATE adult SET age = CASE WHEN age < 80 THEN age + 1 ELSE age - 1 END, "
                f"\"salary-class\" = CASE WHEN \"salary-class\" = '>50K' THEN '<=50K' ELSE '>50K' END "
                f"WHERE id IN (SELECT id FROM adult WHERE id < 1000000 ORDER BY random() LIMIT {updates})")
    con.close()


def read(db, sql: str) -> pl.DataFrame:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.sql(sql).pl()
    finally:
        con.close()


def test_delta_applied_to_v1_gives_v2(tmp_path):
    db = load_adult(tmp_path / "dyn.duckdb")
    spec = load_spec(write_spec(tmp_path / "s.toml", db=db, models=K5, output="adult"))
    v1 = run_release(spec, progress=False)
    mutate(db, inserts=1000, deletes=500, updates=200)
    v2 = run_release(spec, progress=False)
    assert v1.run.version == 1 and v2.run.version == 2 and v2.run.status == "succeeded"
    assert v2.run.changes == {"inserted": 1000, "deleted": 500, "updated": 200, "delta": "written"}
    cross = v2.run.cross_version
    assert cross["passed"] and cross["versions_checked"] == 2 and cross["rows_ever_published"] > 25000
    assert cross["smallest_history_class"] >= 5 and cross["checks"]["failing_classes"] == {}
    # consumers apply the increment: v1 minus '-' rows plus '+' rows is exactly v2
    t1 = read(db, "SELECT * FROM published.adult__v1")
    t2 = read(db, "SELECT * FROM published.adult__v2")
    delta = read(db, "SELECT * FROM published.adult__delta WHERE version = 2")
    removed = delta.filter(pl.col("op") == "-").drop("version", "op")
    added = delta.filter(pl.col("op") == "+").drop("version", "op")
    applied = pl.concat([t1.join(removed, on=t1.columns, how="anti", nulls_equal=True), added])
    assert applied.sort(COLS).equals(t2.sort(COLS))
    assert added.height > 0 and removed.height > 0
    # release row ids are random and stable: a record kept in both versions keeps its id
    ids = read(db, "SELECT key, row_id FROM _ppdp.row_ids")
    assert ids["row_id"].n_unique() == ids.height
    assert not (ids["row_id"] == ids["key"]).any()
    stable = t1.join(t2, on="ppdp_row_id").height
    assert stable > 25000


def test_crafted_change_breaking_joint_k_is_refused(tmp_path):
    """Move many records to other age groups so that (v1 class, v2 class) pairs are tiny;
    under the strict policy the new version is refused and v1 stays published."""
    db = load_adult(tmp_path / "craft.duckdb", rows=3000)
    toml = write_spec(tmp_path / "s.toml", db=db, qids=["age", "sex", "race"], models=K5, output="small")
    spec = load_spec(toml)
    run_release(spec, progress=False)
    con = duckdb.connect(str(db))
    # shift ages by 7 years for every third record: same v2 class sizes, broken joint classes
    con.execute("UPDATE adult SET age = age + 7 WHERE id % 3 = 0 AND age < 80")
    con.close()
    toml.write_text(toml.read_text() + '[dynamic]\npolicy = "strict"\n')
    strict = load_spec(toml)
    with pytest.raises(VerificationError, match=r'Cross-version privacy check failed for release "published"."small" v2: .*k-anonymity .*history class\(es\) fail\); dynamic.policy "strict" publishes a step whole'):
        run_release(strict, progress=False)
    runs = read(db, "SELECT status, version FROM _ppdp.runs ORDER BY started_at")
    assert runs.rows() == [("succeeded", 1), ("failed", None)]
    assert read(db, "SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_name = 'small__v2'")["n"][0] == 0
    # the default policy repairs by withholding the records of small joint classes, within the limit
    toml.write_text(toml.read_text().replace('policy = "strict"', 'policy = "stable-levels"\nmax_repair_fraction = 0.5'))
    repaired = load_spec(toml)
    out = run_release(repaired, progress=False)
    assert out.run.version == 2 and out.run.cross_version["passed"]
    held = out.run.cross_version["held_back"]
    assert held["changes_delayed"] > 0 and out.run.metrics["held_back"] == held
    joint = read(db, 'SELECT MIN(n) AS m FROM (SELECT COUNT(*) AS n FROM published.small__v2 c JOIN published.small__v1 p USING (ppdp_row_id) '
                     'GROUP BY c.age, c.sex, c.race, p.age, p.sex, p.race)')
    assert joint["m"][0] >= 5


def test_independent_versions_do_not_share_state(tmp_path):
    db = load_adult(tmp_path / "two.duckdb", rows=2000)
    a = load_spec(write_spec(tmp_path / "a.toml", db=db, qids=ADULT_QIDS[:3], models=K5, output="a"))
    b = load_spec(write_spec(tmp_path / "b.toml", db=db, qids=ADULT_QIDS[:3], models=K5, output="b"))
    ra, rb = run_release(a, progress=False), run_release(b, progress=False)
    assert ra.run.version == rb.run.version == 1
    ids = read(db, "SELECT release, COUNT(*) AS n FROM _ppdp.row_ids GROUP BY release ORDER BY release")
    assert ids.rows() == [('"published"."a"', 2000), ('"published"."b"', 2000)]


def test_changed_column_type_skips_the_delta_and_says_so(tmp_path):
    db = load_adult(tmp_path / "retype.duckdb", rows=2000)
    spec = load_spec(write_spec(tmp_path / "s.toml", db=db, qids=["age", "sex"], models=K5, output="r"))
    run_release(spec, progress=False)
    con = duckdb.connect(str(db))
    con.execute("ALTER TABLE adult ADD COLUMN extra INTEGER DEFAULT 1")
    con.close()
    # A new column must be given a role before it is released: keep it.
    keep = [c for c in ADULT_COLUMNS if c not in {"id", "age", "sex", "salary-class"}] + ["extra"]
    spec = load_spec(write_spec(tmp_path / "s2.toml", db=db, qids=["age", "sex"], models=K5, output="r", keep=keep))
    v2 = run_release(spec, progress=False)
    assert v2.run.version == 2 and v2.run.changes["delta"].startswith("not written: the columns of v2 differ from v1")
