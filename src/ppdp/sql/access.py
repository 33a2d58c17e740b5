"""SQL of reader access (``[access] roles``): grants, revokes and ppdp's record of its grants.

ppdp records every SELECT it grants in ``_ppdp.grants``: USAGE on a schema is revoked only from
roles ppdp itself gave it (another tool or an administrator may have granted it for other
reasons), and only once they hold no ppdp-granted view in that schema any more. Identifiers go
through quote_ident/quote_table; values are bound as ``?``. PostgreSQL catalogs (roles exist only
on connectors declaring the "roles" capability).
"""

from __future__ import annotations

from ppdp.sql.dialect import Dialect
from ppdp.sql.queries import PRIVATE_SCHEMA
from ppdp.sql.quoting import quote_ident, quote_table

GRANTS_TABLE = "grants"


def grants_ddl(d: Dialect) -> list[str]:
    return [
        f"CREATE SCHEMA IF NOT EXISTS {quote_ident(PRIVATE_SCHEMA, d)}",
        f"CREATE TABLE IF NOT EXISTS {quote_table(PRIVATE_SCHEMA, GRANTS_TABLE, d)} ("
        "schema_name VARCHAR NOT NULL, view_name VARCHAR NOT NULL, role VARCHAR NOT NULL, "
        "PRIMARY KEY (schema_name, view_name, role))",
    ]


def recorded_roles_query(d: Dialect) -> str:
    """Roles ppdp granted SELECT on a view (params: schema, view)."""
    return f"SELECT role FROM {quote_table(PRIVATE_SCHEMA, GRANTS_TABLE, d)} WHERE schema_name = ? AND view_name = ? ORDER BY role"


def roles_with_views_in_schema_query(d: Dialect) -> str:
    """Roles holding a ppdp-granted view in a schema (param: schema)."""
    return f"SELECT DISTINCT role FROM {quote_table(PRIVATE_SCHEMA, GRANTS_TABLE, d)} WHERE schema_name = ?"


def forget_grants_statement(d: Dialect) -> str:
    return f"DELETE FROM {quote_table(PRIVATE_SCHEMA, GRANTS_TABLE, d)} WHERE schema_name = ? AND view_name = ?"


def record_grant_statement(d: Dialect) -> str:
    return f"INSERT INTO {quote_table(PRIVATE_SCHEMA, GRANTS_TABLE, d)} (schema_name, view_name, role) VALUES (?, ?, ?)"


def select_holders_query() -> str:
    """Grantees of SELECT on a relation, with whether each may be left alone: the owner, superusers
    and the connecting role (params: schema, view)."""
    return (
        "SELECT CAST(g.grantee AS VARCHAR) AS grantee, "
        "(g.grantee = CAST(current_user AS VARCHAR) OR g.grantee = CAST(c.relowner::regrole AS VARCHAR) "
        "OR COALESCE(r.rolsuper, FALSE)) AS keep "
        "FROM information_schema.role_table_grants AS g "
        "JOIN pg_catalog.pg_namespace AS n ON n.nspname = g.table_schema "
        "JOIN pg_catalog.pg_class AS c ON c.relnamespace = n.oid AND c.relname = g.table_name "
        "LEFT JOIN pg_catalog.pg_roles AS r ON r.rolname = g.grantee "
        "WHERE g.table_schema = ? AND g.table_name = ? AND g.privilege_type = 'SELECT' "
        "GROUP BY 1, 2 ORDER BY 1"
    )


def existing_roles_query() -> str:
    return "SELECT CAST(rolname AS VARCHAR) AS role FROM pg_catalog.pg_roles"


def _grantee(role: str, d: Dialect) -> str:
    return "PUBLIC" if role == "PUBLIC" else quote_ident(role, d)


def grant_usage(schema: str, role: str, d: Dialect) -> str:
    return f"GRANT USAGE ON SCHEMA {quote_ident(schema, d)} TO {quote_ident(role, d)}"


def grant_select(schema: str, view: str, role: str, d: Dialect) -> str:
    return f"GRANT SELECT ON {quote_table(schema, view, d)} TO {quote_ident(role, d)}"


def revoke_select(schema: str, view: str, role: str, d: Dialect) -> str:
    return f"REVOKE SELECT ON {quote_table(schema, view, d)} FROM {_grantee(role, d)}"


def revoke_usage(schema: str, role: str, d: Dialect) -> str:
    return f"REVOKE USAGE ON SCHEMA {quote_ident(schema, d)} FROM {quote_ident(role, d)}"
