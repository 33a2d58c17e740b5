"""What leaked around a release on PostgreSQL: credentials, reader roles, leftovers.

The command line runs through tests/support/cli_under_test.py (in this process; PGPASSWORD and
PGPASSFILE are set in its environment for the call), so the same scenario can be replayed against
an older commit, in a subprocess: ``PPDP_TEST_CLI_MODULE=engine.app.cli PPDP_TEST_CLI_PATH=/tmp/old``.
The credentials tests use a role that must give a password (scram-sha-256 in pg_hba.conf for that role alone),
so the tests show both that the password works where it is given and that it appears nowhere.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ppdp.connectors import connect
from ppdp.errors import ConnectorError
from tests.attack.scenarios import adult_base
from tests.conftest import ADULT_COLUMNS, toml_str, write_spec
from tests.support.cli_under_test import one_line_error, ppdp

pytestmark = pytest.mark.postgres

QIDS = ["age", "sex", "race"]
ROWS = 2000
PASSWORD = "Pw-s3cret_" + uuid.uuid4().hex[:10]


@dataclass
class Warehouse:
    url: str  # as the superuser (no password: trust)
    password_url: str  # as the owner, password in the URL
    bare_url: str  # as the owner, no password (PGPASSWORD, ~/.pgpass or a service file must supply it)
    owner: str
    name: str


def load(url: str, table: str = "adult") -> None:
    con = connect(url)
    try:
        con.write_frame("public", table, adult_base(ROWS))
    finally:
        con.close()


@pytest.fixture
def warehouse(postgres_server) -> Iterator[Warehouse]:
    """A database owned by a role that must log in with a password, holding public.adult."""
    tag = uuid.uuid4().hex[:8]
    owner, name = f"owner_{tag}", f"wh_{tag}"
    hba = Path(postgres_server.data) / "pg_hba.conf"
    admin = connect(postgres_server.url)
    try:
        admin.execute(f"CREATE ROLE \"{owner}\" LOGIN PASSWORD '{PASSWORD}'")
        admin.execute(f'CREATE DATABASE "{name}" OWNER "{owner}"')
        # this role alone must give its password; every other role keeps the server's trust
        hba.write_text(f"host all {owner} 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
        admin.query("SELECT pg_reload_conf() AS ok")
        url = postgres_server.url_for(name)
        load(url)
        su = connect(url)
        su.execute(f'ALTER TABLE public.adult OWNER TO "{owner}"')
        su.close()
        host = f"127.0.0.1:{postgres_server.port}/{name}"
        yield Warehouse(url, f"postgresql://{owner}:{PASSWORD}@{host}", f"postgresql://{owner}@{host}", owner, name)
    finally:
        hba.write_text("".join(line for line in hba.read_text().splitlines(keepends=True) if owner not in line))
        admin.query("SELECT pg_reload_conf() AS ok")
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'DROP ROLE IF EXISTS "{owner}"')
        admin.close()


def spec_file(tmp_path: Path, url: str, *, roles: list[str] | None = None, table: str = "adult") -> Path:
    path = write_spec(tmp_path / "spec.toml", db=Path("/placeholder.duckdb"), qids=QIDS, output="rel", table=table,
                      schema_line='schema = "public"')
    text = path.read_text().replace(f"database = {toml_str('duckdb:///placeholder.duckdb')}", f"database = {toml_str(url)}")
    if roles is not None:
        text += "[access]\nroles = [" + ", ".join(toml_str(r) for r in roles) + "]\n"
    path.write_text(text)
    return path


def ok(proc, code: int = 0) -> str:
    """The command's output when it exited with ``code`` (0 published, 99 skipped: docs/reference/exit-codes.md)."""
    assert proc.returncode == code, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


def stored_text(url: str) -> str:
    """Every value of every table ppdp keeps in _ppdp, as text."""
    con = connect(url)
    try:
        tables = con.query("SELECT CAST(table_name AS VARCHAR) AS t FROM information_schema.tables WHERE table_schema = '_ppdp'")
        return "\n".join(con.query(f'SELECT * FROM "_ppdp"."{t}"').write_csv() for t in tables["t"].to_list())
    finally:
        con.close()


