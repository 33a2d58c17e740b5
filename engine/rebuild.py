"""``ppdp sql``: read a release's current version from the catalog and render the script that
rebuilds it elsewhere (the SQL itself is built in sql/dialects.py from plain values)."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from connectors.base import Connector
from engine import catalog
from engine.errors import SpecError
from engine.spec import spec_from_dict
from sql import queries as Q
from sql.dialects import DIALECTS, RebuildData, render_script
from sql.quoting import quote_table


def rebuild_data(con: Connector, name: str) -> RebuildData:
    """Everything the rebuild script of ``name``'s current version needs, read from ``con``."""
    run = catalog.latest_success(con, name) if catalog.has_catalog(con) else None
    if run is None:
        raise SpecError(f"No published release named {name!r} in {con.url}. Hint: 'ppdp runs' lists the releases.")
    spec = spec_from_dict(run.spec)
    version = int(run.version)
    private = lambda t: quote_table(Q.PRIVATE_SCHEMA, t, con.dialect)  # noqa: E731
    hier = con.query(f"SELECT release, version, attribute, level, leaf, value, leaf_count FROM {private('hierarchies')} "
                     "WHERE release = ? AND version = ? ORDER BY attribute, level, leaf", [name, version])
    sup = con.query(f"SELECT release, version, key FROM {private('suppressed')} WHERE release = ? AND version = ? ORDER BY key", [name, version])
    rids = con.query(f"SELECT release, key, row_id FROM {private('row_ids')} WHERE release = ? ORDER BY key", [name])
    cols = con.relation_columns(spec.output_schema, f"{name}__v{version}") or []
    return RebuildData(
        name=name, version=version, output_schema=spec.output_schema, source_schema=spec.schema, source_table=spec.table,
        source_query=spec.query, source_dialect=con.dialect, key=spec.key,
        columns=tuple(c for c, _ in cols if c != Q.ROW_ID), levels={q: int(g) for q, g in run.solution["levels"].items()},
        hierarchies=tuple(hier.rows()), suppressed=tuple(sup.rows()), row_ids=tuple(rids.rows()),
        query_tables=_query_tables(con, spec.query) if spec.query else {},
    )


def _query_tables(con: Connector, query: str) -> dict[str, dict[str, dict[str, str]]]:
    """{schema: {table: {column: type}}} of the tables ``query`` reads that exist in ``con``."""
    default = getattr(con, "default_schema", None)
    out: dict[str, dict[str, dict[str, str]]] = {}
    for t in sqlglot.parse_one(query, read=con.dialect).find_all(exp.Table):
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
    return render_script(rebuild_data(con, name), dialect)
