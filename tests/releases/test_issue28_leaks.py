"""What leaked or went wrong around a release, on DuckDB.

Every test drives the command line (tests/support/cli_under_test.py: in this process, or in a
subprocess with ``PPDP_TEST_CLI_SUBPROCESS=1``), so the same scenario can be replayed against an
older commit's CLI, always in a subprocess, to show that it failed there:
``PPDP_TEST_CLI_MODULE=engine.app.cli PPDP_TEST_CLI_PATH=/tmp/old pytest tests/releases/test_issue28_leaks.py``.
The databases are built and inspected with DuckDB directly, never through ppdp.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb
import pytest

from tests.conftest import load_adult, snapshot, write_spec
from tests.support.cli_under_test import one_line_error, ppdp

QIDS = ["age", "sex", "race"]
ROWS = 2000


def query(db: Path, sql: str, params: list | None = None) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def execute(db: Path, *statements: str) -> None:
    con = duckdb.connect(str(db))
    try:
        for sql in statements:
            con.execute(sql)
    finally:
        con.close()


def runs(db: Path) -> list[tuple]:
    """(status, version, metrics) of every run, oldest first."""
    return [(s, v, json.loads(m or "{}")) for s, v, m in
            query(db, "SELECT status, version, metrics FROM _ppdp.runs ORDER BY started_at")]


@pytest.fixture
def source(tmp_path) -> Path:
    """A DuckDB file holding main.adult (2,000 rows, key id)."""
    return load_adult(tmp_path / "warehouse.duckdb", rows=ROWS)


def spec_for(tmp_path: Path, db: Path, *, output_schema: str = "published", name: str = "rel",
             source_schema: str | None = None, file: str = "spec.toml") -> Path:
    path = write_spec(tmp_path / file, db=db, qids=QIDS, output=name,
                      schema_line=f'schema = "{source_schema}"' if source_schema else "")
    path.write_text(path.read_text().replace('[output]\nschema = "published"', f'[output]\nschema = "{output_schema}"'))
    return path


def ok(proc, code: int = 0) -> str:
    """stdout of a command that exited with ``code`` (0 published, 99 skipped: docs/reference/exit-codes.md)."""
    assert proc.returncode == code, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def share_relations(share: Path) -> set[tuple[str, str]]:
    return set(query(share, "SELECT table_schema, table_name FROM information_schema.tables"))


def source_keys_in_share(share: Path, keys: set[str]) -> list[str]:
    """The attacker's look at a share file: every column of every relation, compared with the
    source's keys (as text). Any hit means a source row travelled with the release."""
    con = duckdb.connect(str(share), read_only=True)
    hits = []
    try:
        for schema, table in con.execute("SELECT table_schema, table_name FROM information_schema.tables").fetchall():
            cols = [r[0] for r in con.execute("SELECT column_name FROM information_schema.columns "
                                              "WHERE table_schema = ? AND table_name = ?", [schema, table]).fetchall()]
            for col in cols:
                values = {str(v[0]) for v in con.execute(f'SELECT DISTINCT CAST("{col}" AS VARCHAR) FROM "{schema}"."{table}"').fetchall()}
                if len(values & keys) > len(keys) // 10:
                    hits.append(f"{schema}.{table}.{col}")
    finally:
        con.close()
    return hits


# --- item 1: a share file carries only what ppdp published ---------------------------------------


@pytest.mark.parametrize("extra", ["CREATE TABLE published.raw_copy AS SELECT * FROM main.adult",
                                   "CREATE VIEW published.peek AS SELECT * FROM main.adult"])
def test_export_copies_only_the_relations_ppdp_published(source, tmp_path, extra):
    """A DBA's copy of the source (or a view over it) sits in the published schema: export
    leaves it in the database; the share file holds the release and nothing that carries a key."""
    ok(ppdp("run", str(spec_for(tmp_path, source)), "--no-progress"))
    execute(source, extra)
    share = tmp_path / "share.duckdb"
    out = ppdp("export", str(share), "--db", f"duckdb://{source}")
    assert out.returncode == 0, out.stderr
    assert share_relations(share) == {("published", "rel__v1"), ("published", "rel")}
    keys = {str(k[0]) for k in query(source, "SELECT id FROM main.adult")}
    assert source_keys_in_share(share, keys) == []
    n = query(share, "SELECT COUNT(*) FROM published.rel")[0][0]
    assert n == query(source, "SELECT COUNT(*) FROM published.rel")[0][0]


