"""SQL of the microaggregation release method: its private tables, candidate rows and checks.

Private, per (release, version): group membership of the real records (``_ppdp.micro_groups``),
each group's generalized value per QID (``_ppdp.micro_labels``), the QID values each real record
was grouped with (``_ppdp.micro_values``: a later version compares the source with them to find
modifications, and rebuilds the groups' centroids from them) and the forged records
(``_ppdp.micro_forged``: group, sensitive value, surrogate row id, encoded QIDs, and the *donor*
real record whose non-QID columns it repeats). The candidate rows join the source to them.
Continuous QIDs are published as the label ``[lo, hi]`` (the group's range), semantic ones as the
group's lowest common ancestor in the QID's hierarchy (stored in ``_ppdp.hierarchies``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ppdp.sql.catalog import private
from ppdp.sql.queries import Source, text
from ppdp.sql.quoting import quote_ident, quote_literal

_TYPE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9 _(),]*")


def ddl(d: str = "duckdb") -> list[str]:
    return [
        f"CREATE TABLE IF NOT EXISTS {private('micro_groups', d)} (release VARCHAR NOT NULL, version INTEGER NOT NULL, "
        "key VARCHAR NOT NULL, grp INTEGER NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {private('micro_labels', d)} (release VARCHAR NOT NULL, version INTEGER NOT NULL, "
        "grp INTEGER NOT NULL, attribute VARCHAR NOT NULL, value VARCHAR NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {private('micro_values', d)} (release VARCHAR NOT NULL, version INTEGER NOT NULL, "
        "key VARCHAR NOT NULL, attribute VARCHAR NOT NULL, value VARCHAR NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {private('micro_forged', d)} (release VARCHAR NOT NULL, version INTEGER NOT NULL, "
        "fid INTEGER NOT NULL, grp INTEGER NOT NULL, sa VARCHAR NOT NULL, donor VARCHAR NOT NULL, row_id VARCHAR NOT NULL, "
        "template VARCHAR, qids VARCHAR NOT NULL)",
    ]


def state_select(table: str, release: str, version: int, d: str = "duckdb") -> str:
    """Every row of private table ``micro_<table>`` for one version of a release."""
    return (f"SELECT * FROM {private('micro_' + table, d)} WHERE release = {quote_literal(release, d)} "
            f"AND version = {int(version)}")


def drop_older_values(release: str, version: int, d: str = "duckdb") -> str:
    """The grouped values are needed for the latest version only (the next run compares with them)."""
    return f"DELETE FROM {private('micro_values', d)} WHERE release = {quote_literal(release, d)} AND version < {int(version)}"



def record_select(source: Source, key: str, qids: list[str], sensitive: list[str]) -> str:
    """Every source row: key text, QIDs as stored, sensitive values as text."""
    d = source.dialect
    cols = [f"{text(key, dialect=d)} AS {quote_ident('__key', d)}"]
    cols += [f"src.{quote_ident(q, d)} AS {quote_ident(q, d)}" for q in qids]
    cols += [f"{text(s, dialect=d)} AS {quote_ident(s, d)}" for s in sensitive]
    return f"SELECT {', '.join(cols)} FROM {source.sql()}"


def candidate_select(source: Source, *, release: str, version: int, columns: list[str], qids: list[str], key: str,
                     forged: tuple[str, str] | None = None) -> str:
    """ppdp_row_id, then ``columns`` in order: QIDs replaced by their group's label. With
    ``forged`` = (sensitive column, its declared type) the version's forged records follow: their
    group's labels, their own sensitive value, and their donor's other columns."""
    d = source.dialect
    rel, v = quote_literal(release, d), int(version)
    key_text = text(key, dialect=d)

    def part(members: str, row_id: str, sensitive: tuple[str, str] | None) -> str:
        joins = [members]
        out = [f"{row_id} AS {quote_ident('ppdp_row_id', d)}"]
        for col in columns:
            if col in qids:
                a = f"l{qids.index(col)}"
                joins.append(f"JOIN {private('micro_labels', d)} AS {a} ON {a}.release = {rel} AND {a}.version = {v} "
                             f"AND {a}.grp = mg.grp AND {a}.attribute = {quote_literal(col, d)}")
                out.append(f"{a}.value AS {quote_ident(col, d)}")
            elif sensitive is not None and col == sensitive[0]:
                out.append(f"CAST(mg.sa AS {sensitive[1]}) AS {quote_ident(col, d)}")
            else:
                out.append(f"src.{quote_ident(col, d)} AS {quote_ident(col, d)}")
        return f"SELECT {', '.join(out)} FROM {source.sql()} {' '.join(joins)}"

    real = part(f"JOIN {private('micro_groups', d)} AS mg ON mg.release = {rel} AND mg.version = {v} AND mg.key = {key_text} "
                f"JOIN {private('row_ids', d)} AS rid ON rid.release = {rel} AND rid.key = {key_text}", "rid.row_id", None)
    if forged is None:
        return real
    if not _TYPE_NAME.fullmatch(forged[1]):  # a type name as the database reported it, never user text
        raise ValueError(f"unexpected column type name {forged[1]!r}")
    fake = part(f"JOIN {private('micro_forged', d)} AS mg ON mg.release = {rel} AND mg.version = {v} AND mg.donor = {key_text}",
                "mg.row_id", forged)
    return f"{real} UNION ALL {fake}"


def uncovered_query(table: str, source: Source, *, release: str, version: int, key: str,
                    continuous: list[str], semantic: list[str], nominal: Sequence[str] = (), previous: str | None = None) -> str:
    """Published (row, QID) pairs whose label does not cover the row's source value: 0 when every
    generalized value covers its group's source values (independent of how groups were made).
    A record whose change the method deferred is grouped by the values it had
    (``_ppdp.micro_values``), so its label may cover those instead: its row stands for the record
    as it was, a delayed change. With ``previous`` (the previous version's table), a row published
    exactly as there is not re-checked: it was checked when first published, and the history
    stage may keep it standing while its record has changed. Forged rows have no source row."""
    d = source.dialect
    rel, v = quote_literal(release, d), int(version)

    def grouped(c: str) -> str:
        return (f"(SELECT mv.value FROM {private('micro_values', d)} AS mv WHERE mv.release = {rel} AND mv.version = {v} "
                f"AND mv.key = i.key AND mv.attribute = {quote_literal(c, d)})")

    def within(c: str, value: str) -> str:
        p = f"p.{quote_ident(c, d)}"
        inner = f"SUBSTR({p}, 2, LENGTH({p}) - 2)"
        return (f"({p} LIKE '[%' AND CAST({value} AS DOUBLE PRECISION) BETWEEN CAST(SPLIT_PART({inner}, ', ', 1) AS "
                f"DOUBLE PRECISION) AND CAST(SPLIT_PART({inner}, ', ', 2) AS DOUBLE PRECISION))")

    def under(c: str, leaf: str) -> str:
        return (f"EXISTS (SELECT 1 FROM {private('hierarchies', d)} AS h WHERE h.release = {rel} AND h.version = {v} "
                f"AND h.attribute = {quote_literal(c, d)} AND h.leaf = {leaf} AND h.value = p.{quote_ident(c, d)})")

    def member(c: str, value: str) -> str:  # the value is one of the '|'-joined set
        return f"STRPOS('|' || p.{quote_ident(c, d)} || '|', '|' || {value} || '|') > 0"

    nominal = list(nominal)
    now = ([within(c, f"src.{quote_ident(c, d)}") for c in continuous] + [under(c, text(c, dialect=d)) for c in semantic]
           + [member(c, text(c, dialect=d)) for c in nominal])
    then = ([within(c, grouped(c)) for c in continuous] + [under(c, grouped(c)) for c in semantic]
            + [member(c, grouped(c)) for c in nominal])
    ok = f"(({' AND '.join(now)}) OR ({' AND '.join(then)}))" if now else "TRUE"
    standing = ""
    if previous is not None:
        same = " AND ".join(f"o.{quote_ident(c, d)} = p.{quote_ident(c, d)}" for c in continuous + semantic + nominal) or "TRUE"
        standing = (f" AND NOT EXISTS (SELECT 1 FROM {previous} AS o WHERE o.{quote_ident('ppdp_row_id', d)} = "
                    f"p.{quote_ident('ppdp_row_id', d)} AND {same})")
    return (f"SELECT COUNT(*) AS uncovered FROM {table} AS p "
            f"JOIN {private('row_ids', d)} AS i ON i.release = {rel} AND i.row_id = p.{quote_ident('ppdp_row_id', d)} "
            f"JOIN {source.sql()} ON {text(key, dialect=d)} = i.key WHERE NOT {ok}{standing}")


def forged_query(table: str, *, release: str, version: int, qids: list[str], previous: str | None = None,
                 d: str = "duckdb") -> str:
    """The version's published forged rows (``forged``) and how many of them do not carry exactly
    their group's labels (``mislabeled``, 0 when a forged row looks like its group's rows); a row
    standing exactly as in ``previous`` (held back by the history stage) keeps its earlier labels."""
    rel, v = quote_literal(release, d), int(version)
    joins, diffs = [], []
    for i, q in enumerate(qids):
        a = f"l{i}"
        joins.append(f"LEFT JOIN {private('micro_labels', d)} AS {a} ON {a}.release = {rel} AND {a}.version = {v} "
                     f"AND {a}.grp = f.grp AND {a}.attribute = {quote_literal(q, d)}")
        diffs.append(f"{a}.value IS NULL OR {a}.value <> p.{quote_ident(q, d)}")
    bad = f"({' OR '.join(diffs) or 'FALSE'})"
    if previous is not None:
        same = " AND ".join(f"o.{quote_ident(q, d)} = p.{quote_ident(q, d)}" for q in qids) or "TRUE"
        bad += (f" AND NOT EXISTS (SELECT 1 FROM {previous} AS o WHERE o.{quote_ident('ppdp_row_id', d)} = "
                f"p.{quote_ident('ppdp_row_id', d)} AND {same})")
    return (f"SELECT COUNT(*) AS forged, COALESCE(SUM(CASE WHEN {bad} THEN 1 ELSE 0 END), 0) AS mislabeled "
            f"FROM {table} AS p JOIN {private('micro_forged', d)} AS f ON f.release = {rel} AND f.version = {v} "
            f"AND f.row_id = p.{quote_ident('ppdp_row_id', d)} {' '.join(joins)}")
