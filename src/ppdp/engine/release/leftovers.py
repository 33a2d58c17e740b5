"""What a failed run leaves behind where the database cannot roll it back (Spark).

With transactional DDL a failed run's writes vanish with its transaction. Without it (a
connector that does not declare ``transactional_ddl``) they stay: the unverified version table
``<name>__v<N>`` and the private rows of version N (hierarchies, suppressed keys, Q, the
methods' state). N is never a published version, and the next run reuses it (the last succeeded
version plus one): its version table is dropped and written again, but private rows would be
appended to the failed run's, and a hierarchy leaf stored twice would duplicate released rows.
So before a run writes version N, every private row of versions >= N of its release goes.
"""

from __future__ import annotations

from ppdp.connectors.base import TRANSACTIONAL_DDL, Connector
from ppdp.engine.methods.base import METHODS
from ppdp.sql import catalog as C


def discard_unpublished_versions(con: Connector, release: str, version: int) -> list[str]:
    """Delete ``release``'s private rows of versions >= ``version`` (none was published: the
    caller passes the next version number); return the tables that had some (a check first:
    a DELETE on Spark rewrites the whole table, a COUNT reads it). Nothing to do
    when the connector rolls failed runs back."""
    if TRANSACTIONAL_DDL in con.capabilities:
        return []
    cleaned = []
    # every method's tables, not only this run's: a failed run may have used another method
    tables = dict.fromkeys([*C.VERSIONED_TABLES, *(t for name in METHODS for t in METHODS.get(name).private_tables)])
    for table in tables:
        if con.relation_columns(C.PRIVATE_SCHEMA, table) is None:
            continue
        if not int(con.query(C.count_unpublished_versions(table, con.dialect), [release, version])["n"][0]):
            continue
        con.execute(C.delete_unpublished_versions(table, con.dialect), [release, version])
        cleaned.append(table)
    return cleaned
