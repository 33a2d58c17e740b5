"""``ppdp utility --summary --classify`` on a version of each release method: generalization,
microaggregation (with sdcMicro's measures) and heterogeneous k-anonymity (bounds and value sets)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ppdp.engine.app.cli import main
from ppdp.engine.core.spec import load_spec
from ppdp.engine.release.run import run_release
from tests.conftest import load_adult, write_spec
from tests.releases.test_heterogeneous_release import het_spec
from tests.releases.test_microaggregation_release import adult_with_disease, micro_spec
from tests.support.spark_source import adult_in_duckdb_and_spark

pytest.importorskip("sklearn")
K5 = '[[privacy.models]]\nname = "k-anonymity"\nk = 5\n'
K8 = '[[privacy.models]]\nname = "k-anonymity"\nk = 8\n'


def _utility(capsys, db: Path, name: str) -> dict:
    capsys.readouterr()
    code = main(["utility", name, "--db", f"duckdb://{db}", "--summary", "--pairs", "sex:salary-class",
                 "--classify", "salary-class", "--folds", "5", "--json"])
    assert code == 0
    return json.loads(capsys.readouterr().out)


def _common(doc: dict, rows: int) -> dict:
    c = doc["classification"]
    assert c["records"] == rows and c["folds"] == 5 and c["seed"] == 2**31 - 1
    assert 0.5 < c["zeror"]["accuracy"] < 0.9 and 0 <= c["release"]["accuracy"] <= 1
    by = {a["attribute"]: a for a in doc["summary"]["columns"]}
    assert by["salary-class"]["distance"] == pytest.approx(0.0, abs=0.05)
    for a in by.values():  # aggregates only: no source extremes
        assert a["source"]["range"] is None
    cells = doc["summary"]["tables"][0]["release"]
    assert all(n == "<10" or n >= 10 for _, _, n in cells)
    return by


def test_generalization(tmp_path: Path, capsys):
    db = load_adult(tmp_path / "g.duckdb", rows=600)
    run_release(load_spec(write_spec(tmp_path / "g.toml", db=db, qids=["age", "sex", "race"], output="gen", models=K5)),
                progress=False)
    by = _common(_utility(capsys, db, "gen"), 600)
    assert by["age"]["distance_kind"] in ("tv", "ks") and "sdc" not in _utility(capsys, db, "gen")


def test_microaggregation(tmp_path: Path, capsys):
    db = adult_with_disease(tmp_path / "m.duckdb", rows=400)
    run_release(load_spec(micro_spec(tmp_path / "m.toml", db, models=K8)), progress=False)
    doc = _utility(capsys, db, "adult_micro")
    by = _common(doc, 400)
    assert by["age"]["numeric"] and by["age"]["distance_kind"] == "ks"  # ranges at their midpoints
    sdc = doc["sdc"]
    assert sdc["columns"] == ["age"] and sdc["records"] == 400 and sdc["il1s"] > 0


def test_heterogeneous(tmp_path: Path, capsys):
    db = load_adult(tmp_path / "h.duckdb", rows=200)
    run_release(load_spec(het_spec(tmp_path / "h.toml", db, params='initial = "k-member", seconds = 1', models=K5)),
                progress=False)
    doc = _utility(capsys, db, "adult_het")
    by = _common(doc, 200)
    assert by["age"]["numeric"]  # published as age_min, age_max: read back as a range
    assert by["education"]["distance"] < 0.5  # value sets spread over their members


@pytest.mark.postgres
def test_postgres_gives_the_same_analyses(tmp_path: Path, postgres_database, capsys):
    import duckdb

    from ppdp.connectors import connect

    db = load_adult(tmp_path / "a.duckdb", rows=800)
    con = duckdb.connect(str(db), read_only=True)
    frame = con.sql("SELECT * FROM adult").pl()
    con.close()
    pg = connect(postgres_database)
    pg.write_frame("public", "adult", frame)
    pg.close()
    spec = write_spec(tmp_path / "d.toml", db=db, qids=["age", "sex", "race"], output="adult", models=K5)
    run_release(load_spec(spec), progress=False)
    p = write_spec(tmp_path / "p.toml", db=db, qids=["age", "sex", "race"], output="adult", models=K5,
                   schema_line='schema = "public"')
    p.write_text(p.read_text().replace(f'database = "duckdb://{db}"', f'database = "{postgres_database}"'))
    run_release(load_spec(p), progress=False)
    want = _utility(capsys, db, "adult")
    capsys.readouterr()
    assert main(["utility", "adult", "--db", postgres_database, "--summary", "--pairs", "sex:salary-class",
                 "--classify", "salary-class", "--folds", "5", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["classification"] == want["classification"]  # the same records, folds and values
    for a, b in zip(got["summary"]["columns"], want["summary"]["columns"], strict=True):
        assert a["attribute"] == b["attribute"] and a["distance"] == pytest.approx(b["distance"], abs=1e-12)
        assert a["source"]["mean"] == pytest.approx(b["source"]["mean"]) if b["source"]["mean"] is not None else True
    assert got["summary"]["tables"] == want["summary"]["tables"]


@pytest.mark.spark
@pytest.mark.slow
def test_spark_gives_the_same_analyses(tmp_path: Path, spark_url, capsys):
    db, schema, name = adult_in_duckdb_and_spark(tmp_path, spark_url, rows=600)
    spec = load_spec(write_spec(tmp_path / "s.toml", db=db, qids=["age", "sex", "race"], output=name, models=K5,
                                schema_line=f'schema = "{schema}"'))
    run_release(spec, progress=False)
    run_release(spec, database=spark_url, progress=False)
    want = _utility(capsys, db, name)
    capsys.readouterr()
    assert main(["utility", name, "--db", spark_url, "--summary", "--pairs", "sex:salary-class",
                 "--classify", "salary-class", "--folds", "5", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["classification"] == want["classification"]
    assert [a["distance"] for a in got["summary"]["columns"]] == pytest.approx([a["distance"] for a in want["summary"]["columns"]])
    assert got["summary"]["tables"] == want["summary"]["tables"]
