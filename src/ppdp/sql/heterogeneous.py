"""SQL of the heterogeneous k-anonymity release method: private tables, candidate rows, checks.

An anonymized tuple t' carries original t's sensitive and kept columns and generalizes the k
originals matched to it: a numeric QID as the columns ``<q>_min`` and ``<q>_max``, a categorical
QID as the sorted set of its values joined by ``|``. The k-regular graph's edges
(``_ppdp.hetero_edges``: original key, anonymized key), each tuple's generalization
(``_ppdp.hetero_values``, long format), the originals each anonymized tuple's generalization
covers (``_ppdp.hetero_members``: its edges and the originals it covered in earlier versions) and
each version's source QIDs with a digest of the
record's own (non-QID) columns (``_ppdp.hetero_sources``, long format, attribute ``__own``) are
private: the cross-version check (``cross_version_failures``) reads the last.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp

from ppdp.sql.catalog import PRIVATE_SCHEMA, private, private_table, version_rows
from ppdp.sql.dialect import Dialect
from ppdp.sql.dialects import PrivateRows
from ppdp.sql.errors import build_error
from ppdp.sql.queries import Source, text
from ppdp.sql.quoting import ident, quote_ident, quote_literal, quote_table

SET_SEPARATOR = "|"


def ddl(d: Dialect) -> list[str]:
    return [
        f"CREATE TABLE IF NOT EXISTS {private('hetero_edges', d)} (release VARCHAR NOT NULL, version INTEGER NOT NULL, "
        "original VARCHAR NOT NULL, anonymized VARCHAR NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {private('hetero_values', d)} (release VARCHAR NOT NULL, version INTEGER NOT NULL, "
        "key VARCHAR NOT NULL, attribute VARCHAR NOT NULL, lo DOUBLE PRECISION, hi DOUBLE PRECISION, label VARCHAR)",
        f"CREATE TABLE IF NOT EXISTS {private('hetero_members', d)} (release VARCHAR NOT NULL, version INTEGER NOT NULL, "
        "original VARCHAR NOT NULL, anonymized VARCHAR NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {private('hetero_sources', d)} (release VARCHAR NOT NULL, version INTEGER NOT NULL, "
        "key VARCHAR NOT NULL, attribute VARCHAR NOT NULL, num DOUBLE PRECISION, label VARCHAR)",
    ]


OWN = "__own"  # hetero_sources attribute: digest of a record's own (non-QID) released columns
# hetero_sources attribute marking a record whose published row is frozen at the previous
# version's: label GHOST for a departed record whose row is carried (its
# QIDs and own digest are its last ones), DELAYED for a record whose own-column change is held
# back (its own digest is the previous one). The cross-version check reads such a record as
# present with those values: see engine/methods/heterogeneous/method.py.
FROZEN = "__frozen"
GHOST, DELAYED = "ghost", "change"
PRIVATE_TABLES = ("hetero_edges", "hetero_members", "hetero_values", "hetero_sources")


def state_select(table: str, release: str, version: int, d: Dialect) -> str:
    """Every row of private table ``hetero_<table>`` for one version of a release."""
    return version_rows("hetero_" + table, release, int(version)).sql(dialect=d.name)


def delete_version(table: str, d: Dialect) -> str:
    """Remove one version's rows of private table ``hetero_<table>`` (parameters: release, version),
    when the cross-version check re-plans the version without the records it withholds."""
    return f"DELETE FROM {private('hetero_' + table, d)} WHERE release = ? AND version = ?"


def versions_stored(release: str, versions: list[int], d: Dialect) -> str:
    """The versions among ``versions`` whose source QIDs are stored (``hetero_sources``)."""
    return version_rows("hetero_sources", release, [int(v) for v in versions], "version", distinct=True).sql(dialect=d.name)



def published_columns(columns: list[str], numeric: list[str]) -> list[str]:
    """The published columns in order: a numeric QID becomes ``<q>_min``, ``<q>_max``."""
    out = []
    for c in columns:
        out += [f"{c}_min", f"{c}_max"] if c in numeric else [c]
    return out


def candidate_select(source: Source, *, release: str, version: int, columns: list[str], numeric: list[str],
                     categorical: list[str], key: str, private_schema: str = PRIVATE_SCHEMA,
                     previous: str | None = None) -> str:
    """ppdp_row_id, then ``columns`` in order: a numeric QID as ``<q>_min`` and ``<q>_max``, a
    categorical one as its value set, from the version's ``hetero_values``; the records not in
    the version's graph (withheld) have none and are left out. ``private_schema``: for the
    rebuild script (``HeteroRows``).

    ``previous`` (quoted table of the previous version, later versions only): the rows are those
    of the version's graph, and a frozen record's (``FROZEN``: a departed record's ghost, or a
    record whose own-column change is held back) own columns are copied from its row there."""
    d = source.dialect
    rel, v = quote_literal(release, d), int(version)
    key_text = text(key, 'src', dialect=d)
    rid_col = quote_ident("ppdp_row_id", d)
    if previous is None:
        base, row_key = source.sql(), key_text
        joins = [f"JOIN {quote_table(private_schema, 'row_ids', d)} AS rid ON rid.release = {rel} AND rid.key = {key_text}"]
    else:
        base, row_key = (f"(SELECT DISTINCT key FROM {quote_table(private_schema, 'hetero_values', d)} "
                         f"WHERE release = {rel} AND version = {v}) AS gk"), "gk.key"
        joins = [f"JOIN {quote_table(private_schema, 'row_ids', d)} AS rid ON rid.release = {rel} AND rid.key = gk.key",
                 f"LEFT JOIN {source.sql()} ON {key_text} = gk.key",
                 f"LEFT JOIN {quote_table(private_schema, 'hetero_sources', d)} AS fz ON fz.release = {rel} "
                 f"AND fz.version = {v} AND fz.key = gk.key AND fz.attribute = {quote_literal(FROZEN, d)}",
                 f"LEFT JOIN {previous} AS pv ON CAST(pv.{rid_col} AS VARCHAR) = rid.row_id"]
    out = [f"rid.row_id AS {rid_col}"]
    for i, col in enumerate(columns):
        if col in numeric or col in categorical:
            a = f"g{i}"
            joins.append(f"JOIN {quote_table(private_schema, 'hetero_values', d)} AS {a} ON {a}.release = {rel} AND {a}.version = {v} "
                         f"AND {a}.key = {row_key} AND {a}.attribute = {quote_literal(col, d)}")
            if col in numeric:
                out += [f"{a}.lo AS {quote_ident(col + '_min', d)}", f"{a}.hi AS {quote_ident(col + '_max', d)}"]
            else:
                out.append(f"{a}.label AS {quote_ident(col, d)}")
        elif previous is None:
            out.append(f"src.{quote_ident(col, d)} AS {quote_ident(col, d)}")
        else:
            c = quote_ident(col, d)
            out.append(f"CASE WHEN fz.key IS NULL THEN src.{c} ELSE pv.{c} END AS {c}")
    return f"SELECT {', '.join(out)} FROM {base} {' '.join(joins)}"


def ghost_persons(release: str, version: int, numeric: list[str], categorical: list[str], d: Dialect) -> str:
    """The ghosts of one version (departed records whose row is carried): key ``__key`` and their
    last QIDs as stored, for the checks that read the source (a ghost is no longer there)."""
    frozen = exp.select(exp.column("key")).from_(private_table("hetero_sources")).where(exp.and_(
        exp.column("release").eq(exp.Literal.string(release)), exp.column("version").eq(exp.Literal.number(int(version))),
        exp.column("attribute").eq(exp.Literal.string(FROZEN)), exp.column("label").eq(exp.Literal.string(GHOST))))
    tree = (exp.select(exp.Star()).from_(_person_versions_tree(release, [version], numeric, categorical).subquery("gp"))
            .where(exp.Column(this=ident("__key"), table=exp.to_identifier("gp")).isin(query=frozen)))
    return tree.sql(dialect=d.name)


@dataclass(frozen=True)
class HeteroRows:
    """A heterogeneous version for the rebuild script (sql/dialects.py): ``candidate_select`` over
    the shipped generalized values."""

    numeric: tuple[str, ...]
    categorical: tuple[str, ...]

    def select(self, source: Source, *, release: str, version: int, columns: list[str], key: str,
               private_schema: str) -> exp.Query:
        """``columns``: the version table's (a numeric QID ``q`` as ``q_min``, ``q_max``)."""
        numeric = set(self.numeric)
        released = [c[: -len("_min")] if c.endswith("_min") and c[: -len("_min")] in numeric else c
                    for c in columns if not (c.endswith("_max") and c[: -len("_max")] in numeric)]
        sql = candidate_select(source, release=release, version=version, columns=released, numeric=list(self.numeric),
                               categorical=list(self.categorical), key=key, private_schema=private_schema)
        parsed = sqlglot.parse_one(sql, read=source.dialect.name)
        if not isinstance(parsed, exp.Query):
            raise build_error(f"The heterogeneous SELECT did not parse back as a query in {source.dialect}.")
        return parsed