# --- item 2: a password in the URL is used, never stored or printed ------------------------------


@pytest.mark.slow  # about 20-70 s: several CLI runs
def test_a_password_in_the_url_is_stored_and_printed_nowhere(warehouse, tmp_path):
    w = warehouse
    outputs = [ok(ppdp("run", str(spec_file(tmp_path, w.password_url)), "--no-progress")),
               ok(ppdp("job", "register", str(spec_file(tmp_path, w.password_url)), "--db", w.password_url)),
               ok(ppdp("job", "run", "rel", "--db", w.password_url, "--no-progress")),
               ok(ppdp("job", "run", "rel", "--db", w.password_url, "--no-progress", "--dry-run"), 98),
               ok(ppdp("runs", "--db", w.password_url)),
               ok(ppdp("show", "rel", "--db", w.password_url)),
               ok(ppdp("job", "history", "rel", "--db", w.password_url)),
               ok(ppdp("job", "certificate", "rel", "--db", w.password_url))]
    errors = [one_line_error(ppdp("show", "no_such_release", "--db", w.password_url)),
              one_line_error(ppdp("run", str(spec_file(tmp_path, w.password_url, table="no_such_table")), "--no-progress")),
              one_line_error(ppdp("runs", "--db", w.password_url.replace(PASSWORD, PASSWORD + "x")))]
    assert all(PASSWORD not in text for text in outputs + errors), [t for t in outputs + errors if PASSWORD in t]
    assert "***" in errors[0]  # the URL is still shown, with its password masked
    stored = stored_text(w.url)
    assert w.owner in stored or "rel" in stored  # the runs are there ...
    assert PASSWORD not in stored  # ... without the password
    con = connect(w.url)
    try:
        specs = [json.loads(s) for s in con.query("SELECT spec FROM _ppdp.runs")["spec"].to_list()]
    finally:
        con.close()
    assert {s["source"].get("database", "").replace(PASSWORD, "") for s in specs} <= {
        "", w.password_url.replace(f":{PASSWORD}@", ":***@")}


def test_credentials_without_the_url_pgpassword_and_pgpass(warehouse, tmp_path):
    """The ways docs/guides/postgres.md gives to keep the password out of the URL (libpq reads them)."""
    w = warehouse
    with pytest.raises(ConnectorError, match="password"):  # the role really needs its password
        connect(w.bare_url).close()
    ok(ppdp("run", str(spec_file(tmp_path, w.bare_url)), "--no-progress", env={"PGPASSWORD": PASSWORD}))
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"127.0.0.1:*:{w.name}:{w.owner}:{PASSWORD}\n")
    pgpass.chmod(0o600)
    out = ok(ppdp("show", "rel", "--db", w.bare_url, env={"PGPASSFILE": str(pgpass)}))
    assert "version 1" in out


# --- items 7 and 19: reader roles ----------------------------------------------------------------


@pytest.fixture
def roles(postgres_server) -> Iterator[list[str]]:
    tag = uuid.uuid4().hex[:8]
    names = [f"reader_a_{tag}", f"reader_b_{tag}", f"dba_pick_{tag}"]
    admin = connect(postgres_server.url)
    for r in names:
        admin.execute(f'CREATE ROLE "{r}"')
    try:
        yield names
    finally:  # each test drops what the roles hold in its database first (drop_owned)
        for r in names:
            admin.execute(f'DROP ROLE IF EXISTS "{r}"')
        admin.close()


def can_read(url: str, role: str, relation: str) -> bool:
    con = connect(url)
    try:
        con.execute(f'SET ROLE "{role}"')
        try:
            con.query(f"SELECT COUNT(*) AS n FROM {relation}")
            return True
        except ConnectorError as exc:
            assert "permission denied" in str(exc)
            return False
    finally:
        con.close()


@pytest.fixture
def source_db(postgres_database) -> str:
    load(postgres_database)
    return postgres_database


def drop_owned(url: str, names: list[str]) -> None:
    con = connect(url)
    try:
        for r in names:
            con.execute(f'DROP OWNED BY "{r}"')
    finally:
        con.close()


