"""Reader access to a published view (a role removed from ``[access] roles`` must not keep
SELECT on the view). ``apply_access`` makes the grants exactly the listed roles; the lead's
release stages call ``missing_roles`` before the search and ``apply_access`` after the switch."""

from __future__ import annotations

from typing import Any

from ppdp.connectors.base import ROLES, Connector
from ppdp.errors import SpecError
from ppdp.sql import access as A


def missing_roles(con: Connector, roles: tuple[str, ...] | list[str]) -> list[str]:
    """The listed roles that do not exist in the database (in the order given)."""
    if not roles:
        return []
    if ROLES not in con.capabilities:
        raise SpecError(f"access.roles needs a database with roles; {con.dialect} has none. Hint: share with 'ppdp export'.")
    existing = set(con.query(A.existing_roles_query())["role"].to_list())
    return [r for r in roles if r not in existing]


def apply_access(con: Connector, schema: str, view: str, roles: tuple[str, ...]) -> dict[str, Any]:
    """Grant USAGE on ``schema`` and SELECT on ``view`` to exactly ``roles``: SELECT is revoked
    from every other grantee except the view's owner, superusers and the connecting role; USAGE
    is revoked only from roles ppdp granted it to that hold no ppdp-granted view in the schema
    any more. Returns what changed. Runs in the caller's transaction, if any."""
    roles = tuple(dict.fromkeys(roles))
    if ROLES not in con.capabilities:
        if roles:
            raise SpecError(f"access.roles needs a database with roles; {con.dialect} has none. Hint: share with 'ppdp export'.")
        return {"granted": [], "added": [], "revoked_select": [], "revoked_usage": []}
    missing = missing_roles(con, roles)
    if missing:
        raise SpecError(f"access.roles names role(s) that do not exist: {', '.join(missing)}. Hint: CREATE ROLE them or fix [access] roles.")
    d = con.dialect
    for stmt in A.grants_ddl(d):
        con.execute(stmt)
    recorded = con.query(A.recorded_roles_query(d), [schema, view])["role"].to_list()
    holders = con.query(A.select_holders_query(), [schema, view])
    untouchable = {g for g, keep in holders.iter_rows() if keep}
    revoke = sorted((set(holders["grantee"].to_list()) | set(recorded)) - set(roles) - untouchable)
    for role in revoke:
        con.execute(A.revoke_select(schema, view, role, d))
    for role in roles:
        con.execute(A.grant_usage(schema, role, d))
        con.execute(A.grant_select(schema, view, role, d))
    con.execute(A.forget_grants_statement(d), [schema, view])
    for role in roles:
        con.execute(A.record_grant_statement(d), [schema, view, role])
    still = set(con.query(A.roles_with_views_in_schema_query(d), [schema])["role"].to_list())
    usage = sorted(r for r in set(recorded) - set(roles) if r not in still and r not in untouchable)
    for role in usage:
        con.execute(A.revoke_usage(schema, role, d))
    added = [r for r in roles if r not in set(recorded)]  # what this call changed, with the revokes
    return {"granted": list(roles), "added": added, "revoked_select": revoke, "revoked_usage": usage}
