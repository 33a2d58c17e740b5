"""SQL of the microaggregation release method: its private tables, candidate rows and checks.

Group membership (``_ppdp.micro_groups``) and each group's generalized value per QID
(``_ppdp.micro_labels``) are private; the candidate rows join the source to them. Continuous QIDs
are published as the label ``[lo, hi]`` (the group's range), semantic ones as the group's lowest
common ancestor in the QID's hierarchy (stored in ``_ppdp.hierarchies``).
"""

from __future__ import annotations

from sql.catalog import private
from sql.queries import Source, text
from sql.quoting import quote_ident, quote_literal


def ddl(d: str = "duckdb") -> list[str]:
    return [
        f"CREATE TABLE IF NOT EXISTS {private('micro_groups', d)} (release VARCHAR NOT NULL, version INTEGER NOT NULL, "
        "key VARCHAR NOT NULL, grp INTEGER NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {private('micro_labels', d)} (release VARCHAR NOT NULL, version INTEGER NOT NULL, "
        "grp INTEGER NOT NULL, attribute VARCHAR NOT NULL, value VARCHAR NOT NULL)",
    ]



def record_select(source: Source, key: str, qids: list[str], sensitive: list[str]) -> str:
    """Every source row: key text, QIDs as stored, sensitive values as text."""
    d = source.dialect
    cols = [f"{text(key, dialect=d)} AS {quote_ident('__key', d)}"]
    cols += [f"src.{quote_ident(q, d)} AS {quote_ident(q, d)}" for q in qids]
    cols += [f"{text(s, dialect=d)} AS {quote_ident(s, d)}" for s in sensitive]
    return f"SELECT {', '.join(cols)} FROM {source.sql()}"


def candidate_select(source: Source, *, release: str, version: int, columns: list[str], qids: list[str], key: str) -> str:
    """ppdp_row_id, then ``columns`` in order: QIDs replaced by their group's label."""
    d = source.dialect
    rel, v = quote_literal(release, d), int(version)
    key_text = text(key, dialect=d)
    joins = [f"JOIN {private('micro_groups', d)} AS mg ON mg.release = {rel} AND mg.version = {v} AND mg.key = {key_text}",
             f"JOIN {private('row_ids', d)} AS rid ON rid.release = {rel} AND rid.key = {key_text}"]
    out = [f"rid.row_id AS {quote_ident('ppdp_row_id', d)}"]
    for col in columns:
        if col in qids:
            a = f"l{qids.index(col)}"
            joins.append(f"JOIN {private('micro_labels', d)} AS {a} ON {a}.release = {rel} AND {a}.version = {v} "
                         f"AND {a}.grp = mg.grp AND {a}.attribute = {quote_literal(col, d)}")
            out.append(f"{a}.value AS {quote_ident(col, d)}")
        else:
            out.append(f"src.{quote_ident(col, d)} AS {quote_ident(col, d)}")
    return f"SELECT {', '.join(out)} FROM {source.sql()} {' '.join(joins)}"


def uncovered_query(table: str, source: Source, *, release: str, version: int, key: str,
                    continuous: list[str], semantic: list[str]) -> str:
    """Published (row, QID) pairs whose label does not cover the row's source value: 0 when every
    generalized value covers its group's source values (independent of how groups were made)."""
    d = source.dialect
    rel, v = quote_literal(release, d), int(version)
    conds = []
    for c in continuous:
        p = f"p.{quote_ident(c, d)}"
        inner = f"SUBSTR({p}, 2, LENGTH({p}) - 2)"
        conds.append(f"({p} LIKE '[%' AND CAST(src.{quote_ident(c, d)} AS DOUBLE PRECISION) BETWEEN "
                     f"CAST(SPLIT_PART({inner}, ', ', 1) AS DOUBLE PRECISION) AND CAST(SPLIT_PART({inner}, ', ', 2) AS DOUBLE PRECISION))")
    for c in semantic:
        conds.append(f"EXISTS (SELECT 1 FROM {private('hierarchies', d)} AS h WHERE h.release = {rel} AND h.version = {v} "
                     f"AND h.attribute = {quote_literal(c, d)} AND h.leaf = {text(c, dialect=d)} AND h.value = p.{quote_ident(c, d)})")
    ok = " AND ".join(conds) if conds else "TRUE"
    return (f"SELECT COUNT(*) AS uncovered FROM {table} AS p "
            f"JOIN {private('row_ids', d)} AS i ON i.release = {rel} AND i.row_id = p.{quote_ident('ppdp_row_id', d)} "
            f"JOIN {source.sql()} ON {text(key, dialect=d)} = i.key WHERE NOT ({ok})")
