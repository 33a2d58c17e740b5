"""SQL of the utility measures (engine/utility): what the source held and what a version shows
of each source row, aggregated in the database (DuckDB, PostgreSQL, Spark).

The one query pairs every source row with its published row through the release's stable row
ids (``_ppdp.row_ids``: source key -> ``ppdp_row_id``) and counts the rows of each combination
(input QIDs, output QIDs, suppressed). Every measure runs on that small histogram: for a
generalization it has at most as many rows as the source has distinct QID combinations.

``source`` is a ``Source`` (its FROM text aliased ``src``); ``version`` a quoted relation.
Column names are quoted here; the release name and version are bound parameters.
"""

from __future__ import annotations

from ppdp.sql.catalog import private
from ppdp.sql.dialect import Dialect
from ppdp.sql.queries import Source, text
from ppdp.sql.quoting import quote_ident

ROW_ID = "ppdp_row_id"


def paired_histogram(source: Source, key: str, version: str, inputs: list[str], outputs: list[list[str]]) -> str:
    """(i0.., o0_0.., suppressed, n): the count of source rows per input QID values (as the
    canonical text hierarchies use), published values (``outputs[j]``: the version's columns
    for QID j, e.g. ``[age]`` or ``[age_min, age_max]``) and whether the row is withheld.
    Parameters: the release's catalog name (for ``_ppdp.row_ids``)."""
    d = source.dialect
    q = lambda c: quote_ident(c, d)  # noqa: E731
    cols: list[str] = []
    group: list[str] = []
    for j, c in enumerate(inputs):
        expr = text(c, "src", dialect=d)
        cols.append(f"{expr} AS {q(f'i{j}')}")
        group.append(expr)
    for j, outs in enumerate(outputs):
        for m, c in enumerate(outs):
            expr = f"CAST(p.{q(c)} AS {d.text_type})"
            cols.append(f"{expr} AS {q(f'o{j}_{m}')}")
            group.append(expr)
    withheld = f"CASE WHEN p.{q(ROW_ID)} IS NULL THEN 1 ELSE 0 END"
    cols += [f"{withheld} AS {q('suppressed')}", f"COUNT(*) AS {q('n')}"]
    group.append(withheld)
    key_text = text(key, "src", dialect=d)
    return (f"SELECT {', '.join(cols)} FROM {source.sql()} "
            f"LEFT JOIN {private('row_ids', d)} AS rid ON rid.release = ? AND rid.key = {key_text} "
            f"LEFT JOIN {version} AS p ON CAST(p.{q(ROW_ID)} AS {d.text_type}) = rid.row_id "
            f"GROUP BY {', '.join(group)}")


def hierarchy_rows(d: Dialect) -> str:
    """A version's hierarchy rows (attribute, level, leaf, value) (params: release, version)."""
    return (f"SELECT attribute, level, leaf, value FROM {private('hierarchies', d)} "
            "WHERE release = ? AND version = ? ORDER BY attribute, level, leaf")


def withheld_histogram(source: Source, key: str, inputs: list[str]) -> str:
    """(i0.., suppressed, n): the count of source rows per input QID values and whether the
    version withheld the row (its key in ``_ppdp.suppressed``). Parameters: release, version."""
    d = source.dialect
    q = lambda c: quote_ident(c, d)  # noqa: E731
    exprs = [text(c, "src", dialect=d) for c in inputs]
    key_text = text(key, "src", dialect=d)
    withheld = "CASE WHEN sup.key IS NULL THEN 0 ELSE 1 END"
    cols = [f"{e} AS {q(f'i{j}')}" for j, e in enumerate(exprs)] + [f"{withheld} AS {q('suppressed')}", f"COUNT(*) AS {q('n')}"]
    return (f"SELECT {', '.join(cols)} FROM {source.sql()} "
            f"LEFT JOIN (SELECT DISTINCT key FROM {private('suppressed', d)} WHERE release = ? AND version = ?) AS sup "
            f"ON sup.key = {key_text} GROUP BY {', '.join([*exprs, withheld])}")


def published_classes(version: str, outputs: list[str], d: Dialect) -> str:
    """(o0.., n): the version's rows per published QID values."""
    q = lambda c: quote_ident(c, d)  # noqa: E731
    cols = [f"CAST({q(c)} AS {d.text_type}) AS {q(f'o{j}')}" for j, c in enumerate(outputs)]
    group = [f"CAST({q(c)} AS {d.text_type})" for c in outputs]
    return f"SELECT {', '.join(cols)}, COUNT(*) AS {q('n')} FROM {version} GROUP BY {', '.join(group)}"
