"""Where a release may be published: never into a schema the source is read from.

Refused rather than warned about, because the published schema is the unit of sharing: ``ppdp
export`` copies it, ``[access] roles`` get USAGE on it, and a DBA's ``GRANT SELECT ON ALL TABLES IN
SCHEMA`` or a backup of "the published schema" would carry the source, keys included, beside
the release. A warning scrolls away; the fix (another ``output.schema``) costs nothing. Checked
before anything is written.
"""

from __future__ import annotations

from ppdp.connectors.base import Connector
from ppdp.engine.core.spec import ReleaseSpec
from ppdp.errors import SpecError
from ppdp.sql.inspect import query_schemas


def source_schemas(spec: ReleaseSpec, con: Connector) -> set[str]:
    """The schemas the release's source reads (a table's schema, or every table of source.query)."""
    if spec.table is not None:
        return {spec.schema or con.default_schema}
    if spec.query is not None:
        return query_schemas(spec.query, con.dialect, con.default_schema)
    return set()


def check_output_apart_from_source(spec: ReleaseSpec, con: Connector) -> None:
    """Refuse an output.schema that also holds the source (compared without letter case:
    DuckDB's schema names ignore it, and a near-miss on PostgreSQL is refused on the safe side)."""
    out = spec.output_schema.casefold()
    clash = sorted(s for s in source_schemas(spec, con) if s.casefold() == out)
    if clash:
        raise SpecError(f"output.schema {spec.output_schema!r} is the schema the source is read from ({clash[0]!r}); a published "
                        "schema is what gets shared (ppdp export, [access] roles), so it must not hold the source. "
                        "Hint: publish into a schema of its own, e.g. output.schema = \"published\".")


def may_create_database(spec: ReleaseSpec) -> bool:
    """Whether a run may create its (embedded) database: only when the source is a file that the
    database reads, so the database is merely where the release goes. A table or query source
    needs a database that exists; creating an empty one would only fail later and leave the file
    behind."""
    source = spec.raw.get("source")
    return isinstance(source, dict) and source.get("file") is not None
