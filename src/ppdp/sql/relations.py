"""The relations a release publishes, named in one place.

A release published as ``schema.name`` owns the view ``name`` (what readers query), one table
per version ``name__v<N>`` (the view points at the current one) and the table ``name__delta``
(the rows each version added and removed). Every module asks ``ReleaseRelation`` for these
names instead of formatting them: the plain name where a catalog is asked about a relation
(``Connector.relation_columns``), the quoted name for SQL text, a sqlglot table for expressions.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from ppdp.sql.dialect import Dialect
from ppdp.sql.errors import build_error
from ppdp.sql.quoting import quote_table, table_expr

VERSION_SEPARATOR = "__v"
DELTA_SUFFIX = "__delta"


@dataclass(frozen=True)
class ReleaseRelation:
    """The published relations of the release ``schema.name``, quoted for ``dialect``."""

    schema: str
    name: str
    dialect: Dialect

    def version_name(self, version: int | None) -> str:
        """The unquoted name of version ``version``'s table (a run record's version: None when
        the run published nothing, which names no table)."""
        if version is None:
            raise build_error(f"{self.name!r}: a run that published no version has no version table.")
        return version_name(self.name, version)

    def delta_name(self) -> str:
        """The unquoted name of the delta table."""
        return delta_name(self.name)

    def version_table(self, version: int | None) -> str:
        """Version ``version``'s table, schema-qualified and quoted."""
        return quote_table(self.schema, self.version_name(version), self.dialect)

    def delta_table(self) -> str:
        """The delta table, schema-qualified and quoted."""
        return quote_table(self.schema, self.delta_name(), self.dialect)

    def view(self) -> str:
        """The release's view, schema-qualified and quoted."""
        return quote_table(self.schema, self.name, self.dialect)

    def version_expr(self, version: int | None) -> exp.Table:
        """Version ``version``'s table as a sqlglot table (quoted when generated)."""
        return table_expr(self.schema, self.version_name(version))

    def view_expr(self) -> exp.Table:
        return table_expr(self.schema, self.name)


def version_name(name: str, version: int) -> str:
    """The unquoted name of version ``version``'s table of the release named ``name`` (where no
    dialect is at hand: a name's length, a copy into a share file)."""
    return f"{name}{VERSION_SEPARATOR}{int(version)}"


def delta_name(name: str) -> str:
    """The unquoted name of the delta table of the release named ``name``."""
    return f"{name}{DELTA_SUFFIX}"


def joint_column(qid: str, index: int) -> str:
    """The cross-version check's column of ``qid`` as published in the ``index``-th previous
    version (sql/queries.py, joint_classes_relation): a column name, not a version table."""
    return f"{qid}{VERSION_SEPARATOR}{int(index)}"
