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


def classification_rows(source: str, release: str, version_table: str, key: str, features: Sequence[str],
                        released: Sequence[str | None], target: str, d: Dialect) -> str:
    """One row per source record in key order: ``o<i>`` the source's value of feature i as text,
    ``r<i>`` the version's value of it (NULL when the record is suppressed or ``released[i]`` is
    None, the version not publishing it), ``label`` the source's target as text and
    ``suppressed`` whether the version leaves the record out. ``source`` is FROM-clause text
    aliased ``src`` (Source.sql())."""
    rid = quote_ident(ROW_ID, d)
    cols = [f"{text(f, 'src', d)} AS o{i}" for i, f in enumerate(features)]
    cols += [f"{text(r, 'v', d)} AS r{i}" if r is not None else f"CAST(NULL AS {d.text_type}) AS r{i}"
             for i, r in enumerate(released)]
    cols += [f"{text(target, 'src', d)} AS label", f"CASE WHEN v.{rid} IS NULL THEN 1 ELSE 0 END AS suppressed"]
    return (f"SELECT {', '.join(cols)} FROM {source} "
            f"LEFT JOIN {private('row_ids', d)} AS i ON i.release = {quote_literal(release, d)} "
            f"AND i.key = {text(key, 'src', d)} "
            f"LEFT JOIN {version_table} AS v ON v.{rid} = i.row_id "
            f"ORDER BY src.{quote_ident(key, d)}")
