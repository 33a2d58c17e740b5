"""Risk in every release: source and release risk stored per version in _ppdp.risk,
kept columns that single out records refused by default (or published with a warning), and the
job example of docs/guides/jobs.md publishing no row unique on its published columns."""

from __future__ import annotations

import json
import re

import duckdb
import pytest

from ppdp.engine.app.cli import main
from tests.conftest import write_spec
from tests.support.paths import REPO

# The job example (docs/guides/jobs.md) before the kept-columns check: QIDs age and sex, six columns kept as they are.
OLD_README_JOB = """{"source": {"table": "adult", "key": "id",
  "keep": ["race", "marital-status", "education", "native-country", "workclass", "occupation"]},
  "quasi_identifiers": [{"column": "age", "hierarchy": {"type": "intervals", "widths": [5, 10, 20]}},
                        {"column": "sex", "hierarchy": "flat"}],
  "sensitive": {"columns": ["salary-class"]},
  "privacy": {"models": [{"name": "k-anonymity", "k": 5}]%s},
  "output": {"schema": "published", "name": "adult_k5"}}"""


def readme_job_sql() -> str:
    text = (REPO / "docs" / "guides" / "jobs.md").read_text()
    m = re.search(r"```sql\n(INSERT INTO _ppdp\.jobs .*?;)\n```", text, re.S)
    assert m, "the job example of docs/guides/jobs.md is gone"
    return m.group(1)


def unique_rows_on_published_columns(db, view: str) -> tuple[int, int]:
    """(rows, rows unique on every published column but the row id and the sensitive column)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        cols = [r[0] for r in con.execute(f"DESCRIBE published.{view}").fetchall()
                if r[0] not in ("ppdp_row_id", "salary-class")]
        g = ", ".join(f'"{c}"' for c in cols)
        rows, uniques = con.execute(f"SELECT SUM(n), SUM(CASE WHEN n = 1 THEN 1 ELSE 0 END) FROM "
                                    f"(SELECT COUNT(*) AS n FROM published.{view} GROUP BY {g})").fetchone()
        return int(rows), int(uniques)
    finally:
        con.close()


def register(db, sql: str) -> None:
    assert main(["init", "--db", f"duckdb://{db}"]) == 0
    con = duckdb.connect(str(db))
    con.execute(sql)
    con.close()


def test_readme_job_example_publishes_no_unique_row(adult_db, capsys):
    register(adult_db, readme_job_sql())
    assert main(["job", "run", "adult_k5", "--db", f"duckdb://{adult_db}", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "risk source" in out and "risk release" in out
    rows, uniques = unique_rows_on_published_columns(adult_db, "adult_k5")
    assert rows > 0 and uniques == 0


def test_old_readme_example_is_refused_with_the_counts(adult_db, capsys):
    register(adult_db, "INSERT INTO _ppdp.jobs (name, spec) VALUES ('adult_k5', '" + OLD_README_JOB % "" + "')")
    assert main(["job", "run", "adult_k5", "--db", f"duckdb://{adult_db}", "--no-progress"]) == 3  # REFUSED: a privacy refusal, not bad input (docs/reference/exit-codes.md)
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    # the issue's own count: 13,999 of the 30,140 published rows are unique on the published columns
    assert "13,999 of 30,140 published rows are unique" in err and "Remedy" in err
    con = duckdb.connect(str(adult_db), read_only=True)
    try:
        published = con.execute("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'published'").fetchone()[0]
        risk_rows = con.execute("SELECT COUNT(*) FROM _ppdp.risk").fetchone()[0]
    finally:
        con.close()
    assert published == 0 and risk_rows == 0


def test_warn_publishes_with_the_warning_and_stores_both_risks(adult_db, capsys):
    register(adult_db, "INSERT INTO _ppdp.jobs (name, spec) VALUES ('adult_k5', '"
             + OLD_README_JOB % ', "kept_columns": "warn"' + "')")
    assert main(["job", "run", "adult_k5", "--db", f"duckdb://{adult_db}", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "WARNING" in out and "13,999 of 30,140" in out
    con = duckdb.connect(str(adult_db), read_only=True)
    try:
        version, source, released, kept = con.execute(
            "SELECT version, source, released, kept_columns FROM _ppdp.risk").fetchone()
    finally:
        con.close()
    source, released, kept = json.loads(source), json.loads(released), json.loads(kept)
    from ppdp.connectors import connect
    from ppdp.engine.core import catalog

    c = connect(f"duckdb://{adult_db}", read_only=True)
    try:
        stored = catalog.version_risks(c, catalog.resolve_release(c, "adult_k5"))
    finally:
        c.close()
    assert [s["version"] for s in stored] == [1] and stored[0]["release"] == released
    assert version == 1 and kept["singled_out"] == 13999
    assert source["rows"] == 30162 and released["rows"] == 30140
    # k = 5 on the QIDs: no released record's prosecutor risk on the QIDs exceeds 1/5
    assert released["prosecutor"]["highest"] <= 0.2 < source["prosecutor"]["highest"]
    # the stored release risk is what `ppdp risk` measures on the published version
    assert main(["risk", "adult_k5", "--db", f"duckdb://{adult_db}", "--json"]) == 0
    measured = json.loads(capsys.readouterr().out)
    assert measured["prosecutor"] == pytest.approx(released["prosecutor"])
    assert measured["sample_uniques"] == pytest.approx(released["sample_uniques"])


def test_kept_columns_default_is_refuse(adult_db, tmp_path, capsys):
    spec = write_spec(tmp_path / "s.toml", db=adult_db, qids=["age", "sex"], kept_columns=None,
                      hierarchies={"age": '{ type = "intervals", widths = [5, 10, 20] }', "sex": '"flat"'})
    assert main(["run", str(spec), "--no-progress"]) == 3  # REFUSED: a privacy refusal, not bad input (docs/reference/exit-codes.md)
    assert "single" in capsys.readouterr().err
