"""A tampered view on the throwaway PostgreSQL (probe 37, item 7): ``ppdp verify`` fails with
exit 1 and the reason, and a rerun of the unchanged spec publishes again instead of skipping."""

from __future__ import annotations

import pytest

from ppdp.connectors import connect
from tests.adapters.test_postgres_release import adult_frame, spec_for
from tests.support.cli import assert_ok, ppdp

pytestmark = pytest.mark.postgres


def test_a_view_pointed_at_the_source_fails_verify_and_a_rerun_republishes(postgres_database, tmp_path):
    con = connect(postgres_database)
    try:
        con.write_frame("public", "adult", adult_frame().head(1000))
    finally:
        con.close()
    spec = spec_for(tmp_path / "s.toml", postgres_database, "public", qids=["age", "sex"], sensitive=[], output="rel")
    path = tmp_path / "s.toml"
    assert spec.output_name == "rel"
    assert_ok(ppdp("run", str(path), "--no-progress"))
    assert ppdp("run", str(path), "--no-progress").returncode == 99  # intact: skipped
    con = connect(postgres_database)
    try:
        con.execute('DROP VIEW "published"."rel"')
        con.execute('CREATE VIEW "published"."rel" AS SELECT * FROM "published"."rel__v1" ORDER BY ppdp_row_id OFFSET 1')
    finally:
        con.close()
    proc = ppdp("verify", "rel", "--db", postgres_database)
    assert proc.returncode == 1 and 'does not select exactly "published"."rel__v1"' in proc.stderr, proc.stderr
    rerun = ppdp("run", str(path), "--no-progress")
    assert rerun.returncode == 0 and "republished" in rerun.stdout, rerun.stderr[-2000:]
    assert "verification passed" in assert_ok(ppdp("verify", "rel", "--db", postgres_database))
