"""``ppdp export``: copy what ppdp published into one schema, and nothing else, into a new DuckDB file.

A schema may hold more than ppdp's releases (the source table with its keys, a
DBA's scratch copy), so the relations to copy come from ppdp's record of what it published
(``_ppdp.releases`` and the succeeded runs), not from the schema's catalog: each release's
published version tables ``<name>__v<N>``, its ``<name>__delta`` and its view ``<name>``, which
is recreated over the current version exactly as ppdp defines it (not from a stored definition
that might read elsewhere). The rows are read through the connector, so a release published in
PostgreSQL or Spark can be shared as a file too.
"""

from __future__ import annotations

import os
from pathlib import Path

from ppdp.connectors.base import Connector
from ppdp.engine.core import catalog
from ppdp.engine.core.spec import is_private_schema
from ppdp.errors import SpecError
from ppdp.sql import export as X
from ppdp.sql.relations import delta_name, version_name


def check_export_target(con: Connector, schema: str, out: str) -> None:
    """Refuse, before anything is created, an export that cannot or must not happen."""
    if is_private_schema(schema):
        raise SpecError(f"Schema {schema!r} is ppdp's private state (_ppdp, any letter case) and is never exported. "
                        "Hint: export the published schema, e.g. --schema published.")
    target = Path(out)
    if target.exists():
        raise SpecError(f"{out!r} already exists. Hint: choose a new file name; export never overwrites.")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise SpecError(f"Directory {str(parent)!r} of the export file does not exist. Hint: create it first or choose another path.")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise SpecError(f"Directory {str(parent)!r} of the export file is not writable. Hint: choose a directory you can write to.")


def published_relations(con: Connector, schema: str) -> dict[str, list[int]]:
    """Release name -> the versions ppdp published into ``schema`` that still exist there."""
    if not catalog.has_catalog(con):
        return {}
    out: dict[str, list[int]] = {}
    for name, version in con.query(X.published_versions_query(con.dialect), [schema]).iter_rows():
        if con.relation_columns(schema, version_name(name, int(version))) is not None:
            out.setdefault(name, []).append(int(version))
    return out


def export_schema(con: Connector, schema: str, out: str) -> list[str]:
    """Copy the relations ppdp published into ``schema`` (only those) into a new DuckDB file ``out``."""
    import duckdb

    check_export_target(con, schema, out)
    releases = published_relations(con, schema)
    if not releases:
        raise SpecError(f"Schema {schema!r} holds no release published by ppdp, so there is nothing to export. "
                        "Hint: 'ppdp runs --db ...' lists the releases and their schemas.")
    try:
        target = duckdb.connect(out)
    except duckdb.Error as exc:
        raise SpecError(f"Cannot create the export file {out!r}: {str(exc).splitlines()[0]}") from None
    copied: list[str] = []
    try:
        target.execute(X.create_schema(schema))
        for name, versions in releases.items():
            tables = [version_name(name, v) for v in versions]
            if con.relation_columns(schema, delta_name(name)) is not None:
                tables.append(delta_name(name))
            for table in tables:
                frame = con.query(X.select_all(schema, table, con.dialect))
                target.register(X.EXPORT_FRAME, frame.to_arrow())
                target.execute(X.create_table_from_frame(schema, table))
                target.unregister(X.EXPORT_FRAME)
                copied.append(f"{schema}.{table}")
            target.execute(X.create_view(schema, name, version_name(name, max(versions))))
            copied.append(f"{schema}.{name} (view)")
    except BaseException:
        target.close()
        Path(out).unlink(missing_ok=True)
        raise
    target.close()
    return copied
