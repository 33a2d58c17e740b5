"""``ppdp export``: copy one published schema, and nothing else, into a new DuckDB file.

Moved here from engine/release.py (brief H3, finding 4) so that the CLI does not need the
release pipeline, and so that the private schema can never be exported.
"""

from __future__ import annotations

from pathlib import Path

from ppdp.connectors.base import Connector
from ppdp.engine.errors import SpecError
from ppdp.engine.spec import is_private_schema
from ppdp.sql import export as X


def check_export_target(con: Connector, schema: str, out: str) -> None:
    """Refuse, before anything is created, an export that cannot or must not happen."""
    if is_private_schema(schema):
        raise SpecError(f"Schema {schema!r} is ppdp's private state (_ppdp, any letter case) and is never exported. "
                        "Hint: export the published schema, e.g. --schema published.")
    if con.dialect != "duckdb":
        raise SpecError("ppdp export copies from a DuckDB database; on a server, grant access to the published schema instead.")
    target = Path(out)
    if target.exists():
        raise SpecError(f"{out!r} already exists. Hint: choose a new file name; export never overwrites.")
    if not target.parent.is_dir():
        raise SpecError(f"Directory {str(target.parent)!r} of the export file does not exist. Hint: create it first or choose another path.")


def export_schema(con: Connector, schema: str, out: str) -> list[str]:
    """Copy the tables and views of ``schema`` (only) into a new DuckDB file ``out``.

    Views are recreated from DuckDB's stored definition over the copied tables; a view that
    reads anything outside ``schema`` cannot be bound there, and the export is refused (the
    file is removed) rather than copying more than the published relations.
    """
    import duckdb

    check_export_target(con, schema, out)
    rel = con.query(X.schema_relations_query(), [schema])
    if rel.height == 0:
        raise SpecError(f"Schema {schema!r} has nothing to export. Hint: 'ppdp runs --db ...' lists the published releases.")
    views = con.query(X.schema_views_query(), [schema])
    target = duckdb.connect(out)
    copied = []
    try:
        target.execute(X.create_schema(schema))
        for name, kind in rel.iter_rows():
            if kind == "BASE TABLE":
                frame = con.query(X.select_all(schema, name))
                target.register(X.EXPORT_FRAME, frame.to_arrow())
                target.execute(X.create_table_from_frame(schema, name))
                target.unregister(X.EXPORT_FRAME)
                copied.append(f"{schema}.{name}")
        for name, sql in views.iter_rows():
            try:
                target.execute(sql)  # DuckDB's own stored definition of the view
            except duckdb.Error:
                raise SpecError(f"View {schema}.{name} reads relations outside schema {schema!r}; export copies only that schema's "
                                "published relations, so nothing was exported. Hint: drop or move that view.") from None
            copied.append(f"{schema}.{name} (view)")
    except BaseException:
        target.close()
        Path(out).unlink(missing_ok=True)
        raise
    target.close()
    return copied
