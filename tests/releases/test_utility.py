"""``ppdp utility``: ARX's quality models and ppdp's measures of a published version, stored with
every version beside its risk, for the three release methods, and the same figures on DuckDB,
PostgreSQL and Spark. (Equality with ARX's StatisticsQuality: benchmarks/utility_vs_arx.py.)"""

from __future__ import annotations

import json
import math

import duckdb
import pytest

from ppdp.connectors import connect
from ppdp.engine.app.cli import main
from ppdp.engine.core.hierarchy import Hierarchy
from ppdp.engine.core.spec import load_spec
from ppdp.engine.release.run import run_release
from ppdp.engine.utility import compute
from ppdp.engine.utility.base import Cell, UtilityInput
from tests.conftest import load_adult, write_spec
from tests.support.spark_source import adult_in_duckdb_and_spark

ARX_MODELS = ("granularity", "intensity", "nu-entropy", "aecs", "discernibility", "ambiguity", "squared-error",
              "record-squared-error", "sse-sst")


def utility_json(url: str, name: str, capsys, *extra: str) -> dict:
    """``ppdp utility --json``: one JSON object valid against the shipped schema."""
    from importlib import resources

    import jsonschema

    capsys.readouterr()
    assert main(["utility", name, "--db", url, "--json", *extra]) == 0
    out = json.loads(capsys.readouterr().out)
    jsonschema.validate(out, json.loads(resources.files("ppdp.engine").joinpath("data/schemas/utility.schema.json").read_text()))
    return out


