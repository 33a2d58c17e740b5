"""Every source column must have a declared role: nothing is released by default (a column added
to the source later is refused, never published raw).

Roles: the key, identifiers, quasi-identifiers, sensitive attributes, ``drop`` (left out) and
``keep`` (released as they are). A column added to the source later is therefore refused until
someone decides what it is, instead of being published raw.
"""

from __future__ import annotations

from ppdp.engine.core.spec import ReleaseSpec
from ppdp.errors import DataError, did_you_mean


def declared_columns(spec: ReleaseSpec) -> list[str]:
    """Every column the spec gives a role, in role order."""
    person = [spec.person] if spec.person is not None and spec.person not in (spec.key, *spec.identifiers, *spec.drop) else []
    return [spec.key, *person, *spec.identifiers, *spec.qid_columns, *spec.sensitive, *spec.drop, *spec.keep]


def undeclared_columns(spec: ReleaseSpec, source_columns: list[str]) -> list[str]:
    """Source columns (in source order) that the spec gives no role."""
    declared = set(declared_columns(spec))
    return [c for c in source_columns if c not in declared]


def check_declared(spec: ReleaseSpec, source_columns: list[str]) -> None:
    """Raise DataError unless every source column has a role and every kept column exists."""
    present = set(source_columns)
    for name in spec.keep:
        if name not in present:
            hint = did_you_mean(name, source_columns) or " Hint: remove it from source.keep."
            raise DataError(f"The kept column {name!r} (source.keep) is not in the source.{hint}")
    missing = undeclared_columns(spec, source_columns)
    if missing:
        names = ", ".join(repr(c) for c in missing)
        listing = ", ".join('"' + c.replace("\\", "\\\\").replace('"', '\\"') + '"' for c in missing)
        raise DataError(f"{len(missing)} source column(s) have no role in the spec: {names}. Nothing is released unless declared. "
                        f"Hint: add them to [source] keep = [{listing}] to release them as they are, or drop = [...] to leave them out.")


def published_qid_columns(qids: list[str], columns: list[str] | tuple[str, ...]) -> list[str]:
    """The columns of a version table that carry the QIDs: each QID itself, or the ``<q>_min`` and
    ``<q>_max`` bounds a heterogeneous release publishes a numeric QID as (sql/heterogeneous.py). An
    attacker matches on these, so risk is measured on them."""
    out: list[str] = []
    for q in qids:
        if q in columns:
            out.append(q)
        elif f"{q}_min" in columns and f"{q}_max" in columns:
            out += [f"{q}_min", f"{q}_max"]
    return out
