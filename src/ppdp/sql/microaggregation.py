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
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp

from ppdp.sql.catalog import PRIVATE_SCHEMA, private, private_table, version_rows
from ppdp.sql.dialect import Dialect
from ppdp.sql.dialects import PrivateRows
from ppdp.sql.errors import build_error
from ppdp.sql.queries import Source, text, text_expr
from ppdp.sql.quoting import ident, quote_ident, quote_literal, quote_table, render, slot

_TYPE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9 _(),]*")


# The method's tables in ``_ppdp`` (rows per release and version), created by ``ddl``.
PRIVATE_TABLES = ("micro_groups", "micro_labels", "micro_values", "micro_forged")


def ddl(d: Dialect) -> list[str]:
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


def state_select(table: str, release: str, version: int, d: Dialect) -> str:
    """Every row of private table ``micro_<table>`` for one version of a release."""
    return version_rows("micro_" + table, release, int(version)).sql(dialect=d.name)


def drop_older_values(release: str, version: int, d: Dialect) -> str:
    """The grouped values are needed for the latest version only (the next run compares with them)."""
    older = exp.and_(exp.column("release").eq(exp.Literal.string(release)), exp.column("version") < exp.Literal.number(int(version)))
    return exp.delete(private_table("micro_values"), where=older).sql(dialect=d.name)



def record_select(source: Source, key: str, qids: list[str], sensitive: list[str]) -> str:
    """Every source row: key text, QIDs as stored, sensitive values as text."""
    d = source.dialect
    def as_text(col: str) -> exp.Expr:
        return text_expr(exp.column(col, "src", quoted=True), d)

    cols = [exp.alias_(as_text(key), ident("__key"))]
    cols += [exp.alias_(exp.Column(this=ident(q), table=exp.to_identifier("src")), ident(q)) for q in qids]
    cols += [exp.alias_(as_text(s), ident(s)) for s in sensitive]
    return render(exp.select(*cols).from_(slot("source")), d, {"source": source.sql()})


def candidate_select(source: Source, *, release: str, version: int, columns: list[str], qids: list[str], key: str,
                     forged: tuple[str, str] | None = None, private_schema: str = PRIVATE_SCHEMA) -> str:
    """ppdp_row_id, then ``columns`` in order: QIDs replaced by their group's label. With
    ``forged`` = (sensitive column, its declared type) the version's forged records follow: their
    group's labels, their own sensitive value, and their donor's other columns.
    ``private_schema``: for the rebuild script (``MicroRows``)."""
    d = source.dialect
    rel, v = quote_literal(release, d), int(version)
    key_text = text(key, 'src', dialect=d)

    def state(table: str) -> str:
        return quote_table(private_schema, table, d)

    def part(members: str, row_id: str, sensitive: tuple[str, str] | None) -> str:
        joins = [members]
        out = [f"{row_id} AS {quote_ident('ppdp_row_id', d)}"]
        for col in columns:
            if col in qids:
                a = f"l{qids.index(col)}"
                joins.append(f"JOIN {state('micro_labels')} AS {a} ON {a}.release = {rel} AND {a}.version = {v} "
                             f"AND {a}.grp = mg.grp AND {a}.attribute = {quote_literal(col, d)}")
                out.append(f"{a}.value AS {quote_ident(col, d)}")
            elif sensitive is not None and col == sensitive[0]:
                out.append(f"CAST(mg.sa AS {sensitive[1]}) AS {quote_ident(col, d)}")
            else:
                out.append(f"src.{quote_ident(col, d)} AS {quote_ident(col, d)}")
        return f"SELECT {', '.join(out)} FROM {source.sql()} {' '.join(joins)}"

    real = part(f"JOIN {state('micro_groups')} AS mg ON mg.release = {rel} AND mg.version = {v} AND mg.key = {key_text} "
                f"JOIN {state('row_ids')} AS rid ON rid.release = {rel} AND rid.key = {key_text}", "rid.row_id", None)
    if forged is None:
        return real
    if not _TYPE_NAME.fullmatch(forged[1]):  # a type name as the database reported it, never user text
        raise ValueError(f"unexpected column type name {forged[1]!r}")
    fake = part(f"JOIN {state('micro_forged')} AS mg ON mg.release = {rel} AND mg.version = {v} AND mg.donor = {key_text}",
                "mg.row_id", forged)
    return f"{real} UNION ALL {fake}"


