"""The heterogeneous k-anonymity release method through the shared pipeline: a
k-regular graph improved by local search, published with bound columns and value sets, and the
SQL verification of the consistency graph, on DuckDB and on a real PostgreSQL server."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from ppdp.connectors import connect
from ppdp.engine.core.spec import load_spec
from ppdp.engine.release.run import run_release
from ppdp.errors import SpecError, VerificationError
from tests.conftest import load_adult, snapshot, write_spec

QIDS = ["age", "sex", "race", "education"]
KEEP = ["marital-status", "native-country", "workclass", "occupation"]
K5 = '[[privacy.models]]\nname = "k-anonymity"\nk = 5\n'


def het_spec(path: Path, db: Path, params: str = 'initial = "k-member", seconds = 5', models: str = K5) -> Path:
    p = write_spec(path, db=db, qids=QIDS, keep=KEEP, output="adult_het", models=models, budget=100_000)
    p.write_text(p.read_text() + f"[method]\nname = \"heterogeneous\"\nparams = {{ {params} }}\n")
    return p


def test_release_passes_the_consistency_graph_check_and_answers_range_queries(tmp_path):
    db = load_adult(tmp_path / "h.duckdb", rows=300)
    out = run_release(load_spec(het_spec(tmp_path / "s.toml", db)), progress=False)
    checks = out.run.verification["method_checks"]
    assert out.run.status == "succeeded" and all(c["passed"] for c in checks) and len(checks) == 3
    assert checks[0]["min_published_covers"] >= 5 and checks[0]["min_source_covered"] >= 5
    assert out.run.metrics["gcp"] <= out.run.metrics["initial_gcp"]  # the local search never worsens
    con = duckdb.connect(str(db), read_only=True)
    cols = [r[0] for r in con.execute("SELECT column_name FROM information_schema.columns WHERE table_name = 'adult_het__v1' "
                                      "ORDER BY ordinal_position").fetchall()]
    # an analyst's range query: tuples whose age range lies within [30, 40)
    n = con.execute('SELECT COUNT(*) FROM published.adult_het WHERE age_min >= 30 AND age_max < 40').fetchone()[0]
    edges = con.execute("SELECT COUNT(*) FROM _ppdp.hetero_edges").fetchone()[0]
    con.close()
    assert cols[:3] == ["ppdp_row_id", "sex", "age_min"] and "age_max" in cols and "age" not in cols
    assert 0 < n < 300 and edges == 300 * 5


def test_a_broken_graph_fails_the_verification(tmp_path, monkeypatch):
    """One edge removed from the private table: the graph is no longer k-regular."""
    from ppdp.engine.methods.heterogeneous.method import Heterogeneous

    db = load_adult(tmp_path / "h.duckdb", rows=200)
    original = Heterogeneous.write_private_state

    def drop_one_edge(self, ctx, prep, plan):
        original(self, ctx, prep, plan)
        edges = plan.state.edges
        o, a = next((o, a) for o, a in edges.iter_rows() if o != a)
        ctx.con.execute("DELETE FROM _ppdp.hetero_edges WHERE original = ? AND anonymized = ?", [o, a])

    monkeypatch.setattr(Heterogeneous, "write_private_state", drop_one_edge)
    with pytest.raises(VerificationError, match="the private graph is exactly k-regular with every self edge failed"):
        run_release(load_spec(het_spec(tmp_path / "s.toml", db)), progress=False)
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'published'").fetchone()[0] == 0
    con.close()


def test_bad_parameters_and_models_are_refused_before_any_write(tmp_path):
    db = load_adult(tmp_path / "h.duckdb", rows=100)
    before = snapshot(db)
    for params, models, message in (
        ('initial = "random"', K5, "initial 'random' is not available"),
        ('objective = "ncp"', K5, "objective must be \"gcp\" or \"sil\""),
        ("seconds = -1", K5, "seconds must be a positive number"),
        ("", K5 + '[[privacy.models]]\nname = "distinct-l-diversity"\nl = 2\n', "give exactly one model"),
    ):
        with pytest.raises(SpecError, match=message):
            run_release(load_spec(het_spec(tmp_path / "s.toml", db, params, models)), progress=False)
    assert snapshot(db) == before


@pytest.mark.postgres
def test_postgres_release_passes_the_same_checks(tmp_path, postgres_database):
    db = load_adult(tmp_path / "h.duckdb", rows=200)
    con = duckdb.connect(str(db), read_only=True)
    frame = con.sql("SELECT * FROM adult").pl()
    con.close()
    pg = connect(postgres_database)
    pg.write_frame("public", "adult", frame)
    pg.close()
    p = het_spec(tmp_path / "p.toml", db, params='initial = "l-greedy", seconds = 5')
    p.write_text(p.read_text().replace(f'database = "duckdb://{db}"', f'database = "{postgres_database}"')
                 .replace('table = "adult"', 'table = "adult"\nschema = "public"'))
    out = run_release(load_spec(p), progress=False)
    assert out.run.status == "succeeded" and all(c["passed"] for c in out.run.verification["method_checks"])
    pg = connect(postgres_database)
    try:
        assert pg.query("SELECT COUNT(*) AS n FROM published.adult_het")["n"][0] == 200
    finally:
        pg.close()
