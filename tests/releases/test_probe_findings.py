"""Crashes and confusing output, each as a user
meets it: the ``ppdp`` command, its output and exit code (run in this process,
tests/support/cli_in_process.py; ``PPDP_TEST_CLI_SUBPROCESS=1`` for a subprocess). Every test here
failed on 6e1dadf (``PPDP_CLI_CHECKOUT``, tests/support/cli.py, runs that checkout in a subprocess).

The refusal contract (docs/reference/spec.md, "Rules and defaults"): bad input gives one line on stderr, exit code
2, and nothing written to the database.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import pytest

from tests.conftest import ADULT, load_adult, write_spec
from tests.support import paths as PATHS
from tests.support.cli import assert_ok, assert_refused, file_state, ppdp

QIDS = ["age", "sex", "race", "education"]
KEEP = ["marital-status", "native-country", "workclass", "occupation"]
K5 = '[[privacy.models]]\nname = "k-anonymity"\nk = 5\n'
CATALOGUE = PATHS.CATALOGUES / "diseases32.csv"
DISEASES = [line.split(";")[0] for line in CATALOGUE.read_text().splitlines()]
METHODS = ("generalization", "microaggregation", "heterogeneous")


def adult_with_disease(db: Path, rows: int = 300) -> Path:
    """adult with a Disease column from the 32-disease catalogue (a fixed hash of the key)."""
    load_adult(db, rows=rows)
    con = duckdb.connect(str(db))
    con.execute("ALTER TABLE adult ADD COLUMN disease VARCHAR")
    con.execute("UPDATE adult SET disease = list_extract(?, CAST(hash(id, 7) % 32 AS INTEGER) + 1)", [DISEASES])
    con.close()
    return db


def method_spec(path: Path, db: Path, method: str, *, output: str | None = None) -> Path:
    """A small release of ``db``'s adult by ``method`` (the three release methods)."""
    name = output or method[:4]
    if method == "generalization":
        return write_spec(path, db=db, qids=QIDS, keep=KEEP, drop=["salary-class"], sensitive=["disease"], output=name,
                          models=K5)
    if method == "microaggregation":
        p = write_spec(path, db=db, qids=QIDS, sensitive=["disease"], keep=[*KEEP, "salary-class"], output=name,
                       models='[[privacy.models]]\nname = "k-anonymity"\nk = 8\n')
        p.write_text(p.read_text() + '[method]\nname = "microaggregation"\nparams = { catalogue = "diseases32" }\n')
        return p
    p = write_spec(path, db=db, qids=QIDS, keep=[*KEEP, "salary-class"], drop=["disease"], sensitive=[], output=name,
                   models=K5, budget=100_000)
    p.write_text(p.read_text() + '[method]\nname = "heterogeneous"\nparams = { initial = "k-member", seconds = 1 }\n')
    return p