def values_table(rows: tuple[tuple[Any, ...], ...]) -> PrivateRows:
    """``hetero_values`` rows of one version, (release, version, key, attribute, lo, hi, label), for the rebuild script."""
    return PrivateRows("hetero_values", (("release", "VARCHAR"), ("version", "INT"), ("key", "VARCHAR"), ("attribute", "VARCHAR"),
                                         ("lo", "DOUBLE"), ("hi", "DOUBLE"), ("label", "VARCHAR")),
                       rows, ("release", "version", "key", "attribute"))


REBUILD_VALUE_COLUMNS = ("release", "version", "key", "attribute", "lo", "hi", "label")


def _covers(p: str, s: str, numeric: list[str], categorical: list[str], d: Dialect) -> str:
    """SQL condition: published row ``p`` covers source row ``s``."""
    conds = [f"CAST({s}.{quote_ident(c, d)} AS DOUBLE PRECISION) BETWEEN {p}.{quote_ident(c + '_min', d)} "
             f"AND {p}.{quote_ident(c + '_max', d)}" for c in numeric]
    conds += [f"POSITION('{SET_SEPARATOR}' || {text(c, s, d)} || '{SET_SEPARATOR}' IN "
              f"'{SET_SEPARATOR}' || {p}.{quote_ident(c, d)} || '{SET_SEPARATOR}') > 0" for c in categorical]
    return " AND ".join(conds) if conds else "TRUE"


