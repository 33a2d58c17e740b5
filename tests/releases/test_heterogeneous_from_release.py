"""Any ppdp generalization or microaggregation release as the starting graph of
the heterogeneous method (params.initial = "release", engine/methods/heterogeneous/convert.py), then improved by
the local search; and the refusals when the release is missing, of another method or source."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pytest

from ppdp.connectors import connect
from ppdp.engine.core.spec import load_spec
from ppdp.engine.methods import METHODS
from ppdp.engine.methods.heterogeneous.convert import graph_from_classes
from ppdp.engine.methods.heterogeneous.metrics import QidTable
from ppdp.engine.release.run import run_release
from ppdp.errors import SpecError
from tests.conftest import load_adult, snapshot, write_spec
from tests.support import paths as PATHS

QIDS = ["age", "sex", "race", "education"]
KEEP = ["marital-status", "native-country", "workclass", "occupation"]
K5 = '[[privacy.models]]\nname = "k-anonymity"\nk = 5\n'
CATALOGUE = PATHS.CATALOGUES / "diseases32.csv"
DISEASES = [line.split(";")[0] for line in CATALOGUE.read_text().splitlines()]


def with_method(p: Path, method: str, params: str) -> Path:
    p.write_text(p.read_text() + f"[method]\nname = \"{method}\"\nparams = {{ {params} }}\n")
    return p


def het_spec(path: Path, db: Path, source: str, *, table: str = "adult", keep=KEEP, sensitive=None) -> Path:
    p = write_spec(path, db=db, table=table, qids=QIDS, keep=keep, sensitive=sensitive, output="adult_het", models=K5,
                   budget=200_000)
    return with_method(p, "heterogeneous", f'initial = "release", from = "{source}", seconds = 2')


def query(db: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def assert_improved_release(out, method: str) -> dict:
    """Verification passed, the start came from the release, and the search did not worsen it."""
    checks = out.run.verification["method_checks"]
    assert out.run.status == "succeeded" and len(checks) == 3 and all(c["passed"] for c in checks)
    sol = out.run.solution
    start = sol["from_release"]
    assert start["method"] == method and start["version"] == 1 and start["release"].endswith('"adult_src"')
    # the search's own value of the converted graph is its full recomputation (engine.methods.heterogeneous.metrics)
    assert sol["initial_objective"] == pytest.approx(start["converted_gcp"], rel=1e-9, abs=1e-12)
    assert sol["final_objective"] <= sol["initial_objective"]
    assert out.run.metrics["gcp"] == pytest.approx(sol["final_objective"], rel=1e-9, abs=1e-12)
    return start


def test_a_generalization_release_converted_and_improved_by_local_search(tmp_path):
    db = load_adult(tmp_path / "g.duckdb", rows=1000)
    gen = run_release(load_spec(write_spec(tmp_path / "g.toml", db=db, qids=QIDS, keep=KEEP, output="adult_src")),
                      progress=False)
    out = run_release(load_spec(het_spec(tmp_path / "h.toml", db, "published.adult_src")), progress=False)
    start = assert_improved_release(out, "generalization")
    # k = 5 in both: every class of the generalization has >= 5 rows and is kept as it is; only
    # the rows it suppressed are pooled (and clustered apart by k-member)
    assert start["classes"] == start["classes_kept"] == gen.run.metrics["class_sizes"]["classes"]
    assert start["pooled"] == gen.run.metrics["suppressed"]
    assert out.run.metrics["released_records"] == 1000  # the heterogeneous release suppresses nobody


@pytest.mark.postgres
def test_postgres_generalization_release_converted_and_improved(tmp_path, postgres_database):
    """The same on PostgreSQL: the classes read through the version table and _ppdp.row_ids there."""
    db = load_adult(tmp_path / "g.duckdb", rows=300)
    con = duckdb.connect(str(db), read_only=True)
    frame = con.sql("SELECT * FROM adult").pl()
    con.close()
    pg = connect(postgres_database)
    pg.write_frame("public", "adult", frame)
    pg.close()

    def on_postgres(p: Path) -> Path:
        p.write_text(p.read_text().replace(f'database = "duckdb://{db}"', f'database = "{postgres_database}"')
                     .replace('table = "adult"', 'table = "adult"\nschema = "public"'))
        return p

    gen = run_release(load_spec(on_postgres(write_spec(tmp_path / "g.toml", db=db, qids=QIDS, keep=KEEP, output="adult_src"))),
                      progress=False)
    out = run_release(load_spec(on_postgres(het_spec(tmp_path / "h.toml", db, "published.adult_src"))), progress=False)
    start = assert_improved_release(out, "generalization")
    assert start["classes_kept"] == gen.run.metrics["class_sizes"]["classes"]
    assert start["pooled"] == gen.run.metrics["suppressed"]


def adult_with_disease(db: Path, rows: int) -> Path:
    load_adult(db, rows=rows)
    con = duckdb.connect(str(db))
    con.execute("ALTER TABLE adult ADD COLUMN disease VARCHAR")
    con.execute("UPDATE adult SET disease = list_extract(?, CAST(hash(id, 7) % 32 AS INTEGER) + 1)", [DISEASES])
    con.close()
    return db


def test_a_microaggregation_release_converted_and_improved_by_local_search(tmp_path):
    db = adult_with_disease(tmp_path / "m.duckdb", rows=800)
    keep = KEEP + ["salary-class"]
    micro = write_spec(tmp_path / "m.toml", db=db, qids=QIDS, sensitive=["disease"], keep=keep, output="adult_src", models=K5)
    run_release(load_spec(with_method(micro, "microaggregation", 'catalogue = "diseases32"')), progress=False)
    out = run_release(load_spec(het_spec(tmp_path / "h.toml", db, "published.adult_src", keep=keep, sensitive=["disease"])),
                      progress=False)
    start = assert_improved_release(out, "microaggregation")
    sizes = [n for (n,) in query(db, "SELECT COUNT(*) FROM _ppdp.micro_groups GROUP BY grp")]
    assert start["classes"] == len(sizes) and sum(sizes) == 800
    assert start["pooled"] == sum(n for n in sizes if n < 5)
    assert start["classes_kept"] == sum(1 for n in sizes if n >= 5)


def test_a_missing_release_another_method_or_another_source_is_refused(tmp_path):
    db = load_adult(tmp_path / "r.duckdb", rows=200)
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE adult_copy AS SELECT * FROM adult")
    con.close()
    # the database-side check alone (for validate.prepare, before the run record) writes nothing
    before = snapshot(db)
    spec = load_spec(het_spec(tmp_path / "a.toml", db, "published.nowhere"))
    con = connect(f"duckdb://{db}")
    try:
        with pytest.raises(SpecError, match="names no published release 'published.nowhere'"):
            METHODS.get("heterogeneous").check_database(spec, con)
    finally:
        con.close()
    assert snapshot(db) == before
    with pytest.raises(SpecError, match="names no published release 'published.nowhere'"):
        run_release(spec, progress=False)
    run_release(load_spec(write_spec(tmp_path / "g.toml", db=db, qids=QIDS, keep=KEEP, output="adult_src")), progress=False)
    with pytest.raises(SpecError, match=r"from source.table = 'adult', this release reads 'adult_copy'"):
        run_release(load_spec(het_spec(tmp_path / "b.toml", db, "published.adult_src", table="adult_copy")), progress=False)
    # a heterogeneous release has no classes: it cannot start another one
    plain = with_method(write_spec(tmp_path / "c.toml", db=db, qids=QIDS, keep=KEEP, output="adult_plain", models=K5,
                                   budget=1000), "heterogeneous", "seconds = 1")
    run_release(load_spec(plain), progress=False)
    with pytest.raises(SpecError, match="published by method 'heterogeneous', which has no classes"):
        run_release(load_spec(het_spec(tmp_path / "d.toml", db, "published.adult_plain")), progress=False)
    assert query(db, "SELECT COUNT(*) FROM information_schema.tables WHERE table_name LIKE 'adult_het%'") == [(0,)]


def test_initial_release_and_from_go_together(tmp_path):
    db = load_adult(tmp_path / "p.duckdb", rows=50)
    for params, message in (('initial = "release"', "needs params.from"),
                            ('initial = "k-member", from = "published.adult"', "applies to initial = \"release\" only")):
        p = with_method(write_spec(tmp_path / "s.toml", db=db, qids=QIDS, keep=KEEP, output="adult_het", models=K5),
                        "heterogeneous", params)
        with pytest.raises(SpecError, match=message):
            run_release(load_spec(p), progress=False)


def test_conversion_keeps_big_classes_and_pools_the_rest():
    """Rows 0-5 one class, 6-9 another (size 4 < k = 5), 10-11 unplaced: the pool (6 rows) is
    clustered apart; with a pool of 2 (< k) it joins the class it widens least."""
    age = np.array([20, 21, 22, 23, 24, 25, 60, 61, 62, 63, 64, 65], dtype=float)[:, None]
    table = QidTable(age, np.zeros((12, 0), dtype=np.int64), ())
    labels = ["a"] * 6 + ["b"] * 4 + [None, None]
    conv = graph_from_classes(table, labels, 5, seed=3)
    cover = conv.graph.cover
    assert (conv.classes_kept, conv.pooled, conv.pool_clusters) == (1, 6, 1)
    assert set(cover[:6].ravel()) == set(range(6)) and set(cover[6:].ravel()) == set(range(6, 12))
    # two close rows left over: they join the young class (age 20-25), not a class of 60-64
    age2 = np.array([20, 21, 22, 23, 24, 60, 61, 62, 63, 64, 26, 27], dtype=float)[:, None]
    table2 = QidTable(age2, np.zeros((12, 0), dtype=np.int64), ())
    conv2 = graph_from_classes(table2, ["a"] * 5 + ["b"] * 5 + [None, None], 5, seed=3)
    assert (conv2.classes_kept, conv2.pooled, conv2.pool_clusters) == (2, 2, 0)
    young = {0, 1, 2, 3, 4, 10, 11}
    assert all(set(conv2.graph.cover[t]) <= young for t in young)
