"""The privacy unit: the person a row is about (docs/design/person_unit.md).

``[source] person = "column"`` names it; without it the unit is the key (one row per person).
With it, every count the models, the search, the verification and the risk make is a count of
distinct persons. The implemented case is the one where the quasi-identifiers are constant per
person (age, sex, ZIP): then each person falls into exactly one class at every generalization,
so the count of persons per class is additive under roll-up and the search runs unchanged on
the person-level relation (one row per person); suppression of a (QID, SA) combination removes
whole persons, all their rows. A person whose rows contradict each other on a QID is refused
before any write (the spec declares the QIDs constant by declaring them QIDs of a person
release); so is a person with several sensitive values under a model that reads them.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from ppdp.connectors.base import Connector
from ppdp.engine.core.spec import ReleaseSpec
from ppdp.errors import DataError
from ppdp.sql import person as SP
from ppdp.sql import queries as Q

ROW_UNIT_ASSUMED = "row = person assumed"


def unit_label(person: str | None) -> str:
    """What a count counts, as every output says it: the person column, or the row assumption."""
    return f"person ({person})" if person else ROW_UNIT_ASSUMED


@dataclass(frozen=True)
class PersonCheck:
    """What the person column's check found in the source (counts only)."""

    persons: int
    varying_sensitive: int  # persons whose rows differ on the sensitive attributes


def check_person_column(spec: ReleaseSpec, con: Connector, source: Q.Source) -> PersonCheck:
    """Refuse (DataError, one line, before any write) a person column with NULLs or a person
    whose rows differ on a quasi-identifier; return the counts."""
    person = spec.person_column
    constant = [q for q in spec.qid_columns if q not in spec.person_varying]
    row = con.query(SP.person_check_query(source, person, constant, list(spec.sensitive))).row(0, named=True)
    if int(row["rows_null"] or 0):
        raise DataError(f"The person column {person!r} is NULL in {int(row['rows_null'])} row(s). "
                        "Hint: every row must name its person (source.person).")
    if int(row["contradicting"] or 0):
        raise DataError(f"{int(row['contradicting'])} person(s) have rows that differ on the quasi-identifiers "
                        f"({', '.join(constant)}), which a person release takes as constant per person. "
                        "Hint: fix those rows, or list a QID that may differ in source.person_varying.")
    return PersonCheck(int(row["persons"]), int(row["varying_sensitive"] or 0))


def person_source(spec: ReleaseSpec, source: Q.Source) -> Q.Source:
    """The person-level relation (one row per person) the search reads, as a Source over ``source``."""
    d = source.dialect
    return Q.Source(None, None, SP.person_level_query(source, spec.person_column, spec.qid_columns,
                                                      list(spec.sensitive), d), d)


def failing_persons(pairs: pl.DataFrame, k: int) -> list[str]:
    """The persons of ``pairs`` (sig_now, person) whose signature is shared by fewer than k persons."""
    if pairs.height == 0:
        return []
    sigs = pairs.group_by("person").agg(pl.col("sig_now").unique().sort().str.join("|").alias("signature"))
    sizes = sigs.group_by("signature").agg(pl.len().alias("n"))
    small = sizes.filter(pl.col("n") < k)["signature"].to_list()
    return sorted(sigs.filter(pl.col("signature").is_in(small))["person"].to_list())


def failing_signatures(pairs: pl.DataFrame, k: int) -> tuple[list[str], int, int]:
    """The signature rule over history classes (docs/design/person_unit.md): ``pairs`` holds one
    row per (sig_now, person) -- a person has a row in that history class. A person's signature
    is the set of its history classes; every signature must be shared by >= k persons. Returns
    the history classes of the persons whose signature is shared by fewer (what must be held
    back), the number of such persons, and the smallest signature group (0 when none)."""
    if pairs.height == 0:
        return [], 0, 0
    sigs = (pairs.group_by("person").agg(pl.col("sig_now").unique().sort().str.join("|").alias("signature")))
    sizes = sigs.group_by("signature").agg(pl.len().alias("n"))
    small = sizes.filter(pl.col("n") < k)["signature"].to_list()
    failing = sigs.filter(pl.col("signature").is_in(small))
    classes = sorted(set(pairs.filter(pl.col("person").is_in(failing["person"].to_list()))["sig_now"].to_list()))
    smallest = sizes["n"].min()
    return classes, failing.height, int(smallest) if isinstance(smallest, int) else 0
