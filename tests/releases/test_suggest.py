"""``ppdp suggest``: the identifiers it finds, the person column, the spec it writes runs as
written, and bad input gives a documented choice or one line with nothing written."""

from __future__ import annotations

import json
import tomllib
from importlib import resources
from pathlib import Path

import duckdb
import jsonschema
import pytest

from ppdp.engine.app.cli import main
from tests.conftest import snapshot
from tests.support import paths as PATHS


def _visits(db: Path) -> Path:
    """3,000 adult persons, each with 1 to 4 visit rows (person_id repeats across rows)."""
    con = duckdb.connect(str(db))
    con.execute("""CREATE TABLE visits AS
        WITH persons AS (SELECT row_number() OVER () AS person_id, * FROM adult LIMIT 3000)
        SELECT CAST(row_number() OVER (ORDER BY person_id, v) AS BIGINT) AS visit_id, person_id,
               'p' || person_id || '@example.org' AS email, age, sex, race, "marital-status", education,
               DATE '2020-01-01' + CAST((person_id * 37 + v * 101) % 700 AS INTEGER) AS visit_date
        FROM persons, range(1, 1 + CAST(1 + person_id % 4 AS INTEGER)) AS t(v)""")
    con.close()
    return db


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_suggest_drops_unique_columns_and_proposes_the_person(adult_db: Path, tmp_path: Path, capsys) -> None:
    db = _visits(adult_db)
    out = tmp_path / "visits.toml"
    code, stdout, _ = _run(["suggest", "--table", "visits", "--db", f"duckdb://{db}", "--out", str(out), "--no-preview",
                            "--json"], capsys)
    assert code == 0
    result = json.loads(stdout)
    jsonschema.validate(result, json.loads(resources.files("ppdp.engine").joinpath("data/schemas/suggest.schema.json").read_text()))
    roles = {c["column"]: c["role"] for c in result["columns"]}
    assert roles["visit_id"] == "key"
    assert roles["email"] == "identifier" and roles["person_id"] == "person"
    assert {"age", "sex", "race"} <= {c for c, r in roles.items() if r == "qid"}
    spec = tomllib.loads(out.read_text())
    assert spec["source"]["key"] == "visit_id"
    assert set(spec["source"]["identifiers"]) == {"email"}
    assert spec["source"]["person"] == "person_id"
    # visit_date differs between one person's rows; the person-level QIDs do not
    qids = {q["column"] for q in spec["quasi_identifiers"]}
    assert set(spec["source"].get("person_varying", [])) == {"visit_date"} & qids == set(result["person_varying"])
    assert all(q["hierarchy"] == "auto" for q in spec["quasi_identifiers"])
    # every decision carries its reason
    for c in result["columns"]:
        assert c["why"], c


def test_suggest_then_run_publishes_per_person(adult_db: Path, tmp_path: Path, capsys) -> None:
    """The spec suggest writes for a visits table runs with no hand edit and counts persons."""
    db = _visits(adult_db)
    out = tmp_path / "visits.toml"
    code, _, _ = _run(["suggest", "--table", "visits", "--db", f"duckdb://{db}", "--out", str(out), "--no-preview"], capsys)
    assert code == 0
    code, stdout, err = _run(["run", str(out), "--no-progress", "--json"], capsys)
    assert code == 0, err
    result = json.loads(stdout)
    assert result["status"] == "published" and result["verified"] is True
    con = duckdb.connect(str(db), read_only=True)
    try:
        qids = [q["column"] for q in tomllib.loads(out.read_text())["quasi_identifiers"]]
        cols = ", ".join(f'v."{q}"' for q in qids)
        smallest = con.execute(f"""SELECT MIN(n) FROM (SELECT COUNT(DISTINCT s.person_id) AS n
            FROM published.visits v JOIN _ppdp.row_ids r ON r.row_id = v.ppdp_row_id
            JOIN visits s ON CAST(s.visit_id AS VARCHAR) = r.key GROUP BY {cols})""").fetchone()[0]
    finally:
        con.close()
    k = tomllib.loads(out.read_text())["privacy"]["models"][0]["k"]
    assert smallest >= k


