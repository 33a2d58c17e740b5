"""The published version an analysis reads, and the source it was made from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ppdp.connectors.base import Connector
from ppdp.engine.core import catalog
from ppdp.errors import SpecError
from ppdp.sql.queries import Source
from ppdp.sql.relations import ReleaseRelation


@dataclass(frozen=True)
class PublishedVersion:
    """Version ``version`` of release ``release`` (its ``_ppdp`` identity), its quoted table, the
    columns it publishes and the spec it was published with."""

    release: str
    version: int
    table: str
    columns: tuple[str, ...]
    spec: dict[str, Any]

    @property
    def qids(self) -> tuple[str, ...]:
        return tuple(q["column"] for q in self.spec.get("quasi_identifiers", []))

    @property
    def method(self) -> str:
        return str((self.spec.get("method") or {}).get("name", "generalization"))

    def source(self, con: Connector) -> Source:
        """The source relation (aliased ``src`` by Source.sql())."""
        s = self.spec.get("source", {})
        if s.get("table") is None and s.get("query") is None:
            raise SpecError(f"the spec of {self.release} names no source table or query (a file source is not stored).")
        return Source(s.get("schema"), s.get("table"), s.get("query"), con.dialect)

    def released(self, column: str) -> str | tuple[str, str] | None:
        """How this version publishes ``column``: by name, as its (min, max) bound columns (a
        heterogeneous release's numeric QID), or not at all (None)."""
        if column in self.columns:
            return column
        if f"{column}_min" in self.columns and f"{column}_max" in self.columns:
            return (f"{column}_min", f"{column}_max")
        return None

    @property
    def key(self) -> str:
        key = self.spec.get("source", {}).get("key")
        if not key:
            raise SpecError(f"{self.release} has no source key: its records cannot be matched to the source's.")
        return str(key)


def published_version(con: Connector, release: str, version: int | None = None) -> PublishedVersion:
    """The latest published version of ``release`` (or version ``version``); SpecError when there
    is none."""
    rid = catalog.resolve_release(con, release)
    runs = catalog.published_runs(con, rid)
    if not runs:
        raise SpecError(f"release {release!r} has no published version.")
    run = runs[-1] if version is None else next((r for r in runs if r.version == version), None)
    if run is None:
        raise SpecError(f"release {release!r} has no published version {version}; published: {[r.version for r in runs]}.")
    out = run.spec.get("output", {})
    rel = ReleaseRelation(out.get("schema", "published"), out["name"], con.dialect)
    cols = con.relation_columns(rel.schema, rel.version_name(run.published_version)) or []
    return PublishedVersion(release=rid, version=run.published_version, table=rel.version_table(run.published_version),
                            columns=tuple(c for c, _ in cols), spec=run.spec)