@pytest.fixture(scope="module")
def three_releases(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """One DuckDB file with a release of each method; the stdout of each ``ppdp run``."""
    folder = tmp_path_factory.mktemp("methods")
    db = adult_with_disease(folder / "m.duckdb")
    runs = {m: assert_ok(ppdp("run", str(method_spec(folder / f"{m}.toml", db, m)), "--no-progress")) for m in METHODS}
    return db, runs


# --- item 8: every command works on every method, or refuses in one line -----------------------


@pytest.mark.slow
@pytest.mark.parametrize("method", METHODS)
def test_every_command_works_on_every_method(three_releases, tmp_path, method):
    """verify (a Binder Error on heterogeneous at 6e1dadf), show, sql (KeyError 'levels' on
    microaggregation and heterogeneous), runs, export, job certificate: each exits 0, and the
    verification passes."""
    db, _ = three_releases
    name, url = method[:4], f"duckdb://{db}"
    verified = assert_ok(ppdp("verify", name, "--db", url))
    assert "verification passed" in verified
    assert_ok(ppdp("show", name, "--db", url))
    script = assert_ok(ppdp("sql", name, "--db", url))
    assert f'CREATE OR REPLACE VIEW "published"."{name}"' in script
    assert name in assert_ok(ppdp("runs", name, "--db", url))
    assert_ok(ppdp("export", str(tmp_path / "share.duckdb"), "--db", url))
    cert = json.loads(assert_ok(ppdp("job", "certificate", name, "--db", url, "--format", "json")))
    assert cert["verification_passed"] is True


@pytest.mark.slow
def test_verify_of_a_heterogeneous_release_runs_its_own_checks(three_releases):
    """Its rows form no classes: verify re-runs the consistency-graph checks and says so."""
    db, _ = three_releases
    out = assert_ok(ppdp("verify", "hete", "--db", f"duckdb://{db}"))
    assert "every published tuple covers and every source tuple is covered by at least k" in out
    assert "exactly k-regular" in out and out.count("PASS") == 3


# --- item 16: no placeholders; the heterogeneous summary says what was verified ------------------

PLACEHOLDERS = re.compile(r"\bNone\b|\bnan\b|levels \(G\)\s*:\s*$|^- levels:\s*$|\(None classes\)|Utility:\s*$", re.M)


@pytest.mark.slow
@pytest.mark.parametrize("method", METHODS)
def test_summaries_show_and_certificates_print_no_placeholders(three_releases, method):
    db, runs = three_releases
    name, url = method[:4], f"duckdb://{db}"
    shown = assert_ok(ppdp("show", name, "--db", url))
    cert = assert_ok(ppdp("job", "certificate", name, "--db", url, "--format", "markdown"))
    for text in (runs[method], shown, cert):
        assert not PLACEHOLDERS.search(text), PLACEHOLDERS.search(text)
    for text in (runs[method], shown):
        assert "verified (SQL)" in text  # the heterogeneous summary had no verified line
    cert_json = json.loads(assert_ok(ppdp("job", "certificate", name, "--db", url, "--format", "json")))
    assert isinstance(cert_json["suppressed_rows"], int)  # item 18: was a float


# --- item 9: a hierarchy file that is not UTF-8 ----------------------------------------------------


def test_hierarchy_file_not_utf8_is_one_line_naming_it(tmp_path):
    db = load_adult(tmp_path / "h.duckdb", rows=200)
    latin1 = tmp_path / "sex_latin1.csv"
    latin1.write_bytes("Male;*\nFemale;*\nM\xe4nnlich;*\n".encode("latin-1"))
    spec = write_spec(tmp_path / "s.toml", db=db, qids=["age", "sex", "race"], hierarchies={"sex": str(latin1)})
    before = file_state(db)
    assert_refused(ppdp("run", str(spec), "--no-progress"), str(latin1), "UTF-8")
    assert file_state(db) == before


# --- item 11: a later version with quasi-identifiers an earlier one does not publish -----------------


def test_new_quasi_identifier_missing_from_a_published_version_is_refused_before_the_search(tmp_path):
    db = load_adult(tmp_path / "q.duckdb", rows=300)
    first = write_spec(tmp_path / "v1.toml", db=db, qids=["age", "sex", "race"], drop=["education"], output="q")
    assert_ok(ppdp("run", str(first), "--no-progress"))
    second = write_spec(tmp_path / "v2.toml", db=db, qids=["age", "sex", "race", "education"], output="q")
    before = file_state(db)
    assert_refused(ppdp("run", str(second), "--no-progress"), "'education'", "new output name")
    assert file_state(db) == before  # no failed run recorded: refused before the search


@pytest.mark.postgres
def test_new_quasi_identifier_is_refused_before_the_search_on_postgres(postgres_database, tmp_path):
    from ppdp.connectors import connect
    from tests.adapters.test_postgres_release import adult_frame

    con = connect(postgres_database)
    try:
        con.write_frame("public", "adult", adult_frame().head(300))
    finally:
        con.close()

    def pg_spec(path: Path, **kw) -> Path:
        p = write_spec(path, db=Path("/placeholder.duckdb"), schema_line='schema = "public"', **kw)
        p.write_text(p.read_text().replace('"duckdb:///placeholder.duckdb"', json.dumps(postgres_database)))
        return p

    assert_ok(ppdp("run", str(pg_spec(tmp_path / "v1.toml", qids=["age", "sex", "race"], drop=["education"], output="q")),
                   "--no-progress"))

    def runs() -> list[tuple]:
        c = connect(postgres_database)
        try:
            return c.query("SELECT run_id, status FROM _ppdp.runs ORDER BY run_id").rows()
        finally:
            c.close()

    before = runs()
    proc = ppdp("run", str(pg_spec(tmp_path / "v2.toml", qids=["age", "sex", "race", "education"], output="q")), "--no-progress")
    assert_refused(proc, "'education'", "new output name")
    assert runs() == before


def test_heterogeneous_later_version_with_other_qids_is_refused_before_the_run_record(tmp_path):
    """The heterogeneous method refused it in one line, but after recording a failed run."""
    db = adult_with_disease(tmp_path / "h.duckdb", rows=120)
    assert_ok(ppdp("run", str(method_spec(tmp_path / "v1.toml", db, "heterogeneous", output="het")), "--no-progress"))
    con = duckdb.connect(str(db))
    con.execute("UPDATE adult SET age = age + 1 WHERE id = 1")  # a changed source: not a skipped run
    con.close()
    spec = method_spec(tmp_path / "v2.toml", db, "heterogeneous", output="het")
    spec.write_text(spec.read_text().replace('drop = ["disease"]', 'drop = ["disease", "education"]')
                    .replace(f'[[quasi_identifiers]]\ncolumn = "education"\nhierarchy = "{ADULT / "adult_hierarchy_education.csv"}"\n', ""))
    before = file_state(db)
    assert_refused(ppdp("run", str(spec), "--no-progress"), "other quasi-identifiers or columns")
    assert file_state(db) == before


# --- item 12: optimizer parameters and the catalogue, before _ppdp exists ------------------------------


@pytest.mark.parametrize(("params", "fragment"), [
    ("suppression_limit = 2.5", "suppression_limit must be a fraction in [0, 1], got 2.5"),
    ('mode = "fast"', "mode must be one of"),
    ('modee = "bound"', "unknown parameter(s) ['modee']"),
    ("batch = 0", "batch must be a positive number"),
])
def test_bad_optimizer_parameters_write_nothing(tmp_path, params, fragment):
    db = load_adult(tmp_path / "o.duckdb", rows=300)
    spec = write_spec(tmp_path / "s.toml", db=db, qids=["age", "sex", "race"])
    spec.write_text(spec.read_text().replace("seed = 1\n", f"seed = 1\nparams = {{ {params} }}\n"))
    before = file_state(db)
    assert_refused(ppdp("run", str(spec), "--no-progress"), fragment)
    assert file_state(db) == before  # no _ppdp schema, no failed run


@pytest.mark.parametrize(("optimizer", "params", "fragment"), [
    ("flash", "suppression_limit = -1", "suppression_limit"),
    ("descent", "stepping = 0", "stepping"),
    ("ga", "pop_size = 0", "pop_size"),
    ("de", 'strategy = "best/9"', "strategy"),
    ("haef", 'schedule = "sometimes"', "schedule"),
    ("id-dga", 'mutation = "wild"', "mutation"),
    ("dfs", "batchh = 3", "batchh"),
])
def test_every_optimizer_checks_its_parameters_before_any_write(tmp_path, optimizer, params, fragment):
    db = load_adult(tmp_path / "o.duckdb", rows=300)
    spec = write_spec(tmp_path / "s.toml", db=db, qids=["age", "sex", "race"], optimizer=optimizer)
    spec.write_text(spec.read_text().replace("seed = 1\n", f"seed = 1\nparams = {{ {params} }}\n"))
    before = file_state(db)
    assert_refused(ppdp("run", str(spec), "--no-progress"), f"{optimizer} optimizer", fragment)
    assert file_state(db) == before


def test_catalogue_that_misses_a_sensitive_value_writes_nothing(tmp_path):
    db = adult_with_disease(tmp_path / "c.duckdb")
    con = duckdb.connect(str(db))
    con.execute("UPDATE adult SET disease = 'Unobtainium' WHERE id = 7")
    con.close()
    before = file_state(db)
    assert_refused(ppdp("run", str(method_spec(tmp_path / "s.toml", db, "microaggregation")), "--no-progress"),
                   "'Unobtainium'", "not in the catalogue")
    assert file_state(db) == before


# --- item 15: run and show say when changes were held back --------------------------------------


@pytest.mark.slow
def test_run_and_show_say_that_changes_were_held_back(tmp_path):
    db = adult_with_disease(tmp_path / "hb.duckdb")
    spec = method_spec(tmp_path / "s.toml", db, "generalization", output="hb")
    assert_ok(ppdp("run", str(spec), "--no-progress"))
    con = duckdb.connect(str(db))
    # a newcomer alone in a big class (its history class would be of size 1) and a lone change of
    # a sensitive value: the cross-version check holds both back
    con.execute("INSERT INTO adult SELECT 100001, sex, age, race, \"marital-status\", education, \"native-country\", "
                "workclass, occupation, \"salary-class\", disease FROM adult WHERE id = 1")
    con.execute("UPDATE adult SET disease = CASE WHEN disease = 'Flu' THEN 'eczema' ELSE 'Flu' END WHERE id = 5")
    con.close()
    run = assert_ok(ppdp("run", str(spec), "--no-progress"))
    shown = assert_ok(ppdp("show", "hb", "--db", f"duckdb://{db}"))
    for text in (run, shown):
        assert "held back: 1 insertions, 0 deletions, 1 changes" in text
        assert "none of the source's changes reached this version" in text


# --- item 17: a file source without the key -----------------------------------------------------------


def test_file_source_without_the_key_names_the_file_and_its_columns(tmp_path):
    csv = tmp_path / "people.csv"
    csv.write_text("sex,age,race\nMale,39,White\nFemale,50,Black\n")
    spec = tmp_path / "s.toml"
    spec.write_text(f'[source]\ndatabase = "duckdb://{tmp_path / "f.duckdb"}"\nfile = "people.csv"\nkey = "id"\n'
                    '[[quasi_identifiers]]\ncolumn = "age"\nhierarchy = "intervals"\n'
                    f'[[quasi_identifiers]]\ncolumn = "sex"\nhierarchy = "{ADULT / "adult_hierarchy_sex.csv"}"\n'
                    f'[[quasi_identifiers]]\ncolumn = "race"\nhierarchy = "{ADULT / "adult_hierarchy_race.csv"}"\n'
                    '[sensitive]\ncolumns = []\n[[privacy.models]]\nname = "k-anonymity"\nk = 2\n[output]\nname = "f"\n')
    line = assert_refused(ppdp("run", str(spec), "--no-progress"), "source.file 'people.csv'", "sex, age, race")
    assert "source.query" not in line.split("Hint")[0]


def test_readme_says_how_to_give_a_keyless_csv_a_key():
    readme = (PATHS.REPO / "docs" / "reference" / "spec.md").read_text()
    i = readme.index("`source.file`")
    assert "row_number() OVER ()" in readme[i:i + 800] and "key" in readme[i:i + 800]


# --- item 18: small ones ------------------------------------------------------------------------------


def test_unknown_connector_lists_the_known_ones(tmp_path):
    spec = write_spec(tmp_path / "s.toml", db=tmp_path / "x.duckdb", qids=["age", "sex", "race"])
    spec.write_text(re.sub(r'database = ".*"', 'database = "mysql://host/db"', spec.read_text()))
    line = assert_refused(ppdp("run", str(spec), "--no-progress"), "Unknown database connector 'mysql'")
    assert "duckdb" in line and "postgres" in line and "Known: ." not in line


def test_source_database_is_not_needed_with_db(tmp_path):
    db = load_adult(tmp_path / "d.duckdb", rows=300)
    spec = write_spec(tmp_path / "s.toml", db=db, qids=["age", "sex", "race"])
    spec.write_text("\n".join(line for line in spec.read_text().splitlines() if not line.startswith("database =")) + "\n")
    assert "published:" in assert_ok(ppdp("run", str(spec), "--db", f"duckdb://{db}", "--no-progress"))
    assert_refused(ppdp("run", str(spec), "--no-progress"), "source.database", "--db")


@pytest.mark.slow
def test_job_history_does_not_list_a_dry_run_as_succeeded(tmp_path):
    db = load_adult(tmp_path / "j.duckdb", rows=300)
    spec = write_spec(tmp_path / "s.toml", db=db, qids=["age", "sex", "race"], output="j")
    url = f"duckdb://{db}"
    assert_ok(ppdp("job", "register", str(spec), "--db", url))
    assert ppdp("job", "run", "j", "--dry-run", "--db", url, "--no-progress").returncode == 98  # DRY_RUN
    history = assert_ok(ppdp("job", "history", "j", "--db", url))
    rows = [line for line in history.splitlines()[1:] if line.strip()]
    assert len(rows) == 1 and "succeeded" not in rows[0] and "dry-run" in rows[0]


def test_masking_with_more_levels_than_characters_is_refused(tmp_path):
    db = load_adult(tmp_path / "mk.duckdb", rows=300)
    spec = write_spec(tmp_path / "s.toml", db=db, qids=["age", "sex", "race"],
                      hierarchies={"age": '{ type = "masking", levels = 5 }'})
    before = file_state(db)
    assert_refused(ppdp("run", str(spec), "--no-progress"), "'age'", "levels = 5", "2 character")
    assert file_state(db) == before
