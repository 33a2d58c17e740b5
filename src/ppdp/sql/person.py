"""SQL of the person unit (docs/design/person_unit.md): the checks of a person column, the
person-level relation the search counts, the rows of suppressed persons, and a version's
projection onto persons (what verification and risk count).

The person column's values never leave the database: every statement here returns counts or
the source's own keys (kept in the private schema), never a person's value.
"""

from __future__ import annotations

from sqlglot import exp

from ppdp.sql.dialect import Dialect
from ppdp.sql.queries import PRIVATE_SCHEMA, ROW_ID, Source, text
from ppdp.sql.quoting import quote_ident, quote_table

PERSON_ROWS = "person_rows"  # private: (release, row_id, person): the person's text
PERSON = "__ppdp_person"  # the person's text inside a private relation; never in a published one


def person_check_query(source: Source, person: str, qids: list[str], sensitive: list[str]) -> str:
    """One row: ``rows_null`` (rows whose person is NULL), ``persons``, ``contradicting`` (persons
    whose rows differ on a QID) and ``varying_sensitive`` (persons whose rows differ on a
    sensitive attribute). One GROUP BY over the person with MIN/MAX per column (a column differs
    within a person when its MIN and MAX differ, or when some but not all of its rows are NULL)."""
    d = source.dialect
    p = quote_ident(person, d)

    def differs(cols: list[str]) -> str:
        if not cols:
            return "0"
        parts = []
        for c in cols:
            q = f"src.{quote_ident(c, d)}"
            parts.append(f"MIN({q}) <> MAX({q}) OR (COUNT({q}) > 0 AND COUNT({q}) < COUNT(*))")
        return f"CASE WHEN {' OR '.join(parts)} THEN 1 ELSE 0 END"

    return ("SELECT COALESCE(SUM(CASE WHEN per.nulls = 1 THEN per.n ELSE 0 END), 0) AS rows_null, "
            "COALESCE(SUM(1 - per.nulls), 0) AS persons, COALESCE(SUM(CASE WHEN per.nulls = 0 THEN per.nq ELSE 0 END), 0) AS contradicting, "
            "COALESCE(SUM(CASE WHEN per.nulls = 0 THEN per.ns ELSE 0 END), 0) AS varying_sensitive "
            f"FROM (SELECT CASE WHEN src.{p} IS NULL THEN 1 ELSE 0 END AS nulls, COUNT(*) AS n, {differs(qids)} AS nq, "
            f"{differs(sensitive)} AS ns FROM {source.sql()} GROUP BY src.{p}) AS per")


def person_level_query(source: Source, person: str, qids: list[str], sensitive: list[str], d: Dialect) -> str:
    """One row per person: the person, its QIDs (constant per person: checked first) and its
    sensitive values (MIN when they vary: only for models that read no sensitive value)."""
    p = quote_ident(person, d)
    group = [f"src.{p}", *(f"src.{quote_ident(c, d)}" for c in qids)]
    cols = [f"src.{p} AS {p}", *(f"src.{quote_ident(c, d)} AS {quote_ident(c, d)}" for c in qids),
            *(f"MIN(src.{quote_ident(c, d)}) AS {quote_ident(c, d)}" for c in sensitive)]
    return f"SELECT {', '.join(cols)} FROM {source.sql()} GROUP BY {', '.join(group)}"


def person_rows_keys(source: Source, key: str, person: str, person_keys: str) -> str:
    """Keys (as text) of every row of the persons in ``person_keys`` (a SELECT of one text column
    ``key``, the persons' texts): suppression takes whole persons."""
    d = source.dialect
    return (f"SELECT {text(key, 'src', d)} AS key FROM {source.sql()} "
            f"JOIN (SELECT DISTINCT pk.key AS key FROM ({person_keys}) AS pk) AS sp ON sp.key = {text(person, 'src', d)}")


def version_persons(version: str, release: str, columns: list[str], d: Dialect, *, with_person: bool = False,
                    source: Source | None = None, key: str | None = None, person: str | None = None) -> str:
    """The published rows of ``version`` projected onto persons: one row per distinct (person,
    published ``columns``). The person of a row is the release's private map (``person_rows``,
    which keeps the persons of rows carried after they left the source), or, given ``source``,
    ``key`` and ``person``, that column of the source row (``ppdp risk --person``). Without
    ``with_person`` the person is left out of the result (only counts of persons leave the
    subquery). A SELECT."""
    rel = exp.Literal.string(release).sql(dialect=d.name)
    cols = [f"v.{quote_ident(c, d)} AS {quote_ident(c, d)}" for c in columns]
    rid = f"CAST(v.{quote_ident(ROW_ID, d)} AS VARCHAR)"
    if source is None:
        who = "pr.person"
        joins = f"JOIN {quote_table(PRIVATE_SCHEMA, PERSON_ROWS, d)} AS pr ON pr.release = {rel} AND pr.row_id = {rid}"
    else:
        who = text(person or "", "src", d)
        joins = (f"JOIN {quote_table(PRIVATE_SCHEMA, 'row_ids', d)} AS i ON i.release = {rel} AND i.row_id = {rid} "
                 f"JOIN {source.sql()} ON {text(key or '', 'src', d)} = i.key")
    inner = f"SELECT DISTINCT {who} AS {quote_ident(PERSON, d)}{''.join(', ' + c for c in cols)} FROM {version} AS v {joins}"
    if with_person:
        return inner
    outer = ", ".join(quote_ident(c, d) for c in columns) or "1 AS one"
    return f"SELECT {outer} FROM ({inner}) AS pp"


