"""Summary statistics and contingency tables of a version against its source, by SQL."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from ppdp.connectors.base import connect
from ppdp.engine.app.api import run_release
from ppdp.engine.utility.summary import _median, _tv, summarize
from tests.conftest import write_spec


def test_median_is_rs_median_from_counts():
    assert _median({"1": 1, "2": 1, "3": 1}) == 2.0
    assert _median({"1": 2, "4": 2}) == 2.5  # the mean of the two middle values
    assert _median({"5": 3, None: 9}) == 5.0  # NULLs left out
    assert _median({}) is None


def test_total_variation_spreads_a_label_over_its_leaves():
    src = {"a": 2, "b": 2}
    assert _tv(src, {"*": 4}, {"*": ["a", "b"]}) == 0.0  # spread evenly: the same distribution
    assert _tv(src, {"a": 4}, None) == pytest.approx(0.5)
    assert _tv({"a": 4}, {"*": 4}, {"*": ["a", "b", "c", "d"]}) == pytest.approx(0.75)


@pytest.fixture
def published(adult_db: Path, tmp_path: Path) -> Path:
    spec = write_spec(tmp_path / "s.toml", db=adult_db, qids=["age", "sex", "race"],
                      hierarchies={"age": '{ type = "intervals", widths = [10, 20] }'}, output="adult3")
    run_release(str(spec))
    return adult_db


def test_a_version_against_its_source(published: Path):
    con = connect(f"duckdb://{published}", read_only=True)
    try:
        s = summarize(con, "adult3", pairs=[("sex", "salary-class")], min_count=10)
    finally:
        con.close()
    raw = duckdb.connect(str(published), read_only=True)
    try:
        mean, var = raw.execute("SELECT AVG(age), VAR_SAMP(age) FROM adult").fetchone()
        rel_n = raw.execute('SELECT COUNT(*) FROM "published"."adult3"').fetchone()[0]
        female_low = raw.execute("SELECT COUNT(*) FROM adult WHERE sex = 'Female' AND \"salary-class\" = '<=50K'").fetchone()[0]
    finally:
        raw.close()
    by = {a.attribute: a for a in s.attributes}
    age = by["age"]
    assert age.source.mean == pytest.approx(mean) and age.source.variance == pytest.approx(var)
    assert age.source.range is None  # the source's extremes are single people's values
    assert age.release.records == rel_n and age.source.records == 30162
    if age.numeric:  # intervals released: their midpoints are compared by Kolmogorov-Smirnov
        assert age.distance_kind == "ks" and 0 <= age.distance <= 1 and age.release.range is not None
    assert by["sex"].distance_kind == "tv" and by["sex"].distance < 0.05
    assert by["salary-class"].source.mode == "<=50K"
    table = s.tables[0]
    assert ("Female", "<=50K", female_low) in table.source
    assert all(isinstance(n, int) and n >= 10 or n == "<10" for _, _, n in table.release)
    # what leaves: no value shared by fewer than 10 records
    for a in s.attributes:
        for side in (a.source_shares, a.release_shares):
            assert abs(sum(side.values()) - 1.0) < 1e-9


def test_cli_json_and_bad_pairs(published: Path):
    cli = [sys.executable, "-m", "ppdp.engine.app.cli", "utility", "adult3", "--db", f"duckdb://{published}"]
    env_path = str(Path(__file__).resolve().parents[2] / "src")
    env = {"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"}
    out = subprocess.run([*cli, "--pairs", "sex:race", "--json"], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["summary"]["tables"][0]["first"] == "sex" and "granularity" in json.dumps(doc)
    bad = subprocess.run([*cli, "--pairs", "sexrace"], capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--pairs" in bad.stderr
    unknown = subprocess.run([*cli, "--pairs", "sex:nope"], capture_output=True, text=True, env=env)
    assert unknown.returncode == 2 and "nope" in unknown.stderr