@dataclass(frozen=True)
class MicroRows:
    """A microaggregation version for the rebuild script (sql/dialects.py): ``candidate_select``
    over the shipped groups, labels and forged records (those of the published rows only:
    ``published_state_select``). ``forged`` = (sensitive column, its declared type, the dialect
    that named the type), or None when the version publishes no forged record."""

    qids: tuple[str, ...]
    forged: tuple[str, str, str] | None = None

    def select(self, source: Source, *, release: str, version: int, columns: list[str], key: str,
               private_schema: str) -> exp.Query:
        forged = None
        if self.forged is not None:
            column, type_name, named_in = self.forged
            forged = (column, exp.DataType.build(type_name, dialect=named_in).sql(dialect=source.dialect.name))
        sql = candidate_select(source, release=release, version=version, columns=columns, qids=list(self.qids), key=key,
                               forged=forged, private_schema=private_schema)
        parsed = sqlglot.parse_one(sql, read=source.dialect.name)
        if not isinstance(parsed, exp.Query):
            raise build_error(f"The microaggregation SELECT did not parse back as a query in {source.dialect}.")
        return parsed


# The private tables a rebuild script ships for one version: the columns ``candidate_select``
# reads, and the keys that let a planner join them (every one is unique per release and version).
REBUILD_TABLES: dict[str, tuple[tuple[tuple[str, str], ...], tuple[str, ...]]] = {
    "micro_groups": ((("release", "VARCHAR"), ("version", "INT"), ("key", "VARCHAR"), ("grp", "INT")),
                     ("release", "version", "key")),
    "micro_labels": ((("release", "VARCHAR"), ("version", "INT"), ("grp", "INT"), ("attribute", "VARCHAR"), ("value", "VARCHAR")),
                     ("release", "version", "grp", "attribute")),
    "micro_forged": ((("release", "VARCHAR"), ("version", "INT"), ("grp", "INT"), ("sa", "VARCHAR"), ("donor", "VARCHAR"),
                      ("row_id", "VARCHAR")), ()),
}


def published_state_select(table: str, release: str, version: int, version_table: str, d: Dialect) -> str:
    """The rows of private table ``table`` (one of ``REBUILD_TABLES``) for one version, in its
    columns there, restricted to the rows published in ``version_table``: a record withheld for
    privacy across versions is grouped (``micro_groups``, ``micro_forged``) but not published."""
    columns, _ = REBUILD_TABLES[table]
    rel, v = quote_literal(release, d), int(version)
    cols = ", ".join(f"t.{quote_ident(c, d)}" for c, _ in columns)
    rid = quote_ident("ppdp_row_id", d)
    published = {
        "micro_groups": (f" AND EXISTS (SELECT 1 FROM {private('row_ids', d)} AS i JOIN {version_table} AS p "
                         f"ON p.{rid} = i.row_id WHERE i.release = t.release AND i.key = t.key)"),
        "micro_labels": "",
        "micro_forged": f" AND EXISTS (SELECT 1 FROM {version_table} AS p WHERE p.{rid} = t.row_id)",
    }[table]
    return f"SELECT {cols} FROM {private(table, d)} AS t WHERE t.release = {rel} AND t.version = {v}{published}"


def rebuild_table(table: str, rows: tuple[tuple[Any, ...], ...]) -> PrivateRows:
    """``rows`` of private table ``table`` (columns as in ``REBUILD_TABLES``) for the rebuild script."""
    columns, key = REBUILD_TABLES[table]
    return PrivateRows(table, columns, rows, key)


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
    now = ([within(c, f"src.{quote_ident(c, d)}") for c in continuous] + [under(c, text(c, 'src', dialect=d)) for c in semantic]
           + [member(c, text(c, 'src', dialect=d)) for c in nominal])
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
            f"JOIN {source.sql()} ON {text(key, 'src', dialect=d)} = i.key WHERE NOT {ok}{standing}")


def forged_query(table: str, *, release: str, version: int, qids: list[str], previous: str | None = None,
                 d: Dialect) -> str:
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