def test_every_unique_column_is_dropped(adult_db: Path, tmp_path: Path, capsys) -> None:
    con = duckdb.connect(str(adult_db))
    con.execute("CREATE TABLE t AS SELECT id, 'x' || CAST(id * 7919 % 100003 AS VARCHAR) AS code, id * 3 AS serial, age, sex, "
                "race, education FROM adult")
    con.close()
    code, stdout, _ = _run(["suggest", "--table", "t", "--db", f"duckdb://{adult_db}", "--no-preview", "--json"], capsys)
    assert code == 0
    roles = {c["column"]: c["role"] for c in json.loads(stdout)["columns"]}
    assert roles["id"] == "key" and roles["code"] == "identifier" and roles["serial"] == "identifier"


def test_suggested_spec_runs_as_written(adult_db: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "adult.toml"
    code, stdout, _ = _run(["suggest", "--table", "adult", "--db", f"duckdb://{adult_db}", "--out", str(out)], capsys)
    assert code == 0, stdout
    assert "preview    : on all 30,162 rows: published, certified optimum, verified True" in stdout
    text = out.read_text()
    assert all(line.startswith("#") or "#" in line or not line.strip() or line.startswith("[") or "=" in line
               for line in text.splitlines())
    code, stdout, err = _run(["run", str(out), "--no-progress", "--json"], capsys)
    result = json.loads(stdout)
    assert code == 0 and result["status"] == "published" and result["verified"] is True, err
    assert result["k"] >= 5


def test_bad_columns_get_their_documented_choice(tmp_path: Path, capsys) -> None:
    db = tmp_path / "bad.duckdb"
    con = duckdb.connect(str(db))
    con.execute("""CREATE TABLE bad AS SELECT CAST(i AS BIGINT) AS id, CAST(NULL AS VARCHAR) AS nothing, 7 AS constant,
        CASE WHEN i % 3 = 0 THEN CAST(i % 50 AS VARCHAR) WHEN i % 3 = 1 THEN 'v' || (i % 40) ELSE CAST(i % 7 AS VARCHAR) || '.5' END AS mixed,
        CASE WHEN i % 500 = 0 THEN DATE '9999-12-31' WHEN i % 499 = 0 THEN DATE '0001-01-01' ELSE DATE '2000-01-01' + CAST(i % 3000 AS INTEGER) END AS d,
        CAST(i % 90 AS INTEGER) AS age, CASE WHEN i % 2 = 0 THEN 'F' ELSE 'M' END AS sex
        FROM range(20000) AS t(i)""")
    con.close()
    out = tmp_path / "bad.toml"
    code, stdout, _ = _run(["suggest", "--table", "bad", "--db", f"duckdb://{db}", "--out", str(out), "--json"], capsys)
    assert code == 0
    result = json.loads(stdout)
    why = {c["column"]: (c["role"], c["why"]) for c in result["columns"]}
    assert why["nothing"][0] == "drop" and "only NULL" in why["nothing"][1]
    assert why["constant"][0] == "drop" and "one value" in why["constant"][1]
    assert result["preview"]["status"] == "published", result["preview"]
    assert tomllib.loads(out.read_text())["source"]["key"] == "id"
    # a column of mixed types is text (priority or codes builder), dates as far as 0001 and 9999
    # get centuries: both documented choices, and the release publishes
    spec = tmp_path / "mixed.toml"
    spec.write_text(f'[source]\ndatabase = "duckdb://{db}"\ntable = "bad"\nkey = "id"\n'
                    'drop = ["nothing", "constant", "age", "sex"]\n'
                    '[[quasi_identifiers]]\ncolumn = "mixed"\nhierarchy = "auto"\n'
                    '[[quasi_identifiers]]\ncolumn = "d"\nhierarchy = "auto"\n'
                    '[[privacy.models]]\nname = "k-anonymity"\nk = 5\n[output]\nschema = "published"\nname = "bad"\n')
    code, stdout, err = _run(["run", str(spec), "--no-progress", "--json"], capsys)
    assert json.loads(stdout)["status"] == "published", err
    con = duckdb.connect(str(db), read_only=True)
    runs = con.execute("SELECT solution FROM _ppdp.runs WHERE status = 'succeeded'").fetchall()
    con.close()
    built = json.loads(runs[0][0])["hierarchies"]
    assert built["d"]["builder"] == "temporal" and "century" in built["d"]["params"]["ladder"]
    assert built["mixed"]["builder"] in ("priority", "codes")


@pytest.mark.parametrize("column, message", [
    ("nothing", "holds only NULL values"),
    ("far", "not a date of the years 1..9999"),
])
def test_bad_auto_qids_are_one_line_and_nothing_written(tmp_path: Path, capsys, column: str, message: str) -> None:
    db = tmp_path / "bad.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE bad AS SELECT CAST(i AS BIGINT) AS id, CAST(NULL AS VARCHAR) AS nothing, "
                "CASE WHEN i = 5 THEN DATE '294247-01-10' ELSE DATE '2000-01-01' + CAST(i AS INTEGER) END AS far "
                "FROM range(2000) AS t(i)")
    con.close()
    spec = tmp_path / "s.toml"
    other = "far" if column == "nothing" else "nothing"
    spec.write_text(f'[source]\ndatabase = "duckdb://{db}"\ntable = "bad"\nkey = "id"\ndrop = ["{other}"]\n'
                    f'[[quasi_identifiers]]\ncolumn = "{column}"\nhierarchy = "auto"\n'
                    '[[privacy.models]]\nname = "k-anonymity"\nk = 2\n[output]\nschema = "published"\nname = "bad"\n')
    before = snapshot(db)
    code, _, err = _run(["run", str(spec), "--no-progress"], capsys)
    assert code != 0
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("ppdp: error:") and message in lines[0], err
    assert snapshot(db) == before


