"""SQL of the heterogeneous k-anonymity release method: private tables, candidate rows, checks.

An anonymized tuple t' carries original t's sensitive and kept columns and generalizes the k
originals matched to it: a numeric QID as the columns ``<q>_min`` and ``<q>_max``, a categorical
QID as the sorted set of its values joined by ``|``. The k-regular graph's edges
(``_ppdp.hetero_edges``: original key, anonymized key) and each tuple's generalization
(``_ppdp.hetero_values``, long format) are private.
"""

from __future__ import annotations

from sql.catalog import private
from sql.queries import Source, text
from sql.quoting import quote_ident, quote_literal

SET_SEPARATOR = "|"


def ddl(d: str = "duckdb") -> list[str]:
    return [
        f"CREATE TABLE IF NOT EXISTS {private('hetero_edges', d)} (release VARCHAR NOT NULL, version INTEGER NOT NULL, "
        "original VARCHAR NOT NULL, anonymized VARCHAR NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {private('hetero_values', d)} (release VARCHAR NOT NULL, version INTEGER NOT NULL, "
        "key VARCHAR NOT NULL, attribute VARCHAR NOT NULL, lo DOUBLE PRECISION, hi DOUBLE PRECISION, label VARCHAR)",
    ]



def published_columns(columns: list[str], numeric: list[str]) -> list[str]:
    """The published columns in order: a numeric QID becomes ``<q>_min``, ``<q>_max``."""
    out = []
    for c in columns:
        out += [f"{c}_min", f"{c}_max"] if c in numeric else [c]
    return out


def candidate_select(source: Source, *, release: str, version: int, columns: list[str], numeric: list[str],
                     categorical: list[str], key: str) -> str:
    d = source.dialect
    rel, v = quote_literal(release, d), int(version)
    key_text = text(key, dialect=d)
    joins = [f"JOIN {private('row_ids', d)} AS rid ON rid.release = {rel} AND rid.key = {key_text}"]
    out = [f"rid.row_id AS {quote_ident('ppdp_row_id', d)}"]
    for i, col in enumerate(columns):
        if col in numeric or col in categorical:
            a = f"g{i}"
            joins.append(f"JOIN {private('hetero_values', d)} AS {a} ON {a}.release = {rel} AND {a}.version = {v} "
                         f"AND {a}.key = {key_text} AND {a}.attribute = {quote_literal(col, d)}")
            if col in numeric:
                out += [f"{a}.lo AS {quote_ident(col + '_min', d)}", f"{a}.hi AS {quote_ident(col + '_max', d)}"]
            else:
                out.append(f"{a}.label AS {quote_ident(col, d)}")
        else:
            out.append(f"src.{quote_ident(col, d)} AS {quote_ident(col, d)}")
    return f"SELECT {', '.join(out)} FROM {source.sql()} {' '.join(joins)}"


def _covers(p: str, s: str, numeric: list[str], categorical: list[str], d: str) -> str:
    """SQL condition: published row ``p`` covers source row ``s``."""
    conds = [f"CAST({s}.{quote_ident(c, d)} AS DOUBLE PRECISION) BETWEEN {p}.{quote_ident(c + '_min', d)} "
             f"AND {p}.{quote_ident(c + '_max', d)}" for c in numeric]
    conds += [f"POSITION('{SET_SEPARATOR}' || {text(c, s, d)} || '{SET_SEPARATOR}' IN "
              f"'{SET_SEPARATOR}' || {p}.{quote_ident(c, d)} || '{SET_SEPARATOR}') > 0" for c in categorical]
    return " AND ".join(conds) if conds else "TRUE"


def coverage_degrees(table: str, source: Source, numeric: list[str], categorical: list[str]) -> str:
    """From the published table and the source alone: the fewest source tuples a published tuple
    covers, and the fewest published tuples covering a source tuple (the consistency graph)."""
    d = source.dialect
    rid = quote_ident("ppdp_row_id", d)
    on = _covers("p", "src", numeric, categorical, d)
    src_id = f"src.{quote_ident('__row', d)}"
    inner = source.sql().removesuffix(" AS src")
    numbered = f"(SELECT ROW_NUMBER() OVER () AS {quote_ident('__row', d)}, s.* FROM {inner} AS s) AS src"
    return (f"WITH m AS (SELECT p.{rid} AS pid, {src_id} AS sid FROM {table} AS p JOIN {numbered} ON {on}) "
            "SELECT (SELECT MIN(n) FROM (SELECT COUNT(*) AS n FROM m GROUP BY pid) AS a) AS min_published_covers, "
            "(SELECT MIN(n) FROM (SELECT COUNT(*) AS n FROM m GROUP BY sid) AS b) AS min_source_covered, "
            "(SELECT COUNT(DISTINCT pid) FROM m) AS published_tuples, (SELECT COUNT(DISTINCT sid) FROM m) AS source_tuples")


def graph_degrees(release: str, version: int, d: str = "duckdb") -> str:
    """From the private edge table: min/max degree of anonymized and original nodes, self edges."""
    rel, v = quote_literal(release, d), int(version)
    e = f"(SELECT * FROM {private('hetero_edges', d)} WHERE release = {rel} AND version = {v}) AS e"
    return (f"SELECT (SELECT MIN(n) FROM (SELECT COUNT(*) AS n FROM {e} GROUP BY anonymized) AS a) AS min_anon, "
            f"(SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM {e} GROUP BY anonymized) AS a) AS max_anon, "
            f"(SELECT MIN(n) FROM (SELECT COUNT(*) AS n FROM {e} GROUP BY original) AS b) AS min_orig, "
            f"(SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM {e} GROUP BY original) AS b) AS max_orig, "
            f"(SELECT COUNT(*) FROM {e} WHERE original = anonymized) AS self_edges, "
            f"(SELECT COUNT(*) FROM (SELECT DISTINCT original, anonymized FROM {e}) AS x) AS distinct_edges, "
            f"(SELECT COUNT(*) FROM {e}) AS edges")


def inconsistent_edges(table: str, source: Source, *, release: str, version: int, key: str, numeric: list[str],
                       categorical: list[str]) -> str:
    """Edges whose anonymized tuple (as published) does not cover its original (in the source)."""
    d = source.dialect
    rel, v = quote_literal(release, d), int(version)
    return (f"SELECT COUNT(*) AS n FROM {private('hetero_edges', d)} AS e "
            f"JOIN {private('row_ids', d)} AS i ON i.release = {rel} AND i.key = e.anonymized "
            f"JOIN {table} AS p ON p.{quote_ident('ppdp_row_id', d)} = i.row_id "
            f"JOIN {source.sql()} ON {text(key, dialect=d)} = e.original "
            f"WHERE e.release = {rel} AND e.version = {v} AND NOT ({_covers('p', 'src', numeric, categorical, d)})")