@pytest.mark.parametrize("how", ["table", "query"])
def test_a_release_into_the_source_schema_is_refused(source, tmp_path, how):
    """output.schema = the source's schema put the source into what export copies: refused, one line, nothing written."""
    spec = spec_for(tmp_path, source, output_schema="main")
    if how == "query":
        spec.write_text(spec.read_text().replace('table = "adult"', 'query = "SELECT * FROM adult WHERE age > 0"'))
    before = snapshot(source)
    one_line_error(ppdp("run", str(spec), "--no-progress"), "output.schema 'main'", "source")
    assert snapshot(source) == before


def test_export_of_schema_main_works(tmp_path):
    """The source lives in schema src, the release in main: ``export --schema main`` ended in
    "Schema with name main already exists"; it now writes main's release into the share file."""
    db = tmp_path / "w.duckdb"
    execute(db, "CREATE SCHEMA src")
    load_adult(db, rows=ROWS, table="tmp_adult")
    execute(db, "CREATE TABLE src.adult AS SELECT * FROM main.tmp_adult", "DROP TABLE main.tmp_adult")
    ok(ppdp("run", str(spec_for(tmp_path, db, output_schema="main", source_schema="src")), "--no-progress"))
    share = tmp_path / "share.duckdb"
    out = ppdp("export", str(share), "--db", f"duckdb://{db}", "--schema", "main")
    assert out.returncode == 0 and not out.stderr, out.stderr
    assert share_relations(share) == {("main", "rel__v1"), ("main", "rel")}
    assert query(share, "SELECT COUNT(*) FROM main.rel")[0][0] > 0


def test_export_of_a_schema_without_a_release_is_refused(source, tmp_path):
    ok(ppdp("run", str(spec_for(tmp_path, source)), "--no-progress"))
    share = tmp_path / "share.duckdb"
    one_line_error(ppdp("export", str(share), "--db", f"duckdb://{source}", "--schema", "main"), "no release")
    assert not share.exists()


# --- item 10: an export that cannot be written is one line ---------------------------------------


def test_export_into_a_directory_that_cannot_be_written(source, tmp_path):
    ok(ppdp("run", str(spec_for(tmp_path, source)), "--no-progress"))
    folder = tmp_path / "readonly"
    folder.mkdir()
    folder.chmod(0o555)
    # root writes anywhere it may chmod; /proc refuses new files even to root
    target = Path("/proc") if os.geteuid() == 0 else folder
    share = target / "share.duckdb"
    try:
        one_line_error(ppdp("export", str(share), "--db", f"duckdb://{source}"), str(share.parent))
    finally:
        folder.chmod(0o755)
    assert not share.exists()


# --- item 13: a missing DuckDB file is not created -----------------------------------------------


@pytest.mark.parametrize("command", ["run", "job register"])
def test_a_missing_duckdb_file_is_refused_and_not_created(tmp_path, command):
    missing = tmp_path / "typo" / "warehouse.duckdb"
    missing.parent.mkdir()
    spec = spec_for(tmp_path, missing)
    args = ["run", str(spec), "--no-progress"] if command == "run" else ["job", "register", str(spec), "--db", f"duckdb://{missing}"]
    one_line_error(ppdp(*args), "does not exist")
    assert list(missing.parent.iterdir()) == []


# --- item 4: the figures describe the published version ------------------------------------------


@pytest.mark.slow  # about 20-70 s: several CLI runs
def test_figures_describe_the_version_published_after_a_step_held_back(source, tmp_path):
    """Two copies of a row arrive (fewer than k): both are withheld and v2 has v1's rows. TD of
    v2 must be v1's, and released - delayed deletions + suppressed + withheld = source rows."""
    spec = spec_for(tmp_path, source)
    ok(ppdp("job", "register", str(spec), "--db", f"duckdb://{source}"))
    ok(ppdp("job", "run", "rel", "--db", f"duckdb://{source}", "--no-progress"))
    execute(source, "INSERT INTO adult SELECT id + 1000000, * EXCLUDE (id) FROM adult WHERE id IN (1, 2)")
    ok(ppdp("job", "run", "rel", "--db", f"duckdb://{source}", "--no-progress"))
    published = [(v, m) for s, v, m in runs(source) if s == "succeeded" and v is not None]
    assert [v for v, _ in published] == [1, 2]
    (_, m1), (_, m2) = published
    cols = ", ".join(f'"{q}"' for q in QIDS)
    v1 = sorted(query(source, f"SELECT ppdp_row_id, {cols} FROM published.rel__v1"))
    v2 = sorted(query(source, f"SELECT ppdp_row_id, {cols} FROM published.rel__v2"))
    held = m2["held_back"]
    assert held["inserts_withheld"] == 2 and v1 == v2  # the step was held back whole
    assert m2["td"] == pytest.approx(m1["td"])
    assert m2["class_sizes"] == m1["class_sizes"]
    assert m2["released_records"] == len(v2)
    assert m2["released_records"] - held["deletes_delayed"] + m2["suppressed"] + held["inserts_withheld"] == ROWS + 2


