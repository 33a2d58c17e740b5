"""The person unit end to end (docs/design/person_unit.md): a visits table where each person has
1-4 rows, released with ``source.person``, recounted independently of ppdp's own checks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pytest

from ppdp.connectors import connect
from ppdp.engine.core.catalog import release_id
from ppdp.engine.core.spec import load_spec
from ppdp.engine.privacy import build_model
from ppdp.engine.release.run import run_release
from ppdp.engine.release.stages.validate import prepare
from ppdp.engine.release.stages.verify import check_models, check_models_per_person
from tests.conftest import write_spec
from tests.support.visits import VISIT_QIDS, VISIT_SA, make_visits

K5 = '[[privacy.models]]\nname = "k-anonymity"\nk = 5\n'


@pytest.fixture(scope="module")
def visits_template(tmp_path_factory) -> Path:
    return make_visits(tmp_path_factory.mktemp("visits") / "visits.duckdb", persons=3000)


@pytest.fixture
def visits_db(visits_template, tmp_path) -> Path:
    target = tmp_path / "visits.duckdb"
    target.write_bytes(visits_template.read_bytes())
    return target


def visits_spec(tmp_path: Path, db: Path, *, person: bool = True, models: str = K5, output: str = "visits") -> Path:
    return write_spec(tmp_path / f"{output}.toml", db=db, table="visits", key="visit_id", qids=VISIT_QIDS,
                      sensitive=[VISIT_SA], keep=[], drop=["visit_month", *([] if person else ["person_id"])],
                      models=models, output=output, extra_source='person = "person_id"' if person else "")


def persons_per_class(db: Path, output: str) -> pl.DataFrame:
    """The independent recount: each published class's distinct persons and rows, joining the
    published rows back to the source through the private row ids (none of ppdp's code)."""
    con = duckdb.connect(str(db))
    try:
        cols = ", ".join(f'p."{q}"' for q in VISIT_QIDS)
        rows = con.execute(
            f"SELECT {cols}, COUNT(DISTINCT v.person_id) AS persons, COUNT(*) AS rows "
            f'FROM published."{output}" AS p JOIN _ppdp.row_ids AS i ON i.row_id = p.ppdp_row_id '
            "JOIN visits AS v ON CAST(v.visit_id AS VARCHAR) = i.key "
            f"WHERE i.release = ? GROUP BY {cols}", [release_id("published", output)]).fetchall()
    finally:
        con.close()
    return pl.DataFrame(rows, schema=[*VISIT_QIDS, "persons", "rows"], orient="row")


def stored_release_risk(db: Path, output: str) -> dict:
    con = duckdb.connect(str(db))
    try:
        return json.loads(con.execute("SELECT released FROM _ppdp.risk WHERE release = ?",
                                      [release_id("published", output)]).fetchone()[0])
    finally:
        con.close()


def test_visits_k5_per_person_and_the_row_unit_beside_it(visits_db, tmp_path):
    out = run_release(load_spec(visits_spec(tmp_path, visits_db)), progress=False)
    assert out.run.status == "succeeded"
    per_class = persons_per_class(visits_db, "visits")
    assert per_class.height > 0 and int(per_class["persons"].min()) >= 5
    risk = stored_release_risk(visits_db, "visits")
    assert risk["unit"] == "person (person_id)" and risk["prosecutor"]["highest"] <= 1 / 5
    assert [c["unit"] for c in out.run.verification["checks"]] == ["person"]
    con = duckdb.connect(str(visits_db))
    published = [r[0] for r in con.execute("SELECT column_name FROM information_schema.columns "
                                           "WHERE table_schema = 'published' AND table_name = 'visits'").fetchall()]
    con.close()
    assert "person_id" not in published and "visit_id" not in published

    # the same table without source.person publishes as before (rows counted) and leaves
    # classes of fewer than 5 persons: what the person unit is for
    rows = run_release(load_spec(visits_spec(tmp_path, visits_db, person=False, output="visits_rows")), progress=False)
    assert rows.run.status == "succeeded"
    assert rows.run.verification["risk"]["unit"] == "row = person assumed"
    naive = persons_per_class(visits_db, "visits_rows")
    assert int(naive["rows"].min()) >= 5 and int(naive["persons"].min()) < 5

    # every output says which unit it counted
    db = f"duckdb://{visits_db}"
    assert "counted per    : person (person_id)" in cli("show", "visits", "--db", db)
    assert "counted per    : row = person assumed" in cli("show", "visits_rows", "--db", db)
    risk = cli("risk", "visits", "--db", db)
    assert "counted per: person (person_id)" in risk and "persons," in risk
    assert "counted per: row = person assumed" in cli("risk", "visits_rows", "--db", db)
    table = cli("risk", "--table", "main.visits", "--qids", ",".join(VISIT_QIDS), "--person", "person_id", "--db", db)
    assert "3,000 persons" in table and "counted per: person (person_id)" in table
    for name, unit in (("visits", "person (person_id)"), ("visits_rows", "row = person assumed")):
        html = tmp_path / f"{name}.html"
        cli("report", name, "--html", str(html), "--db", db)
        assert f"Counted per: {unit}." in html.read_text()


def cli(*args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "ppdp.engine.app.cli", *args], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


MODEL_SETS = {
    "distinct-l": '[[privacy.models]]\nname = "distinct-l-diversity"\nl = 2\n',
    "entropy-l": '[[privacy.models]]\nname = "entropy-l-diversity"\nl = 1.5\n',
    "recursive-cl": '[[privacy.models]]\nname = "recursive-cl-diversity"\nc = 3\nl = 2\n',
    "t-closeness": '[[privacy.models]]\nname = "t-closeness"\nt = 0.2\n',
    "beta-likeness": '[[privacy.models]]\nname = "beta-likeness"\nbeta = 1.0\n',
    "delta-disclosure": '[[privacy.models]]\nname = "delta-disclosure"\ndelta = 1.5\n',
    "average-risk": '[[privacy.models]]\nname = "average-risk"\nthreshold = 0.1\n',
}


@pytest.mark.parametrize("name", list(MODEL_SETS))
def test_every_model_rechecks_clean_per_person(name, visits_db, tmp_path):
    spec = load_spec(visits_spec(tmp_path, visits_db, models=K5 + MODEL_SETS[name], output="v_" + name.replace("-", "_")))
    run_release(spec, progress=False)
    con = connect(f"duckdb://{visits_db}")
    try:
        prep = prepare(spec, con)  # the bound models and the SA codes, read as the run read them
        sa_code = {v[0]: i for i, v in enumerate(prep.table.sa_values)}
        # independent: persons per (class, SA) from the published rows joined back to the source
        cols = ", ".join(f'p."{q}"' for q in VISIT_QIDS)
        frame = con.query(
            f'SELECT {cols}, p."{VISIT_SA}" AS sa, COUNT(DISTINCT v.person_id) AS n '
            f'FROM published."{spec.output_name}" AS p JOIN _ppdp.row_ids AS i ON i.row_id = p.ppdp_row_id '
            "JOIN visits AS v ON CAST(v.visit_id AS VARCHAR) = i.key WHERE i.release = ? GROUP BY ALL",
            [release_id("published", spec.output_name)])
        source = con.query(f'SELECT "{VISIT_SA}" AS sa, COUNT(DISTINCT person_id) AS n FROM visits GROUP BY ALL')
    finally:
        con.close()
    classes: dict[tuple, dict[int, int]] = {}
    for *cls, sa, n in frame.iter_rows():
        classes.setdefault(tuple(cls), {})[sa_code[sa]] = int(n)
    total = int(source["n"].sum())
    q = [0.0] * len(sa_code)
    for sa, n in source.iter_rows():
        q[sa_code[sa]] = n / total
    for m in prep.models:
        ad = float(m.reference_ad(classes, q))
        assert m.feasible(ad), (m.name, ad)


def test_per_person_check_fails_on_a_hand_made_violating_table(visits_db, tmp_path):
    """Two persons' rows (5 or more rows) moved to a class of their own: counted by rows the
    class passes k = 5, counted by persons it fails."""
    spec = load_spec(visits_spec(tmp_path, visits_db))
    run_release(spec, progress=False)
    con = connect(f"duckdb://{visits_db}")
    try:
        con.execute('CREATE TABLE published.bad AS SELECT * FROM published."visits"')
        # two published persons with 3+ rows each, from the largest class (which stays >= 5 without them)
        pair = con.query(
            "WITH pub AS (SELECT v.person_id, p.age, p.sex, p.race, p.\"marital-status\" FROM published.\"visits\" AS p "
            "JOIN _ppdp.row_ids AS i ON i.row_id = p.ppdp_row_id JOIN visits AS v ON CAST(v.visit_id AS VARCHAR) = i.key), "
            "big AS (SELECT age, sex, race, \"marital-status\" FROM pub GROUP BY ALL ORDER BY COUNT(*) DESC LIMIT 1) "
            "SELECT pub.person_id FROM pub JOIN big USING (age, sex, race, \"marital-status\") "
            "GROUP BY pub.person_id HAVING COUNT(*) >= 3 ORDER BY 1 LIMIT 2")
        ids = ", ".join(str(int(p)) for p in pair["person_id"])
        con.execute("UPDATE published.bad SET race = 'nowhere' WHERE ppdp_row_id IN (SELECT i.row_id FROM _ppdp.row_ids AS i "
                    f"JOIN visits AS v ON CAST(v.visit_id AS VARCHAR) = i.key WHERE v.person_id IN ({ids}))")
        models = [build_model("k-anonymity", {"k": 5})]
        release = release_id("published", "visits")
        by_rows = check_models(con, spec, models, "published.bad", release, 1)
        by_persons = check_models_per_person(con, spec, models, "published.bad", release, 1, "test")
    finally:
        con.close()
    assert by_rows[0]["passed"] and not by_persons[0]["passed"] and by_persons[0]["ad"] == 2


@pytest.mark.parametrize("name", list(MODEL_SETS))
def test_every_models_per_person_check_fails_on_a_violating_table(name, visits_db, tmp_path):
    """Each model's per-person SQL check can fail: a copy of a version published under the model is made
    to violate the model (five persons who all hold the rarer sensitive value moved to a class of
    their own; for average-risk, every person in a class of their own) and the check says so,
    while the same check on the untouched version passes."""
    import tomllib  # noqa: PLC0415

    spec = load_spec(visits_spec(tmp_path, visits_db, models=K5 + MODEL_SETS[name], output="clean_" + name.replace("-", "_")))
    run_release(spec, progress=False)
    params = tomllib.loads(MODEL_SETS[name])["privacy"]["models"][0]
    models = [build_model(params.pop("name"), params)]
    release = release_id("published", spec.output_name)
    con = connect(f"duckdb://{visits_db}")
    try:
        bad = f"bad_{name.replace('-', '_')}"
        con.execute(f'CREATE TABLE published.{bad} AS SELECT * FROM published."{spec.output_name}"')
        joined = (f'FROM published."{spec.output_name}" AS p JOIN _ppdp.row_ids AS i ON i.row_id = p.ppdp_row_id '
                  "JOIN visits AS v ON CAST(v.visit_id AS VARCHAR) = i.key WHERE i.release = ?")
        if name == "average-risk":
            con.execute(f"UPDATE published.{bad} AS b SET race = 'nowhere-' || CAST(v.person_id AS VARCHAR) "
                        "FROM _ppdp.row_ids AS i JOIN visits AS v ON CAST(v.visit_id AS VARCHAR) = i.key "
                        "WHERE i.row_id = b.ppdp_row_id AND i.release = ?", [release])
        else:
            rare = con.query(f'SELECT "{VISIT_SA}" AS sa FROM visits GROUP BY 1 ORDER BY COUNT(*) LIMIT 1')["sa"][0]
            five = con.query(f"SELECT DISTINCT v.person_id {joined} AND v.\"{VISIT_SA}\" = ? ORDER BY 1 LIMIT 5",
                             [release, rare])["person_id"].to_list()
            ids = ", ".join(str(int(p)) for p in five)
            con.execute(f"UPDATE published.{bad} SET race = 'nowhere' WHERE ppdp_row_id IN (SELECT i.row_id "
                        "FROM _ppdp.row_ids AS i JOIN visits AS v ON CAST(v.visit_id AS VARCHAR) = i.key "
                        f"WHERE i.release = ? AND v.person_id IN ({ids}))", [release])
        clean = check_models_per_person(con, spec, models, f'published."{spec.output_name}"', release, 1, "test")
        broken = check_models_per_person(con, spec, models, f"published.{bad}", release, 1, "test")
    finally:
        con.close()
    assert clean[0]["passed"], (name, clean)
    assert not broken[0]["passed"], (name, broken)