def table_persons(relation: str, person: str, columns: list[str], d: Dialect) -> str:
    """A table that carries its person column (``ppdp risk --person``), projected onto persons:
    one row per distinct (person, ``columns``), the person's value left out. A SELECT."""
    p = quote_ident(person, d)
    cols = ", ".join(quote_ident(c, d) for c in columns)
    return f"SELECT {cols} FROM (SELECT DISTINCT {p}, {cols} FROM {relation}) AS pp"


def distinct_persons_per_class(relation_with_person: str, qids: list[str], d: Dialect) -> str:
    """Per published class of a (person, QIDs) relation: ``persons``, the number of distinct
    persons (the recount of k-anonymity per person); one row per class, no person values."""
    g = ", ".join(quote_ident(c, d) for c in qids)
    return (f"SELECT {g}, COUNT(DISTINCT {quote_ident(PERSON, d)}) AS persons FROM ({relation_with_person}) AS r "
            f"GROUP BY {g}")


def person_rows_ddl(d: Dialect) -> str:
    """The private map from a release's row ids to their persons, kept for rows that later leave
    the source (a deleted row's person is still needed by the cross-version rule)."""
    return (f"CREATE TABLE IF NOT EXISTS {quote_table(PRIVATE_SCHEMA, PERSON_ROWS, d)} "
            "(release VARCHAR NOT NULL, row_id VARCHAR NOT NULL, person VARCHAR NOT NULL)")


def record_person_rows(source: Source, key: str, person: str) -> str:
    """INSERT the person of every row id of the release not mapped yet (params: release,
    release, release). A row keeps the person it had when first published."""
    d = source.dialect
    pr = quote_table(PRIVATE_SCHEMA, PERSON_ROWS, d)
    return (f"INSERT INTO {pr} (release, row_id, person) SELECT ?, i.row_id, {text(person, 'src', d)} "
            f"FROM {source.sql()} JOIN {quote_table(PRIVATE_SCHEMA, 'row_ids', d)} AS i "
            f"ON i.release = ? AND i.key = {text(key, 'src', d)} "
            f"WHERE NOT EXISTS (SELECT 1 FROM {pr} AS m WHERE m.release = ? AND m.row_id = i.row_id)")


def history_persons(classes: str, release: str, d: Dialect) -> str:
    """SELECT DISTINCT (sig_now, person) over ``classes`` (a SELECT with rid and sig_now, one row
    per row id ever published): which persons have a row in which history class (private: the
    caller only counts)."""
    rel = exp.Literal.string(release).sql(dialect=d.name)
    return (f"SELECT DISTINCT CAST(sg.sig_now AS VARCHAR) AS sig_now, pr.person AS person FROM ({classes}) AS sg "
            f"JOIN {quote_table(PRIVATE_SCHEMA, PERSON_ROWS, d)} AS pr "
            f"ON pr.release = {rel} AND pr.row_id = CAST(sg.rid AS VARCHAR)")


def generalized_person_classes(release_select: str, person: str, qids: list[str], d: Dialect) -> str:
    """SELECT DISTINCT (person, sig_now) over a release SELECT that carries the person column and
    the generalized QIDs: which class each person has rows in (``sig_now`` a hash of the class)."""
    from ppdp.sql.history import tuple_hash

    return (f"SELECT DISTINCT {text(person, 'r', d)} AS person, {tuple_hash(qids, 'r', d)} AS sig_now "
            f"FROM ({release_select}) AS r")


def version_class_persons(version: str, release: str, qids: list[str], d: Dialect) -> str:
    """SELECT DISTINCT (person, sig_now) of a published version: the classes each person's rows
    are in, the person from the private map (only counted by the caller)."""
    from ppdp.sql.history import tuple_hash

    return (f"SELECT DISTINCT pp.{quote_ident(PERSON, d)} AS person, {tuple_hash(qids, 'pp', d)} AS sig_now "
            f"FROM ({version_persons(version, release, qids, d, with_person=True)}) AS pp")


def new_person_keys(source: Source, key: str, person: str, persons_table: str, release: str, version: int) -> str:
    """Keys of every row of the persons in ``persons_table`` (one text column ``key``), less those
    already suppressed in ``version``: suppression of whole persons."""
    d = source.dialect
    rel = exp.Literal.string(release).sql(dialect=d.name)
    rows = person_rows_keys(source, key, person, f"SELECT key FROM {quote_table(PRIVATE_SCHEMA, persons_table, d)}")
    return (f"SELECT x.key FROM ({rows}) AS x WHERE NOT EXISTS (SELECT 1 FROM {quote_table(PRIVATE_SCHEMA, 'suppressed', d)} AS s "
            f"WHERE s.release = {rel} AND s.version = {int(version)} AND s.key = x.key)")


def as_relation(select_sql: str) -> str:
    """A SELECT of this module as a FROM-clause relation (aliased ``pp``), for the risk measures."""
    return f"({select_sql}) AS pp"
