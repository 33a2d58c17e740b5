"""The frozen results that stages hand each other (one type per stage that has a result).

A stage returns one of these and never changes one it was given; the orchestrator
(engine/release/run.py) passes them on explicitly. They live here, below every stage module, so that
a stage, the method interface (stages/method.py) and the methods can all name them without
importing each other. The release method's own result, ``ReleasePlan``, is in stages/method.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from ppdp.engine.core import hierarchy as hier
from ppdp.engine.core.catalog import RunRecord
from ppdp.engine.core.encoding import EncodedTable
from ppdp.engine.core.spec import ReleaseSpec
from ppdp.engine.privacy import PrivacyModel
from ppdp.sql import queries as Q


@dataclass(frozen=True, eq=False)
class Prepared:
    """validate: everything read from the database and validated, before any write."""

    spec: ReleaseSpec
    source: Q.Source
    columns: list[str]  # source columns in order
    released_columns: list[str]  # what the release keeps, in source order
    hierarchies: list[hier.Hierarchy]
    table: EncodedTable
    models: list[PrivacyModel]
    source_rows: int
    distribution: pl.DataFrame | None = None  # t-closeness's Q: sa_key, sa_value (JSON), q
    # the person unit (engine/core/person.py): the person-level relation ``table`` was read from,
    # and its number of persons; None: one row per person
    persons: Q.Source | None = None
    source_persons: int | None = None
    # the source columns' SQL types as the database describes them (none for a source.query's):
    # the typed text of the row hashes and the fingerprint (sql/queries.py row_text_expr)
    types: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RunKey:
    """identify: what this run's input is (the source's fingerprint and the run key) and the run
    that published the release's current version, if any. The orchestrator puts it into the run's
    context (``RunContext.key``) for every later stage."""

    fingerprint: str = ""
    run_key: str = ""
    previous: RunRecord | None = None

    @property
    def unchanged(self) -> bool:
        """Whether the current version was published from exactly this input (the run is skipped)."""
        return self.previous is not None and self.previous.run_key == self.run_key


@dataclass(frozen=True)
class Candidate:
    """materialize: the candidate rows of the new version, written as its version table."""

    relation: str  # quoted version table with ppdp_row_id + released columns
    rows: int
    columns: tuple[str, ...]
    changes: dict[str, int]  # inserted / deleted / updated source rows since the last release


@dataclass(frozen=True)
class HistoryOutcome:
    """history: which rows were held back and what the check found (the run record's cross_version)."""

    reverts: str | None  # quoted private table (row_id, action) or None
    withheld: int = 0  # candidate rows left out
    carried: int = 0  # rows of the previous version added (their record left the source)
    record: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Published:
    """publish: the version table as it will be verified and shown, and its delta."""

    table: str  # quoted version table
    rows: int
    delta: str  # "written", "first version", or why not
