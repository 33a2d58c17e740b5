"""``ppdp sql``: read a release's current version from the catalog and render the script that
rebuilds it elsewhere (the SQL itself is built in sql/dialects.py from plain values).

What a version's rows are derived from is the release method's business: each method's
``rebuild_rows`` reads its own private state and names the SELECT over it, or refuses in one
line when its rows cannot be derived from the source and stored state. The row ids, the
columns and the held-back check are common to every method."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from ppdp.connectors.base import Connector
from ppdp.engine.core import catalog
from ppdp.engine.core.spec import spec_from_dict
from ppdp.engine.methods import method_of
from ppdp.engine.privacy import build_model
from ppdp.engine.release.stages.validate import research_of
from ppdp.errors import SpecError
from ppdp.sql import catalog as C
from ppdp.sql import queries as Q
from ppdp.sql.dialect import dialect_named
from ppdp.sql.dialects import DIALECTS, RebuildData, render_script, row_ids_table
from ppdp.sql.relations import ReleaseRelation


def rebuild_data(con: Connector, name: str) -> RebuildData:
    """Everything the rebuild script of ``name``'s current version needs, read from ``con``."""
    release = catalog.resolve_release(con, name)
    run = catalog.latest_success(con, release)
    if run is None:
        raise SpecError(f"No published release named {name!r} in {con.url}. Hint: 'ppdp runs' lists the releases.")
    spec = spec_from_dict(run.spec)
    version = int(run.version or 0)  # a published run has its version
    held = (run.cross_version or {}).get("held_back", {})
    standing = int(held.get("deletes_delayed", 0)) + int(held.get("changes_delayed", 0))
    if standing:
        raise SpecError(f"v{version} of {release} holds {standing} row(s) held back from v{version - 1} (delayed deletions or "
                        "changes, for privacy across versions) that the source no longer has, so a script that rebuilds "
                        "it from the source cannot reproduce them. Hint: copy the version table itself ('ppdp export'), "
                        "or rebuild after a later version has published those changes.")
    method_rows = method_of(spec).rebuild_rows(con, run, spec)
    rids = con.query(C.release_row_ids(con.dialect), [release])
    published = ReleaseRelation(spec.output_schema, spec.output_name, con.dialect)
    cols = con.relation_columns(spec.output_schema, published.version_name(version)) or []
    return RebuildData(
        name=spec.output_name, release=release, version=version, output_schema=spec.output_schema, source_schema=spec.schema, source_table=spec.table,
        source_query=spec.query, source_dialect=con.dialect, key=spec.key,
        columns=tuple(c for c, _ in cols if c != Q.ROW_ID), rows=method_rows.rows,
        tables=(*method_rows.tables, row_ids_table(tuple(rids.rows()))),
        query_tables=_query_tables(con, spec.query) if spec.query else {},
        research=research_of([build_model(m.name, m.param_dict()) for m in spec.models]),
    )


def _query_tables(con: Connector, query: str) -> dict[str, dict[str, dict[str, str]]]:
    """{schema: {table: {column: type}}} of the tables ``query`` reads that exist in ``con``."""
    default = getattr(con, "default_schema", None)
    out: dict[str, dict[str, dict[str, str]]] = {}
    for t in sqlglot.parse_one(query, read=con.dialect.name).find_all(exp.Table):
        schema = t.db or default
        cols = con.relation_columns(schema, t.name) if schema else None
        if cols:
            out.setdefault(t.db or "", {})[t.name] = dict(cols)
    if "" in out:  # unqualified names: sqlglot's schema then has one level less
        flat = out.pop("")
        if not out:
            return flat  # type: ignore[return-value]
        for tables in out.values():
            for k, v in flat.items():
                tables.setdefault(k, v)
    return out


def rebuild_script(con: Connector, name: str, dialect: str) -> str:
    """The SQL script, in ``dialect``, that rebuilds the current version of ``name`` elsewhere."""
    if dialect not in DIALECTS:
        raise SpecError(f"Unknown dialect {dialect!r}. Known: {', '.join(DIALECTS)}. Hint: ppdp sql --dialect postgres")
    return render_script(rebuild_data(con, name), dialect_named(dialect))