def close(a, b) -> bool:
    """Equal measures: numbers to 1e-9, dicts key by key (None for NaN on both sides)."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, float) or isinstance(b, float):
        return (a is None and b is None) or (a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9))
    return a == b


def test_a_tiny_release_by_hand():
    """Two QIDs, four rows: {a,b} -> ab at level 1, one row withheld. Granularity and AECS by the definitions."""
    h1 = Hierarchy("x", (("a", "ab", "*"), ("b", "ab", "*"), ("c", "c", "*")))
    h2 = Hierarchy("y", (("1", "*"), ("2", "*")))
    cells = (Cell(("a", "1"), ("ab", "1"), 1), Cell(("b", "1"), ("ab", "1"), 2), Cell(("c", "2"), None, 1))
    out = dict(compute(UtilityInput(("x", "y"), (h1, h2), cells)).measures)
    # x: shares 2/3, 2/3, and 1 for the withheld row -> loss (2/3*3 + 1)/4 = 3/4, normalized (3/4-1/3)/(2/3)
    loss_x = (0.75 - 1 / 3) / (1 - 1 / 3)
    loss_y = (0.75 * 0.5 + 0.25 * 1 - 0.5) / (1 - 0.5)  # y: 1/2 for shown leaves, 1 withheld
    assert out["granularity"]["columns"]["x"] == pytest.approx(1 - loss_x)
    assert out["granularity"]["columns"]["y"] == pytest.approx(1 - loss_y)
    # one published class of 3; the source has 3 classes of sizes 1, 2 (a,1 b,1 c,2 -> 1,2,1): AECS min 4/3
    assert out["aecs"]["average_class_size"] == 3.0
    assert out["aecs"]["value"] == pytest.approx(1 - (3 - 4 / 3) / (4 - 4 / 3))
    # discernibility: 3^2 + 1 withheld x 4 rows (against 1 + 4 + 1 and 16)
    assert out["discernibility"]["discernibility"] == 13.0
    assert out["td"] == pytest.approx(3 * (1 / 2 + 1))


def test_every_version_stores_its_utility_and_the_cli_prints_it(tmp_path, capsys):
    db = load_adult(tmp_path / "a.duckdb", rows=1500)
    out = run_release(load_spec(write_spec(tmp_path / "s.toml", db=db)), progress=False)
    url = f"duckdb://{db}"
    got = utility_json(url, "adult", capsys)
    assert got["status"] == "measured" and got["rows"] == 1500
    assert got["td"] == pytest.approx(out.run.metrics["td"]) and got["query-precision"] == pytest.approx(out.run.metrics["query_precision"])
    assert got["withheld"] == out.run.metrics["suppressed"]
    for m in ARX_MODELS:
        assert 0.0 <= got[m]["value"] <= 1.0, m
    con = duckdb.connect(str(db), read_only=True)
    stored = json.loads(con.execute("SELECT measures FROM _ppdp.utility WHERE version = 1").fetchone()[0])
    con.close()
    assert close({k: stored[k] for k in ARX_MODELS}, {k: got[k] for k in ARX_MODELS})
    assert out.run.verification["utility"]["granularity"]["value"] == pytest.approx(got["granularity"]["value"])
    capsys.readouterr()
    assert main(["job", "certificate", "adult", "--db", url, "--format", "json"]) == 0
    cert = json.loads(capsys.readouterr().out)
    assert cert["utility_measures"]["granularity"]["value"] == pytest.approx(got["granularity"]["value"])
    assert cert["risk"]["rows"] == 1500 - got["withheld"]
    assert main(["utility", "adult", "--db", url]) == 0
    assert "granularity (ARX Loss)" in capsys.readouterr().out


def test_an_unknown_version_is_one_line_and_the_spec_error_code(tmp_path, capsys):
    db = load_adult(tmp_path / "a.duckdb", rows=300)
    run_release(load_spec(write_spec(tmp_path / "s.toml", db=db)), progress=False)
    capsys.readouterr()
    code = main(["utility", "adult", "--db", f"duckdb://{db}", "--version", "7"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "no published version 7" in err


def test_heterogeneous_and_microaggregation_versions_are_measured(tmp_path, capsys):
    from tests.releases.test_heterogeneous_release import het_spec
    from tests.releases.test_microaggregation_release import adult_with_disease, micro_spec

    db = load_adult(tmp_path / "h.duckdb", rows=300)
    run_release(load_spec(het_spec(tmp_path / "h.toml", db)), progress=False)
    het = utility_json(f"duckdb://{db}", "adult_het", capsys)
    db2 = adult_with_disease(tmp_path / "m.duckdb", rows=400)
    run_release(load_spec(micro_spec(tmp_path / "m.toml", db2)), progress=False)
    micro = utility_json(f"duckdb://{db2}", "adult_micro", capsys)
    for got, method in ((het, "heterogeneous"), (micro, "microaggregation")):
        assert got["method"] == method and got["withheld"] == 0
        for m in ARX_MODELS:
            assert got[m]["value"] is not None and 0.0 <= got[m]["value"] <= 1.0, (method, m)
        # every QID's published values are read as covering leaves: no column is unavailable
        assert set(got["granularity"]["columns"]) == {"age", "sex", "race", "education"}
        assert got["granularity"]["columns"]["age"] < 1.0


@pytest.mark.postgres
def test_postgres_gives_the_same_figures(tmp_path, postgres_database, capsys):
    db = load_adult(tmp_path / "a.duckdb", rows=1000)
    con = duckdb.connect(str(db), read_only=True)
    frame = con.sql("SELECT * FROM adult").pl()
    con.close()
    pg = connect(postgres_database)
    pg.write_frame("public", "adult", frame)
    pg.close()
    run_release(load_spec(write_spec(tmp_path / "d.toml", db=db)), progress=False)
    p = write_spec(tmp_path / "p.toml", db=db, schema_line='schema = "public"')
    p.write_text(p.read_text().replace(f'database = "duckdb://{db}"', f'database = "{postgres_database}"'))
    run_release(load_spec(p), progress=False)
    want = utility_json(f"duckdb://{db}", "adult", capsys)
    got = utility_json(postgres_database, "adult", capsys)
    for k in ("rows", "withheld", "td", "query-precision", "workload-error", *ARX_MODELS):
        assert close(got[k], want[k]), k


@pytest.mark.spark
@pytest.mark.slow
def test_spark_gives_the_same_figures(tmp_path, spark_url, capsys):
    db, schema, name = adult_in_duckdb_and_spark(tmp_path, spark_url, rows=1000)
    spec = load_spec(write_spec(tmp_path / "s.toml", db=db, output=name, schema_line=f'schema = "{schema}"'))
    run_release(spec, progress=False)
    run_release(spec, database=spark_url, progress=False)
    want = utility_json(f"duckdb://{db}", name, capsys)
    got = utility_json(spark_url, name, capsys)
    for k in ("rows", "withheld", "td", "query-precision", "workload-error", *ARX_MODELS):
        assert close(got[k], want[k]), k


def test_the_source_histogram_path_equals_the_row_id_join(tmp_path):
    """A generalization version read from the source's histogram (its levels) or through the row
    ids gives the same figures."""
    from ppdp.engine.core import catalog
    from ppdp.engine.utility import _hierarchies, assess_version
    from ppdp.sql.queries import Source

    db = load_adult(tmp_path / "a.duckdb", rows=1200)
    run_release(load_spec(write_spec(tmp_path / "s.toml", db=db)), progress=False)
    con = connect(f"duckdb://{db}", read_only=True)
    try:
        run = catalog.published_runs(con, catalog.resolve_release(con, "adult"))[-1]
        qids = [q["column"] for q in run.spec["quasi_identifiers"]]
        args = dict(release=run.release, version=1, source=Source(None, "adult", None, con.dialect), key="id", qids=qids,
                    hierarchies=_hierarchies(con, run, qids), schema="published", name="adult")
        fast = assess_version(con, **args, levels=run.solution["levels"]).to_json()
        joined = assess_version(con, **args).to_json()
        wrong = assess_version(con, **args, levels={q: 0 for q in qids}).to_json()  # not the version's: falls back
    finally:
        con.close()
    assert close(fast, joined) and close(wrong, joined)