def coverage_degrees(table: str, source: Source, numeric: list[str], categorical: list[str], *, release: str,
                     key: str, ghosts: str | None = None) -> str:
    """From the published table and the source alone: the fewest source tuples a published tuple
    covers, and the fewest published tuples covering a source tuple (the consistency graph). The
    source tuples are those whose row is published (a later version may withhold new records:
    they are not in this version's graph). ``ghosts`` (``ghost_persons``): the departed records
    whose rows are carried, counted as tuples with their last QIDs (they are nodes of the graph)."""
    d = source.dialect
    rid = quote_ident("ppdp_row_id", d)
    on = _covers("p", "src", numeric, categorical, d)
    src_id = f"src.{quote_ident('__row', d)}"
    inner = source.sql().removesuffix(" AS src")
    published = (f"EXISTS (SELECT 1 FROM {private('row_ids', d)} AS i JOIN {table} AS q ON q.{rid} = i.row_id "
                 f"WHERE i.release = {quote_literal(release, d)} AND i.key = {text(key, 's', d)})")
    numbered = f"(SELECT ROW_NUMBER() OVER () AS {quote_ident('__row', d)}, s.* FROM {inner} AS s WHERE {published}) AS src"
    ghost_part = "" if ghosts is None else (
        f" UNION ALL SELECT p.{rid}, 'ghost:' || g.{quote_ident('__key', d)} FROM {table} AS p "
        f"JOIN ({ghosts}) AS g ON {_src_covers('p', 'g', numeric, categorical, d)}")
    return (f"WITH m AS (SELECT p.{rid} AS pid, CAST({src_id} AS VARCHAR) AS sid FROM {table} AS p JOIN {numbered} "
            f"ON {on}{ghost_part}) "
            "SELECT (SELECT MIN(n) FROM (SELECT COUNT(*) AS n FROM m GROUP BY pid) AS a) AS min_published_covers, "
            "(SELECT MIN(n) FROM (SELECT COUNT(*) AS n FROM m GROUP BY sid) AS b) AS min_source_covered, "
            "(SELECT COUNT(DISTINCT pid) FROM m) AS published_tuples, (SELECT COUNT(DISTINCT sid) FROM m) AS source_tuples")