# --- item 5: the run key is the database's identity, not its spelling ----------------------------


@pytest.mark.slow  # about 20-70 s: several CLI runs
def test_the_same_job_from_another_directory_is_skipped(source, tmp_path):
    spec = spec_for(tmp_path, source)
    here = source.parent
    ok(ppdp("job", "register", str(spec), "--db", f"duckdb://{source}"))
    ok(ppdp("job", "run", "rel", "--db", f"duckdb://{source.name}", "--no-progress", cwd=here))
    out = ok(ppdp("job", "run", "rel", "--db", f"duckdb://{here.name}/{source.name}", "--no-progress", cwd=here.parent), 99)
    assert out.startswith("skipped"), out
    assert [(s, v) for s, v, _ in runs(source)] == [("succeeded", 1), ("skipped", 1)]


# --- item 6: a dry run says what the real run would do -------------------------------------------


@pytest.mark.slow  # about 20-70 s: several CLI runs
def test_a_dry_run_of_an_unchanged_job_says_it_would_be_skipped(source, tmp_path):
    spec = spec_for(tmp_path, source)
    ok(ppdp("job", "register", str(spec), "--db", f"duckdb://{source}"))
    ok(ppdp("job", "run", "rel", "--db", f"duckdb://{source}", "--no-progress"))
    dry = ok(ppdp("job", "run", "rel", "--db", f"duckdb://{source}", "--no-progress", "--dry-run"), 98)
    real = ok(ppdp("job", "run", "rel", "--db", f"duckdb://{source}", "--no-progress"), 99)
    assert real.startswith("skipped")
    assert "would be skipped" in dry and "would publish version" not in dry, dry


# --- item 14: no empty private table is left behind ----------------------------------------------


@pytest.mark.slow  # about 20-70 s: several CLI runs
def test_a_step_that_holds_nothing_back_leaves_no_reverts_table(source, tmp_path):
    spec = spec_for(tmp_path, source)
    ok(ppdp("job", "register", str(spec), "--db", f"duckdb://{source}"))
    ok(ppdp("job", "run", "rel", "--db", f"duckdb://{source}", "--no-progress"))
    # five copies of a published row join its class: nothing needs holding back
    execute(source, "INSERT INTO adult SELECT adult.id + 1000000 + r.i, adult.* EXCLUDE (id) FROM adult, range(5) AS r(i) WHERE adult.id = 1")
    ok(ppdp("job", "run", "rel", "--db", f"duckdb://{source}", "--no-progress"))
    published = [m for s, v, m in runs(source) if s == "succeeded" and v is not None]
    assert len(published) == 2 and not any(published[1].get("held_back", {}).values())
    left = query(source, "SELECT table_name FROM information_schema.tables WHERE table_schema = '_ppdp' "
                         "AND (table_name LIKE 'reverts%' OR table_name LIKE 'prefix%' OR table_name LIKE 'sig%')")
    assert left == []


# --- item 2 without a server: a password given as a URL option is masked too -----------------------


@pytest.mark.parametrize("url", ["postgresql://someone@127.0.0.1:1/db?password=Hush-{tag}",
                                 "postgresql://someone:Hush-{tag}@127.0.0.1:1/db"])
def test_a_url_password_is_masked_in_the_error(tmp_path, url):
    """Nothing listens on port 1: the connection error names the URL, with its password masked."""
    secret_url = url.format(tag=os.getpid())
    line = one_line_error(ppdp("runs", "--db", secret_url))
    assert f"Hush-{os.getpid()}" not in line and "***" in line, line
