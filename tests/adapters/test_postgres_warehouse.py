"""The warehouse acceptance path on a real PostgreSQL server: a job registered by SQL INSERT,
run by ppdp, read by a role ``analyst`` that may see the published view and nothing else; the
histogram GROUP BY and the verification run inside PostgreSQL; ``ppdp sql`` for postgres
rebuilds the version on a fresh database row for row."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import uuid

import polars as pl
import pytest
import sqlglot

import ppdp.engine.release.run as release_module
from ppdp.connectors import connect
from ppdp.connectors.base import ConnectorError
from ppdp.engine.app import jobs
from ppdp.engine.app.rebuild import rebuild_script
from ppdp.engine.core import catalog
from tests.adapters.test_postgres_release import adult_frame
from tests.conftest import ADULT

pytestmark = pytest.mark.postgres

JOB = {
    "source": {"schema": "public", "table": "adult", "key": "id"},
    "quasi_identifiers": [{"column": q, "hierarchy": {"type": "arx", "file": str(ADULT / f"adult_hierarchy_{q}.csv")}}
                          for q in ("age", "education", "marital-status", "native-country", "occupation", "race", "sex", "workclass")],
    "sensitive": {"columns": ["salary-class"]},
    "privacy": {"models": [{"name": "k-anonymity", "k": 5}]},
    "optimizer": {"name": "lattice", "budget": 10000, "seed": 1},
    "access": {"roles": ["analyst"]},
    "output": {"schema": "published", "name": "adult"},
}


@pytest.fixture
def warehouse(postgres_server):
    """A fresh database with public.adult and a login role analyst (no grants)."""
    name = f"wh_{uuid.uuid4().hex[:8]}"
    admin = connect(postgres_server.url)
    admin.execute(f'CREATE DATABASE "{name}"')
    admin.execute("DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'analyst') THEN CREATE ROLE analyst LOGIN; END IF; END $$")
    url = postgres_server.url_for(name)
    con = connect(url)
    con.write_frame("public", "adult", adult_frame())
    con.close()
    try:
        yield postgres_server, url, name
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


def test_sql_registered_job_on_postgres_with_analyst_access(warehouse, monkeypatch, capsys, tmp_path):
    server, url, dbname = warehouse
    setup = connect(url)
    with setup.transaction():
        catalog.ensure_schema(setup)  # what `ppdp init` does
    setup.execute("INSERT INTO _ppdp.jobs (name, spec) VALUES (?, ?)", ["adult_k5", json.dumps(JOB)])
    setup.close()

    opened = []
    monkeypatch.setattr(release_module, "connect", lambda u, **options: opened.append(connect(u, **options)) or opened[-1])
    t0 = time.perf_counter()
    outcome = jobs.run_job(url, "adult_k5", progress=False)
    run_seconds = time.perf_counter() - t0
    assert outcome.run.status == "succeeded" and outcome.run.verification["passed"] and outcome.result.certified

    log = [s for con in opened for s in con.statements]
    histogram = [s for s in log if "GROUP BY 1, 2, 3" in s and "COUNT(*)" in s and '"public"."adult"' in s]
    verification = [s for s in log if s.startswith("SELECT MIN(n) AS ad") and "published" in s]
    assert histogram and verification
    bytes_in = sum(c.bytes_in for c in opened)
    bytes_out = sum(c.bytes_out for c in opened)
    with capsys.disabled():
        print(f"\n[postgres] histogram GROUP BY ran in PostgreSQL: {histogram[0][:160]}...")
        print(f"[postgres] verification ran in PostgreSQL: {verification[0][:160]}...")
        print(f"[postgres] job run took {run_seconds:.1f} s; {len(log)} statements; bytes from server {bytes_in:,}, to server {bytes_out:,} "
              f"(source as Arrow would be ~4.6 MB)")
    # Aggregates travel, not the 30,162 source rows: the histogram the search reads and the utility
    # stage's paired histogram (source QIDs x suppressed, at most one row per distinct combination
    # each; about 2.2 MB apiece on adult's 8 QIDs).
    assert bytes_in < 5_000_000

    analyst = connect(server.url_for(dbname).replace("postgres@", "analyst@"))
    try:
        n = analyst.query("SELECT COUNT(*) AS n FROM published.adult")["n"][0]
        assert n == 30162 - outcome.run.metrics["suppressed"]
        for forbidden in ("SELECT * FROM public.adult LIMIT 1", "SELECT * FROM _ppdp.runs LIMIT 1",
                          "SELECT * FROM _ppdp.hierarchies LIMIT 1", 'SELECT * FROM published."adult__v1" LIMIT 1'):
            with pytest.raises(ConnectorError, match="permission denied"):
                analyst.query(forbidden)
    finally:
        analyst.close()

    # ppdp sql for postgres rebuilds the version on a fresh database, row for row
    con = connect(url)
    script = rebuild_script(con, "adult", "postgres")
    original = con.query('SELECT * FROM published."adult__v1" ORDER BY ppdp_row_id')
    con.close()
    fresh_name = f"re_{uuid.uuid4().hex[:8]}"
    admin = connect(server.url)
    admin.execute(f'CREATE DATABASE "{fresh_name}"')
    try:
        fresh = connect(server.url_for(fresh_name))
        fresh.write_frame("public", "adult", adult_frame())
        psql = shutil.which("psql")
        if psql:  # run it as a user would, with PostgreSQL's own client
            path = tmp_path / "rebuild.sql"
            path.write_text(script)
            subprocess.run([psql, server.url_for(fresh_name), "-v", "ON_ERROR_STOP=1", "-q", "-f", str(path)],
                           check=True, capture_output=True, text=True)
        else:
            for stmt in sqlglot.parse(script, read="postgres"):
                fresh.execute(stmt.sql(dialect="postgres"))
        rebuilt = fresh.query('SELECT * FROM published."adult" ORDER BY ppdp_row_id')
        fresh.close()
        assert rebuilt.equals(original) and rebuilt.height > 26000
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{fresh_name}" WITH (FORCE)')
        admin.close()


def test_names_that_need_quoting_on_postgres(postgres_database, tmp_path):
    """Spaces, quotes, keywords and an injection attempt as table/column/release names."""
    from ppdp.engine.core.spec import spec_from_dict
    from ppdp.engine.release.run import run_release

    table = 'my "odd" table; DROP TABLE adult; --'
    frame = adult_frame().head(800).select(
        pl.col("id").alias("select"), pl.col("age").alias("the age"), pl.col("sex").alias('se"x'),
        pl.col("race").alias("from"), pl.col("salary-class").alias("salary class"))
    con = connect(postgres_database)
    con.write_frame("public", "adult", adult_frame().head(10))
    con.write_frame("public", table, frame)
    con.close()
    spec = spec_from_dict({
        "source": {"database": postgres_database, "schema": "public", "table": table, "key": "select"},
        "quasi_identifiers": [{"column": c, "hierarchy": {"type": "arx", "file": str(ADULT / f"adult_hierarchy_{h}.csv")}}
                              for c, h in (("the age", "age"), ('se"x', "sex"), ("from", "race"))],
        "sensitive": {"columns": ["salary class"]},
        "privacy": {"models": [{"name": "k-anonymity", "k": 3}, {"name": "t-closeness", "t": 0.3}]},
        "output": {"schema": "pub lished", "name": 'rel "x"; --'},
    })
    out = run_release(spec, progress=False)
    assert out.run.verification["passed"]
    con = connect(postgres_database)
    cols = con.relation_columns("pub lished", 'rel "x"; --')
    still_there = con.query("SELECT COUNT(*) AS n FROM public.adult")["n"][0]
    smallest = con.query('SELECT MIN(n) AS m FROM (SELECT COUNT(*) AS n FROM "pub lished"."rel ""x""; --" '
                         'GROUP BY "the age", "se""x", "from") AS c')["m"][0]
    con.close()
    assert [c for c, _ in cols] == ["ppdp_row_id", "the age", 'se"x', "from", "salary class"]  # key dropped
    assert still_there == 10 and smallest >= 3


def _small_job(roles: list[str], name: str = "adult_small") -> dict:
    job = json.loads(json.dumps(JOB))
    job["quasi_identifiers"] = job["quasi_identifiers"][:3]
    job["source"]["keep"] = ["native-country", "occupation", "race", "sex", "workclass"]
    # these kept columns single rows out: this test is about grants, so publish anyway
    job.setdefault("privacy", {})["kept_columns"] = "warn"
    job["access"]["roles"] = roles
    job["output"]["name"] = name
    return job


def test_a_role_removed_from_access_loses_the_view(warehouse):
    """A role removed from [access] roles must not keep SELECT on the view."""
    from ppdp.engine.core.spec import spec_from_dict
    from ppdp.engine.release.run import run_release

    server, url, dbname = warehouse
    admin = connect(url)
    admin.execute("DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'auditor') THEN CREATE ROLE auditor LOGIN; END IF; END $$")
    admin.execute("DELETE FROM public.adult WHERE id > 3000")
    admin.close()
    raw = _small_job(["analyst", "auditor"]) | {"source": _small_job([])["source"] | {"database": url}}
    run_release(spec_from_dict(raw), progress=False)
    auditor = connect(server.url_for(dbname).replace("postgres@", "auditor@"))
    try:
        assert auditor.query("SELECT COUNT(*) AS n FROM published.adult_small")["n"][0] > 2000
    finally:
        auditor.close()
    admin = connect(url)
    admin.execute("DELETE FROM public.adult WHERE id % 97 = 0")  # a change, so the rerun publishes v2
    admin.close()
    raw["access"]["roles"] = ["analyst"]
    out = run_release(spec_from_dict(raw), progress=False)
    assert out.run.version == 2 and out.run.solution["access"]["revoked_select"] == ["auditor"]
    for role, allowed in (("analyst", True), ("auditor", False)):
        reader = connect(server.url_for(dbname).replace("postgres@", f"{role}@"))
        try:
            if allowed:
                assert reader.query("SELECT COUNT(*) AS n FROM published.adult_small")["n"][0] > 2000
            else:
                with pytest.raises(ConnectorError, match="permission denied"):
                    reader.query("SELECT COUNT(*) AS n FROM published.adult_small")
        finally:
            reader.close()


def test_missing_role_and_long_names_are_refused_before_any_write(warehouse):
    """Findings 16 and 14: a missing role failed at GRANT after the search; a 62-byte output name
    made __v1 and __v2 collide (PostgreSQL truncates identifiers at 63 bytes)."""
    from ppdp.engine.core.spec import spec_from_dict
    from ppdp.engine.release.run import run_release
    from ppdp.errors import SpecError

    _, url, _ = warehouse
    for raw, message in (
        (_small_job(["analyst", "nobody_here"]), "access.roles names role\\(s\\) that do not exist: nobody_here"),
        (_small_job(["analyst"], name="x" * 62), "63"),
    ):
        raw["source"]["database"] = url
        with pytest.raises(SpecError, match=message):
            run_release(spec_from_dict(raw), progress=False)
    con = connect(url)
    try:
        assert con.query("SELECT COUNT(*) AS n FROM information_schema.schemata WHERE schema_name IN ('_ppdp', 'published')")["n"][0] == 0
    finally:
        con.close()
