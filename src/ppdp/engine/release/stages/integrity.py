"""What analysts read is what was verified: the release's view selects exactly its current
version table, and that table holds what was published.

Each published version records its content fingerprint (its column names in order, its row
count and an order-free sum of row hashes, computed in the database: ``content``). Before a
rerun is skipped as unchanged, and whenever ``ppdp verify`` runs, ``tampered`` recomputes it for
the version table and for the view: a view pointed elsewhere (at the raw source, say), a
version table edited after publishing, or a dropped view or table is found, and the rerun
publishes again instead of saying "skipped", and verify fails (exit 1) with the reason.
"""

from __future__ import annotations

import hashlib

from ppdp.connectors.base import Connector
from ppdp.sql import queries as Q
from ppdp.sql.relations import ReleaseRelation


def content(con: Connector, schema: str, name: str) -> str | None:
    """The content fingerprint of relation ``schema.name`` (None: it does not exist)."""
    cols = con.relation_columns(schema, name)
    if cols is None:
        return None
    names = [c for c, _ in cols]
    row = con.query(Q.fingerprint_query(Q.Source(schema, name, None, con.dialect), names[0], names, dict(cols))).row(0, named=True)
    payload = "\x1f".join(names) + f"\x1e{row['n']}:{row['s']}"
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def tampered(con: Connector, schema: str, name: str, version: int, recorded: str | None) -> str | None:
    """Why the release's view or current version is not what was published, or None.
    ``recorded``: the fingerprint the version's run stored (None for a run that stored none:
    then only view against table is compared)."""
    rel = ReleaseRelation(schema, name, con.dialect)
    table = content(con, schema, rel.version_name(version))
    if table is None:
        return f"the version table {rel.version_table(version)} is missing"
    if recorded is not None and table != recorded:
        return f"the version table {rel.version_table(version)} was changed after it was published"
    view = content(con, schema, name)
    if view is None:
        return f"the view {rel.view()} is missing"
    if view != table:
        return f"the view {rel.view()} does not select exactly {rel.version_table(version)}"
    return None