def graph_degrees(release: str, version: int, d: Dialect) -> str:
    """From the private edge table: min/max degree of anonymized and original nodes, self edges."""
    e = exp.paren(version_rows("hetero_edges", release, int(version))).sql(dialect=d.name) + " AS e"
    return (f"SELECT (SELECT MIN(n) FROM (SELECT COUNT(*) AS n FROM {e} GROUP BY anonymized) AS a) AS min_anon, "
            f"(SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM {e} GROUP BY anonymized) AS a) AS max_anon, "
            f"(SELECT MIN(n) FROM (SELECT COUNT(*) AS n FROM {e} GROUP BY original) AS b) AS min_orig, "
            f"(SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM {e} GROUP BY original) AS b) AS max_orig, "
            f"(SELECT COUNT(*) FROM {e} WHERE original = anonymized) AS self_edges, "
            f"(SELECT COUNT(*) FROM (SELECT DISTINCT original, anonymized FROM {e}) AS x) AS distinct_edges, "
            f"(SELECT COUNT(*) FROM {e}) AS edges")


def inconsistent_edges(table: str, source: Source, *, release: str, version: int, key: str, numeric: list[str],
                       categorical: list[str], ghosts: str | None = None) -> str:
    """Edges whose anonymized tuple (as published) does not cover its original (in the source, or
    a ghost's last QIDs: ``ghosts``, ``ghost_persons``)."""
    d = source.dialect
    rel, v = quote_literal(release, d), int(version)
    edges = (f"FROM {private('hetero_edges', d)} AS e "
             f"JOIN {private('row_ids', d)} AS i ON i.release = {rel} AND i.key = e.anonymized "
             f"JOIN {table} AS p ON p.{quote_ident('ppdp_row_id', d)} = i.row_id ")
    sql = (f"SELECT COUNT(*) AS n {edges}JOIN {source.sql()} ON {text(key, 'src', dialect=d)} = e.original "
           f"WHERE e.release = {rel} AND e.version = {v} AND NOT ({_covers('p', 'src', numeric, categorical, d)})")
    if ghosts is None:
        return sql
    ghost_sql = (f"SELECT COUNT(*) AS n {edges}JOIN ({ghosts}) AS g ON g.{quote_ident('__key', d)} = e.original "
                 f"WHERE e.release = {rel} AND e.version = {v} AND NOT ({_src_covers('p', 'g', numeric, categorical, d)})")
    return f"SELECT SUM(n) AS n FROM ({sql} UNION ALL {ghost_sql}) AS x"


def _person_versions_tree(release: str, versions: list[int], numeric: list[str], categorical: list[str]) -> exp.Select:
    """One row per (version, person): the person's QIDs in that version and the own digest."""
    def pick(attribute: str, value: str) -> exp.Expr:
        case = exp.Case(ifs=[exp.If(this=exp.column("attribute").eq(exp.Literal.string(attribute)), true=exp.column(value))])
        return exp.alias_(exp.Max(this=case), ident(attribute))

    cols = [pick(q, "num") for q in numeric] + [pick(q, "label") for q in categorical] + [pick(OWN, "label")]
    rows = version_rows("hetero_sources", release, [int(v) for v in versions])
    return (rows.select(exp.alias_(exp.column("version"), ident("__v")), exp.alias_(exp.column("key"), ident("__key")), *cols,
                        append=False, copy=False).group_by(exp.column("version"), exp.column("key"), copy=False))


def _person_versions(release: str, versions: list[int], numeric: list[str], categorical: list[str], d: Dialect) -> str:
    """``_person_versions_tree`` as SQL for ``d``."""
    return _person_versions_tree(release, versions, numeric, categorical).sql(dialect=d.name)


def _src_covers(p: str, s: str, numeric: list[str], categorical: list[str], d: Dialect) -> str:
    """Published row ``p`` covers the stored QIDs ``s`` of a person (both sides as stored)."""
    conds = [f"{s}.{quote_ident(c, d)} BETWEEN {p}.{quote_ident(c + '_min', d)} AND {p}.{quote_ident(c + '_max', d)}"
             for c in numeric]
    conds += [f"POSITION('{SET_SEPARATOR}' || {s}.{quote_ident(c, d)} || '{SET_SEPARATOR}' IN "
              f"'{SET_SEPARATOR}' || {p}.{quote_ident(c, d)} || '{SET_SEPARATOR}') > 0" for c in categorical]
    return " AND ".join(conds) if conds else "TRUE"