def test_a_million_distinct_strings(tmp_path: Path, capsys) -> None:
    db = tmp_path / "m.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE m AS SELECT CAST(i AS BIGINT) AS id, md5(CAST(i AS VARCHAR)) AS token, "
                "CAST(i % 80 AS INTEGER) AS age FROM range(1000000) AS t(i)")
    con.close()
    code, stdout, _ = _run(["suggest", "--table", "m", "--db", f"duckdb://{db}", "--no-preview", "--json"], capsys)
    roles = {c["column"]: c["role"] for c in json.loads(stdout)["columns"]}
    assert code == 0 and roles["token"] == "identifier"
    spec = tmp_path / "s.toml"
    spec.write_text(f'[source]\ndatabase = "duckdb://{db}"\ntable = "m"\nkey = "id"\ndrop = ["age"]\n'
                    '[[quasi_identifiers]]\ncolumn = "token"\nhierarchy = "auto"\n'
                    '[[privacy.models]]\nname = "k-anonymity"\nk = 2\n[output]\nschema = "published"\nname = "m"\n')
    before = snapshot(db)
    code, _, err = _run(["run", str(spec), "--no-progress"], capsys)
    assert code != 0 and "close to an identifier" in err and len(err.strip().splitlines()) == 1
    assert snapshot(db) == before


