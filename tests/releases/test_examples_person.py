"""examples/person_visits end to end on DuckDB: the shipped spec (``person = "person_id"``) on
the shipped extract of Synthea encounters, recounted per person by SQL of its own, beside the
same spec without ``person`` (docs/guides/person_unit.md quotes both runs)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from ppdp.engine.core.catalog import release_id
from ppdp.engine.core.spec import load_spec
from ppdp.engine.release.run import run_release
from tests.support.cli import ppdp

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "person_visits"
QIDS = ("birth_year", "gender", "race", "county")


@pytest.fixture(scope="module")
def example(tmp_path_factory) -> Path:
    """The example folder copied to a scratch folder and loaded by its own load.py."""
    work = tmp_path_factory.mktemp("person_visits")
    for name in ("encounters.csv", "load.py", "spec.toml"):
        shutil.copy(EXAMPLE / name, work / name)
    subprocess.run([sys.executable, str(work / "load.py")], check=True, capture_output=True)
    return work


def rows_spec(work: Path) -> Path:
    """The shipped spec_rows.toml, checked to be spec.toml without the person (person_id dropped
    instead, another output name), so that the contrast is the same release but for the unit."""
    def body(name: str) -> list[str]:
        return [line for line in (EXAMPLE / name).read_text().splitlines() if not line.startswith("#")]
    expected = [line.replace('drop = ["encounter_class"]', 'drop = ["encounter_class", "person_id"]')
                .replace('name = "encounters"', 'name = "encounters_rows"')
                for line in body("spec.toml") if not line.startswith("person = ")]
    assert body("spec_rows.toml") == expected
    shutil.copy(EXAMPLE / "spec_rows.toml", work / "spec_rows.toml")
    return work / "spec_rows.toml"


def per_class(db: Path, output: str) -> list[tuple[int, int]]:
    """(distinct persons, rows) of each published class, joined back to the source rows through
    the private row ids; none of ppdp's counting code."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        cols = ", ".join(f'p."{q}"' for q in QIDS)
        return con.execute(
            f"SELECT COUNT(DISTINCT e.person_id), COUNT(*) FROM published.\"{output}\" AS p "
            "JOIN _ppdp.row_ids AS i ON i.row_id = p.ppdp_row_id AND i.release = ? "
            "JOIN encounters AS e ON CAST(e.visit_id AS VARCHAR) = i.key "
            f"GROUP BY {cols}", [release_id("published", output)]).fetchall()
    finally:
        con.close()


def test_the_extract_has_many_rows_per_person():
    con = duckdb.connect()
    per_person = con.execute("SELECT COUNT(*) FROM read_csv(?) GROUP BY person_id",
                             [str(EXAMPLE / "encounters.csv")]).fetchall()
    counts = sorted(n for (n,) in per_person)
    assert len(counts) >= 100 and counts[len(counts) // 2] >= 10  # median person: 10+ rows
    # the person-level quasi-identifiers really are constant per person (the spec says so)
    varying = con.execute(
        "SELECT COUNT(*) FROM (SELECT person_id FROM read_csv(?) GROUP BY person_id "
        "HAVING COUNT(DISTINCT (birth_year, gender, race, county)) > 1)",
        [str(EXAMPLE / "encounters.csv")]).fetchone()[0]
    assert varying == 0


def test_the_example_publishes_k5_per_person_where_rows_alone_do_not(example):
    spec = load_spec(example / "spec.toml")
    (model,) = spec.models
    assert model.name == "k-anonymity"
    k = dict(model.params)["k"]
    out = run_release(spec, progress=False)
    assert out.run.status == "succeeded"
    db = example / "visits.duckdb"
    classes = per_class(db, "encounters")
    assert classes and min(persons for persons, _ in classes) >= k
    con = duckdb.connect(str(db), read_only=True)
    try:
        published = {r[0] for r in con.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = 'published' AND table_name = 'encounters__v1'").fetchall()}
    finally:
        con.close()
    assert "person_id" not in published and "reason" in published

    rows_out = run_release(load_spec(rows_spec(example)), progress=False)
    assert rows_out.run.status == "succeeded"
    rows_classes = per_class(db, "encounters_rows")
    assert min(rows for _, rows in rows_classes) >= k          # k holds over rows ...
    assert sum(1 for persons, _ in rows_classes if persons < k) > 0  # ... not over persons


def test_a_varying_qid_no_signature_group_can_meet_is_refused_not_failed(example: Path) -> None:
    """encounter_class varies by encounter (source.person_varying); at the levels the row search
    finds, no 5 patients share the classes their encounters fall into, so every patient would be
    suppressed: the run is refused (exit 3, "refused"), not left to fail verification (exit 1)."""
    text = (example / "spec.toml").read_text()
    text = text.replace('drop = ["encounter_class"]', 'person_varying = ["encounter_class"]')
    text = text.replace("[sensitive]", '[[quasi_identifiers]]\ncolumn = "encounter_class"\nhierarchy = "flat"\n\n[sensitive]')
    text = text.replace('name = "encounters"', 'name = "encounters_class"')
    spec = example / "spec_class.toml"
    spec.write_text(text)
    proc = ppdp("run", str(spec), "--no-progress")
    assert proc.returncode == 3, proc.stderr
    assert "every person would be suppressed" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    con = duckdb.connect(str(example / "visits.duckdb"), read_only=True)
    try:
        assert not con.execute("SELECT COUNT(*) FROM information_schema.tables WHERE table_name LIKE 'encounters_class%'").fetchone()[0]
    finally:
        con.close()
