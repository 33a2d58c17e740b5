"""Where a release's population is (delta-presence, k-map: ``Requirements.population``), for the
stages that read it: validate (its histogram, before the search) and verify (its classes of a
published version, recounted in SQL)."""

from __future__ import annotations

from ppdp.engine.core.spec import ReleaseSpec
from ppdp.engine.privacy import PrivacyModel
from ppdp.sql import queries as Q
from ppdp.sql import verify as V
from ppdp.sql.dialect import Dialect


def population_source(spec: ReleaseSpec, table: str | None, dialect: Dialect, default_schema: str | None = None) -> Q.Source:
    """The population relation: the source itself (``table`` None; before any research subset)
    or the named "schema.table"."""
    if table is None:
        return Q.Source(spec.schema, spec.table, spec.query, dialect)
    schema, _, name = table.rpartition(".")
    return Q.Source(schema or default_schema, name, None, dialect)


def population_classes(spec: ReleaseSpec, model: PrivacyModel, release: str, version: int,
                       levels: dict[str, int] | None, dialect: Dialect) -> str | None:
    """The population's classes of version ``version`` as a FROM-able subquery, or None when the
    version has no levels (a method that does not generalize by hierarchy levels)."""
    if levels is None:
        return None
    source = population_source(spec, model.population_table(), dialect)
    return V.population_classes(source.sql(), release, version, levels, spec.qid_columns, dialect)
