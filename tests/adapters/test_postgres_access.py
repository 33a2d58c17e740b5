"""A role removed from ``[access] roles`` must not keep SELECT on the view. apply_access makes
the grants exactly the listed roles; missing roles are a clear error before anything changes."""

from __future__ import annotations

import uuid

import pytest

from ppdp.connectors import connect
from ppdp.engine.release.access import apply_access, missing_roles
from ppdp.errors import ConnectorError, SpecError

pytestmark = pytest.mark.postgres


@pytest.fixture
def db(postgres_database):
    tag = uuid.uuid4().hex[:8]
    a, b, c = f"reader_a_{tag}", f"reader_b_{tag}", f"other_{tag}"
    con = connect(postgres_database)
    for r in (a, b, c):
        con.execute(f'CREATE ROLE "{r}"')
    con.execute("CREATE SCHEMA published")
    con.execute("CREATE TABLE published.adult__v1 AS SELECT 1 AS x")
    con.execute("CREATE VIEW published.adult AS SELECT * FROM published.adult__v1")
    con.execute("CREATE VIEW published.other AS SELECT * FROM published.adult__v1")
    try:
        yield con, a, b, c
    finally:
        con.execute("RESET ROLE")
        for r in (a, b, c):
            con.execute(f'DROP OWNED BY "{r}"')
            con.execute(f'DROP ROLE "{r}"')
        con.close()


def can_read(con, role: str, view: str = "adult") -> bool:
    con.execute(f'SET ROLE "{role}"')
    try:
        con.query(f'SELECT x FROM published."{view}"')
        return True
    except ConnectorError as exc:
        assert "permission denied" in str(exc)
        return False
    finally:
        con.execute("RESET ROLE")


def has_usage(con, role: str) -> bool:
    return bool(con.query("SELECT has_schema_privilege(?, 'published', 'USAGE') AS u", [role])["u"][0])


def test_removed_role_loses_select_and_usage(db):
    con, a, b, c = db
    assert apply_access(con, "published", "adult", (a, b))["granted"] == [a, b]
    assert can_read(con, a) and can_read(con, b)
    out = apply_access(con, "published", "adult", (a,))  # the rerun with b removed
    assert can_read(con, a) and not can_read(con, b)
    assert out["revoked_select"] == [b] and out["revoked_usage"] == [b]
    assert has_usage(con, a) and not has_usage(con, b)


def test_select_granted_by_hand_is_revoked_but_usage_granted_by_hand_is_kept(db):
    con, a, _, c = db
    con.execute(f'GRANT USAGE ON SCHEMA published TO "{c}"')
    con.execute(f'GRANT SELECT ON published.adult TO "{c}"')
    con.execute(f'GRANT SELECT ON published.other TO "{c}"')
    out = apply_access(con, "published", "adult", (a,))
    assert not can_read(con, c) and can_read(con, c, "other")  # only the release's view is ppdp's
    assert out["revoked_select"] == [c] and out["revoked_usage"] == [] and has_usage(con, c)


def test_usage_stays_while_the_role_holds_another_ppdp_view(db):
    con, a, _, _ = db
    apply_access(con, "published", "adult", (a,))
    apply_access(con, "published", "other", (a,))
    out = apply_access(con, "published", "adult", ())
    assert not can_read(con, a) and can_read(con, a, "other") and out["revoked_usage"] == []


def test_missing_role_is_a_clear_error(db):
    con, a, _, _ = db
    assert missing_roles(con, (a, "no_such_role_x")) == ["no_such_role_x"]
    with pytest.raises(SpecError, match="role\\(s\\) that do not exist: no_such_role_x") as info:
        apply_access(con, "published", "adult", (a, "no_such_role_x"))
    assert "\n" not in str(info.value) and not can_read(con, a)  # nothing granted


def test_duckdb_has_no_roles(tmp_path):
    con = connect(f"duckdb://{tmp_path / 'x.duckdb'}")
    try:
        with pytest.raises(SpecError, match="needs a database with roles"):
            missing_roles(con, ("a",))
        assert apply_access(con, "main", "v", ()) == {"granted": [], "added": [], "revoked_select": [], "revoked_usage": []}
    finally:
        con.close()
