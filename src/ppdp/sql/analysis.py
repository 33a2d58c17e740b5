"""SQL of the analysis view (docs/concepts/utility.md): the records a classifier is trained on,
source beside release, and the per-attribute summaries of source and release.

A version's records are matched to the source's through ppdp's private ``row_ids`` (source key ->
published ``ppdp_row_id``); a source record with no published row is suppressed in that version.
Relations arrive quoted by the caller; column names are quoted here and the release's name is an
escaped literal.
"""

from __future__ import annotations

from collections.abc import Sequence

from ppdp.sql.catalog import private
from ppdp.sql.dialect import Dialect
from ppdp.sql.queries import text
from ppdp.sql.quoting import quote_ident, quote_literal

ROW_ID = "ppdp_row_id"

# How a version publishes a column: by its name, or (a heterogeneous release's numeric QID) as
# the pair of bound columns (``<q>_min``, ``<q>_max``), read back as the text "[min, max]".
Released = str | tuple[str, str]


def released_text(released: Released, alias: str, d: Dialect) -> str:
    """A published column's value as text; a pair of bounds as ``[min, max]``."""
    if isinstance(released, str):
        return text(released, alias, d)
    lo, hi = (text(c, alias, d) for c in released)
    return f"'[' || {lo} || ', ' || {hi} || ']'"


def classification_rows(source: str, release: str, version_table: str, key: str, features: Sequence[str],
                        released: Sequence[Released | None], target: str, d: Dialect) -> str:
    """One row per source record in key order: ``o<i>`` the source's value of feature i as text,
    ``r<i>`` the version's value of it (NULL when the record is suppressed or ``released[i]`` is
    None, the version not publishing it), ``label`` the source's target as text and
    ``suppressed`` whether the version leaves the record out. ``source`` is FROM-clause text
    aliased ``src`` (Source.sql())."""
    rid = quote_ident(ROW_ID, d)
    cols = [f"{text(f, 'src', d)} AS o{i}" for i, f in enumerate(features)]
    cols += [f"{released_text(r, 'v', d)} AS r{i}" if r is not None else f"CAST(NULL AS {d.text_type}) AS r{i}"
             for i, r in enumerate(released)]
    cols += [f"{text(target, 'src', d)} AS label", f"CASE WHEN v.{rid} IS NULL THEN 1 ELSE 0 END AS suppressed"]
    return (f"SELECT {', '.join(cols)} FROM {source} "
            f"LEFT JOIN {private('row_ids', d)} AS i ON i.release = {quote_literal(release, d)} "
            f"AND i.key = {text(key, 'src', d)} "
            f"LEFT JOIN {version_table} AS v ON v.{rid} = i.row_id "
            f"ORDER BY src.{quote_ident(key, d)}")


def source_relation(source: str) -> str:
    """A source's FROM-clause text (Source.sql(), aliased ``src``) as a relation that takes an alias of its own."""
    return f"(SELECT * FROM {source})"


def value_counts(relation: str, column: Released, d: Dialect) -> str:
    """(value, n): each value of ``column`` as text (NULL a value of its own) and its count."""
    v = released_text(column, "r", d)
    return f"SELECT {v} AS value, COUNT(*) AS n FROM {relation} AS r GROUP BY {v}"


def numeric_moments(relation: str, column: str, d: Dialect) -> str:
    """(n, mean, variance, lo, hi) of a numeric column: its count of non-NULL values, mean,
    sample variance (n - 1), least and greatest value."""
    c = f"CAST(r.{quote_ident(column, d)} AS {d.double_type})"
    return (f"SELECT COUNT({c}) AS n, AVG({c}) AS mean, VAR_SAMP({c}) AS variance, MIN({c}) AS lo, MAX({c}) AS hi "
            f"FROM {relation} AS r")


def pair_counts(relation: str, first: str, second: str, d: Dialect) -> str:
    """(a, b, n): the two-way contingency table of two columns, as text."""
    a, b = text(first, "r", d), text(second, "r", d)
    return f"SELECT {a} AS a, {b} AS b, COUNT(*) AS n FROM {relation} AS r GROUP BY {a}, {b}"


def hierarchy_leaves(release: str, version: int, attribute: str, level: int, d: Dialect) -> str:
    """(leaf, value): the label each leaf of ``attribute``'s hierarchy takes at ``level`` in a version."""
    return (f"SELECT leaf, value FROM {private('hierarchies', d)} WHERE release = {quote_literal(release, d)} "
            f"AND version = {int(version)} AND attribute = {quote_literal(attribute, d)} AND level = {int(level)}")


def paired_numbers(source: str, release: str, version_table: str, key: str, columns: Sequence[str],
                   released: Sequence[Released], d: Dialect) -> str:
    """The numeric columns of each record released in a version: ``x<i>`` the source's value as a
    double, ``m<i>`` the version's as text (a number or a range), in the source's key order
    (suppressed records left out)."""
    rid = quote_ident(ROW_ID, d)
    cols = [f"CAST(src.{quote_ident(c, d)} AS {d.double_type}) AS x{i}" for i, c in enumerate(columns)]
    cols += [f"{released_text(r, 'v', d)} AS m{i}" for i, r in enumerate(released)]
    return (f"SELECT {', '.join(cols)} FROM {source} "
            f"JOIN {private('row_ids', d)} AS i ON i.release = {quote_literal(release, d)} AND i.key = {text(key, 'src', d)} "
            f"JOIN {version_table} AS v ON v.{rid} = i.row_id ORDER BY src.{quote_ident(key, d)}")