def test_suggest_refuses_to_overwrite(adult_db: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "exists.toml"
    out.write_text("mine\n")
    code, _, err = _run(["suggest", "--table", "adult", "--db", f"duckdb://{adult_db}", "--out", str(out)], capsys)
    assert code != 0 and "never overwrites" in err and len(err.strip().splitlines()) == 1
    assert out.read_text() == "mine\n"


@pytest.mark.postgres
def test_suggest_then_run_on_postgres(adult_db: Path, postgres_database: str, tmp_path: Path, capsys) -> None:
    """A table loaded into a real PostgreSQL server: suggest writes the spec, run publishes it as written."""
    from ppdp.connectors import connect

    src = connect(f"duckdb://{adult_db}")
    try:
        frame = src.query("SELECT * FROM adult")
    finally:
        src.close()
    pg = connect(postgres_database)
    try:
        pg.write_frame("public", "adult", frame)
    finally:
        pg.close()
    out = tmp_path / "pg.toml"
    code, stdout, err = _run(["suggest", "--table", "public.adult", "--db", postgres_database, "--out", str(out)], capsys)
    assert code == 0, err
    assert "preview    : on all 30,162 rows: published, certified optimum, verified True" in stdout
    spec = tomllib.loads(out.read_text())
    assert spec["source"]["schema"] == "public" and all(q["hierarchy"] == "auto" for q in spec["quasi_identifiers"])
    code, stdout, err = _run(["run", str(out), "--no-progress", "--json"], capsys)
    result = json.loads(stdout)
    assert code == 0 and result["status"] == "published" and result["verified"] is True, err


SPARCS = PATHS.SHARED / "data" / "sparcs"
if not SPARCS.is_dir():  # a worktree or a clone outside /work: the machine's shared data
    SPARCS = Path("/work/shared/data/sparcs")


@pytest.mark.skipif(not SPARCS.is_dir(), reason=f"the SPARCS extract is not at {SPARCS}")
def test_sparcs_ranks_zip_age_sex_above_low_risk_columns(tmp_path: Path, capsys) -> None:
    db = tmp_path / "sparcs.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE discharges AS SELECT CAST(row_number() OVER () AS BIGINT) AS id, * "
                "FROM read_csv(?, header = true, union_by_name = true)", [str(SPARCS / "part-*.csv")])
    con.close()
    out = tmp_path / "sparcs.toml"
    code, stdout, err = _run(["suggest", "--table", "discharges", "--db", f"duckdb://{db}", "--out", str(out), "--json"], capsys)
    assert code == 0, err
    result = json.loads(stdout)
    columns = {c["column"]: c for c in result["columns"]}
    qids = [c["column"] for c in result["columns"] if c["role"] == "qid"]
    assert {"Zip Code - 3 digits", "Age Group", "Gender"} <= set(qids)
    low = [c for c in ("Discharge Year", "Abortion Edit Indicator", "Emergency Department Indicator", "Type of Admission")
           if columns[c]["role"] == "drop"]
    assert low, "the low-risk columns are dropped"
    # ZIP singles out more than every low-risk column
    assert all(columns["Zip Code - 3 digits"]["separation"] > columns[c]["separation"] for c in low)
    assert result["preview"]["status"] == "published" and result["preview"]["verified"] is True
    code, stdout, err = _run(["run", str(out), "--no-progress", "--json"], capsys)
    run = json.loads(stdout)
    assert code == 0 and run["status"] == "published" and run["verified"] is True, err


def test_varying_per_person_counts_persons_with_several_values(adult_db: Path) -> None:
    """The query suggest uses for ``person_varying``: persons whose rows differ on a column."""
    from ppdp.sql.dialect import DUCKDB
    from ppdp.sql.profile import varying_per_person_query

    db = _visits(adult_db)
    con = duckdb.connect(str(db), read_only=True)
    try:
        row = con.execute(varying_per_person_query("visits", "person_id", ["age", "visit_date"], DUCKDB)).fetchone()
        expected = con.execute("SELECT COUNT(*) FROM (SELECT person_id FROM visits GROUP BY person_id "
                               "HAVING COUNT(DISTINCT visit_date) > 1)").fetchone()[0]
    finally:
        con.close()
    assert int(row[0]) == 0 and int(row[1]) == expected and expected > 0