def published_versions(url: str) -> list[int]:
    con = connect(url)
    try:
        return sorted(int(v) for v in con.query("SELECT version FROM _ppdp.runs WHERE status = 'succeeded' "
                                                "AND version IS NOT NULL")["version"].to_list())
    finally:
        con.close()


def test_changing_only_the_reader_roles_changes_grants_not_versions(source_db, roles, tmp_path):
    a, b, _ = roles
    try:
        ok(ppdp("run", str(spec_file(tmp_path, source_db, roles=[a])), "--no-progress"))
        assert can_read(source_db, a, "published.rel") and not can_read(source_db, b, "published.rel")
        # the content is unchanged, so the run is skipped (exit 99) while its grants change
        out = ok(ppdp("run", str(spec_file(tmp_path, source_db, roles=[b])), "--no-progress"), 99)
        assert published_versions(source_db) == [1], out  # no copy of v1 published as v2
        assert can_read(source_db, b, "published.rel") and not can_read(source_db, a, "published.rel")
        assert f"(SELECT) granted to {b}" in out and a in out.split("revoked from", 1)[1], out  # and it says so
    finally:
        drop_owned(source_db, roles)


@pytest.mark.slow  # about 20-70 s: several CLI runs
def test_a_revoked_grant_is_said_and_versions_and_delta_stay_with_the_owner(source_db, roles, tmp_path):
    """docs/guides/sql-and-access.md: the view's SELECT is exactly [access] roles, so a run
    revokes SELECT a DBA granted on the view to another role, and says so; __vN and __delta are
    readable by the owner (the role ppdp connects as) and superusers only."""
    a, _, dba_pick = roles
    try:
        spec = spec_file(tmp_path, source_db, roles=[a])
        ok(ppdp("run", str(spec), "--no-progress"))
        con = connect(source_db)
        con.execute(f'GRANT USAGE ON SCHEMA published TO "{dba_pick}"')
        con.execute(f'GRANT SELECT ON published.rel TO "{dba_pick}"')
        con.execute("INSERT INTO public.adult SELECT id + 1000000, " + ", ".join(f'"{c}"' for c in ADULT_COLUMNS[1:])
                    + " FROM public.adult WHERE id <= 40")
        con.close()
        out = ok(ppdp("run", str(spec), "--no-progress"))
        assert published_versions(source_db) == [1, 2]
        assert not can_read(source_db, dba_pick, "published.rel")
        assert f"(SELECT) on the view revoked from {dba_pick}" in out, out
        assert can_read(source_db, a, "published.rel")
        for rel in ("published.rel__v1", "published.rel__v2", "published.rel__delta"):
            assert not can_read(source_db, a, rel)
    finally:
        drop_owned(source_db, roles)


# --- item 14: no empty _ppdp.reverts_<run_id> ----------------------------------------------------


@pytest.mark.slow  # about 20-70 s: several CLI runs
def test_a_step_that_holds_nothing_back_leaves_no_private_scratch_table(source_db, tmp_path):
    spec = spec_file(tmp_path, source_db)
    ok(ppdp("run", str(spec), "--no-progress"))
    con = connect(source_db)
    cols = ", ".join(f'a."{c}"' for c in ADULT_COLUMNS[1:])
    con.execute(f"INSERT INTO public.adult SELECT a.id + 1000000 + g.i, {cols} FROM public.adult AS a, "
                "generate_series(1, 5) AS g(i) WHERE a.id = 1")
    con.close()
    ok(ppdp("run", str(spec), "--no-progress"))
    con = connect(source_db)
    try:
        metrics = json.loads(con.query("SELECT metrics FROM _ppdp.runs WHERE version = 2 AND status = 'succeeded'")["metrics"][0])
        left = con.query("SELECT CAST(table_name AS VARCHAR) AS t FROM information_schema.tables WHERE table_schema = '_ppdp' "
                         "AND (table_name LIKE 'reverts%' OR table_name LIKE 'prefix%' OR table_name LIKE 'sig%')")["t"].to_list()
    finally:
        con.close()
    assert not any(metrics.get("held_back", {}).values())
    assert left == []