@dataclass(frozen=True)
class CrossVersionCheck:
    """The cross-version check as statements: ``setup`` fills three private staging tables (each
    ``CREATE ... LIMIT 0`` then ``INSERT ... SELECT``, so PostgreSQL has statistics for them and
    does not nest loops over row estimates of 1), ``query`` reads them, ``cleanup`` drops them."""

    setup: tuple[str, ...]
    query: str
    cleanup: tuple[str, ...]


def cross_version_failures(versions: list[tuple[int, str]], *, release: str, k: int, numeric: list[str],
                           categorical: list[str], own: list[str], stage: str, d: Dialect) -> CrossVersionCheck:
    """Persons whom someone holding every version could narrow to fewer than ``k`` rows.

    ``versions``: (version, quoted table) of every published version in order, the new one last;
    ``stage``: a prefix for the private staging tables (unique to the run). The query returns
    ``key``, ``candidates``, ``departed`` (true: present in the version before the last and gone in
    the last) for each failing person. The rule (engine/methods/heterogeneous/method.py documents why)
    keeps row r as a candidate for person p unless, for some version v (u the version before v):
      (A) r is published in v and p is not in the source of v, or r does not cover p's QIDs of v
          (a ghost, a departed record whose row is carried, is stored in ``hetero_sources`` at its
          last values, marked ``FROZEN``: the rule reads it as its person still there);
      (B) r is published in u, p is in the source of u and of v, and r is not published in v
          (a person's row is never withdrawn while the person stays);
      (C) r is published in u and v, p is in the source of u and v, and whether r's own columns
          changed from u to v differs from whether p's own columns changed.
    Checked persons: every person whose row is published in the last version, and every person
    who left at the last step (their row was published in the version before).
    """
    vs = [int(v) for v, _ in versions]
    last = vs[-1]
    rid, vcol, key = quote_ident("__rid", d), quote_ident("__v", d), quote_ident("__key", d)
    own_q, rown = quote_ident(OWN, d), quote_ident("__rown", d)
    src, pub, pairs = (private(f"{stage}_{name}", d) for name in ("src", "pub", "pairs"))
    gen = [quote_ident(f"{q}_{e}", d) for q in numeric for e in ("min", "max")] + [quote_ident(q, d) for q in categorical]
    own_text = " || '|' || ".join(f"COALESCE(CAST({quote_ident(c, d)} AS VARCHAR), '~')" for c in own) or "''"
    pub_sql = " UNION ALL ".join(f"SELECT {int(v)} AS {vcol}, CAST({quote_ident('ppdp_row_id', d)} AS VARCHAR) AS {rid}, "
                                 f"{', '.join(gen)}, MD5({own_text}) AS {rown} FROM {table}" for v, table in versions)
    rel = quote_literal(release, d)
    covers = _src_covers("r", "s", numeric, categorical, d)
    targets = (f"SELECT s.{key} AS pkey, FALSE AS departed FROM {src} AS s JOIN {private('row_ids', d)} AS i "
               f"ON i.release = {rel} AND i.key = s.{key} JOIN {pub} AS o ON o.{rid} = i.row_id AND o.{vcol} = {last} "
               f"WHERE s.{vcol} = {last}")
    pairs_sql = (f"SELECT t.pkey, t.departed, r.{rid} AS rid FROM targets AS t JOIN {src} AS s ON s.{key} = t.pkey "
                 f"AND s.{vcol} = {last} JOIN {pub} AS r ON r.{vcol} = {last} AND {covers} WHERE NOT t.departed")
    if len(vs) > 1:
        prev = vs[-2]
        targets += (f" UNION ALL SELECT s.{key}, TRUE FROM {src} AS s JOIN {private('row_ids', d)} AS i "
                    f"ON i.release = {rel} AND i.key = s.{key} JOIN {pub} AS o ON o.{rid} = i.row_id AND o.{vcol} = {prev} "
                    f"WHERE s.{vcol} = {prev} AND NOT EXISTS (SELECT 1 FROM {src} AS x WHERE x.{key} = s.{key} "
                    f"AND x.{vcol} = {last})")
        pairs_sql += (f" UNION ALL SELECT t.pkey, t.departed, r.{rid} FROM targets AS t JOIN {src} AS s ON s.{key} = t.pkey "
                      f"AND s.{vcol} = {prev} JOIN {pub} AS r ON r.{vcol} = {prev} AND {covers} WHERE t.departed "
                      f"AND NOT EXISTS (SELECT 1 FROM {pub} AS x WHERE x.{rid} = r.{rid} AND x.{vcol} = {last})")
    # the targets with no pair (none in practice: a person's own row covers them) still count
    pairs_sql = (f"WITH targets AS ({targets}) SELECT DISTINCT pkey, departed, rid FROM ({pairs_sql}) AS x "
                 f"UNION SELECT pkey, departed, NULL FROM targets")
    setup = []
    for table, select in ((src, _person_versions(release, vs, numeric, categorical, d)), (pub, pub_sql), (pairs, pairs_sql)):
        setup += [f"DROP TABLE IF EXISTS {table}", f"CREATE TABLE {table} AS SELECT * FROM ({select}) AS x LIMIT 0",
                  f"INSERT INTO {table} SELECT * FROM ({select}) AS x"]
    steps = " UNION ALL ".join(f"SELECT {u} AS u, {v} AS v" for u, v in zip(vs, vs[1:], strict=False)) \
        or "SELECT 0 AS u, 0 AS v"
    bad_a = (f"SELECT pr.pkey, pr.rid FROM {pairs} AS pr JOIN {pub} AS r ON r.{rid} = pr.rid "
             f"LEFT JOIN {src} AS s ON s.{vcol} = r.{vcol} AND s.{key} = pr.pkey WHERE s.{key} IS NULL OR NOT ({covers})")
    both = (f"FROM {pairs} AS pr JOIN {pub} AS pu ON pu.{rid} = pr.rid JOIN steps AS st ON pu.{vcol} = st.u "
            f"JOIN {src} AS su ON su.{key} = pr.pkey AND su.{vcol} = st.u "
            f"JOIN {src} AS sv ON sv.{key} = pr.pkey AND sv.{vcol} = st.v")
    bad_b = (f"SELECT pr.pkey, pr.rid {both} WHERE NOT EXISTS (SELECT 1 FROM {pub} AS pv WHERE pv.{rid} = pr.rid "
             f"AND pv.{vcol} = st.v)")
    bad_c = (f"SELECT pr.pkey, pr.rid {both} JOIN {pub} AS pv ON pv.{rid} = pr.rid AND pv.{vcol} = st.v "
             f"WHERE (CASE WHEN pu.{rown} <> pv.{rown} THEN 1 ELSE 0 END) <> "
             f"(CASE WHEN su.{own_q} IS DISTINCT FROM sv.{own_q} THEN 1 ELSE 0 END)")
    query = (f"WITH steps AS ({steps}), bad AS ({bad_a} UNION {bad_b} UNION {bad_c}), "
             f"good AS (SELECT pkey, rid FROM {pairs} WHERE rid IS NOT NULL EXCEPT SELECT pkey, rid FROM bad) "
             f"SELECT t.pkey AS key, COUNT(g.rid) AS candidates, t.departed AS departed FROM {pairs} AS t "
             "LEFT JOIN good AS g ON g.pkey = t.pkey AND g.rid = t.rid GROUP BY t.pkey, t.departed "
             f"HAVING COUNT(g.rid) < {int(k)} ORDER BY t.pkey")
    return CrossVersionCheck(tuple(setup), query, tuple(f"DROP TABLE IF EXISTS {t}" for t in (src, pub, pairs)))


# -- a homogeneous release as the starting graph (params.initial = "release") ----------------------

def generalized_classes(version_table: str, qids: list[str], d: Dialect) -> str:
    """(source key, class number) of every row a generalization release published in the version
    table ``version_table`` (quoted): a class is a generalized QID tuple (``qids``, that release's
    quasi-identifiers). Suppressed keys are not in the table. Parameter: the release's identity."""
    rid = quote_ident("ppdp_row_id", d)
    order = ", ".join(f"p.{quote_ident(q, d)}" for q in qids)
    return (f"SELECT i.key AS key, DENSE_RANK() OVER (ORDER BY {order}) AS grp FROM {version_table} AS p "
            f"JOIN {private('row_ids', d)} AS i ON i.release = ? AND i.row_id = CAST(p.{rid} AS VARCHAR)")


def micro_classes(d: Dialect) -> str:
    """(source key, group) of the real records of one version of a microaggregation release
    (params: release, version); forged rows are not source records and are not listed."""
    return f"SELECT key, grp FROM {private('micro_groups', d)} WHERE release = ? AND version = ?"
