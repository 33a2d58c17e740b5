"""Independent checks of a materialized version (SQL of its own, nothing shared with the search).

t-closeness is checked against the source distribution Q stored when the version was published
(``_ppdp.distributions``), so a version's check does not drift when the source changes later.

The history classes across versions (a row's presence, generalized labels and sensitive changes
in every version, followed by its ``ppdp_row_id``) are derived here again from the version tables
alone, without sql/history.py's hashed histories: one row per row id with its labels and
sensitive value in each version side by side, the classes numbered by DENSE_RANK over them. The
sensitive key of Q (``sa_key``) is the one thing shared: it is how Q is stored.
"""

from __future__ import annotations

from sqlglot import exp

from ppdp.sql.catalog import private, version_rows
from ppdp.sql.dialect import Dialect
from ppdp.sql.history import sa_key
from ppdp.sql.queries import ROW_ID, null_safe_eq, text
from ppdp.sql.quoting import quote_ident, quote_literal


def stored_q(release: str, version: int, d: Dialect) -> str:
    """FROM-able subquery (sa_key, q) of version ``version``'s stored Q (values as escaped literals)."""
    return exp.paren(version_rows("distributions", release, int(version), "sa_key", "q")).sql(dialect=d.name)


def verify_t_stored(relation: str, qids: list[str], sensitive: list[str], q_relation: str, d: Dialect) -> str:
    """Largest Euclidean distance (HAEF eq. 2-4) between a class's SA distribution and Q."""
    g = ", ".join(quote_ident(c, d) for c in qids)
    key = sa_key(sensitive, "r", d)
    return (
        f"WITH p AS (SELECT {', '.join(f'r.{quote_ident(c, d)}' for c in qids)}, {key} AS s, COUNT(*) AS nv FROM {relation} AS r "
        f"GROUP BY {', '.join(f'r.{quote_ident(c, d)}' for c in qids)}, {key}), "
        f"c AS (SELECT {g}, s, nv * 1.0 / SUM(nv) OVER (PARTITION BY {g}) AS p FROM p), "
        f"qq AS (SELECT SUM(qd.q * qd.q) AS s2 FROM {q_relation} AS qd), "
        f"dist AS (SELECT {', '.join(f'c.{quote_ident(x, d)}' for x in qids)}, "
        "SUM((c.p - COALESCE(q.q, 0)) * (c.p - COALESCE(q.q, 0)) - COALESCE(q.q, 0) * COALESCE(q.q, 0)) AS part "
        f"FROM c LEFT JOIN {q_relation} AS q ON q.sa_key = c.s GROUP BY {', '.join(f'c.{quote_ident(x, d)}' for x in qids)}) "
        "SELECT MAX(SQRT(GREATEST(part + (SELECT s2 FROM qq), 0))) AS ad, COUNT(*) AS classes FROM dist"
    )


def population_classes(source_sql: str, release: str, version: int, levels: dict[str, int], qids: list[str],
                       d: Dialect) -> str:
    """FROM-able subquery: the persons of a population (``source_sql``, a FROM clause aliased
    ``src``) per class of version ``version``: every QID generalized by the hierarchies stored
    with that version at the version's level (as the release generalizes its rows), then counted.
    Persons with a NULL quasi-identifier are in no class; a value that is no leaf gives NULL."""
    lit = quote_literal(release, d)
    joins, cols = [], []
    for i, q in enumerate(qids):
        a = f"h{i}"
        joins.append(f"LEFT JOIN {private('hierarchies', d)} AS {a} ON {a}.release = {lit} AND {a}.version = {int(version)} "
                     f"AND {a}.attribute = {quote_literal(q, d)} AND {a}.level = {int(levels[q])} AND {a}.leaf = {text(q, 'src', d)}")
        cols.append(f"{a}.value AS {quote_ident(q, d)}")
    not_null = " AND ".join(f"src.{quote_ident(q, d)} IS NOT NULL" for q in qids) or "1 = 1"
    keys = ", ".join(str(i + 1) for i in range(len(qids)))
    return (f"(SELECT {', '.join(cols)}, COUNT(*) AS persons FROM {source_sql} {' '.join(joins)} "
            f"WHERE {not_null} GROUP BY {keys})")


def _matched(qids: list[str], d: Dialect) -> str:
    return " AND ".join(null_safe_eq(f"r.{quote_ident(q, d)}", f"p.{quote_ident(q, d)}") for q in qids) or "1 = 1"


def _released_classes(relation: str, qids: list[str], d: Dialect) -> str:
    g = ", ".join(quote_ident(q, d) for q in qids)
    return f"(SELECT {g}, COUNT(*) AS n FROM {relation} GROUP BY {g})"


def verify_delta_presence(relation: str, qids: list[str], population: str, dmin: float, dmax: float, d: Dialect) -> str:
    """delta-presence of a version (Nergiz et al. 2007): over every class of the population
    and every released class, the largest distance of delta = released / persons outside
    [dmin, dmax] (a population class without released records has delta 0; a released class
    without persons fails with distance 1). One row (ad, classes)."""
    lo, hi = repr(float(dmin)), repr(float(dmax))
    delta = f"CAST(COALESCE(r.n, 0) AS {d.double_type}) / p.persons"
    dist = (f"CASE WHEN COALESCE(p.persons, 0) = 0 THEN 1.0 "
            f"ELSE GREATEST({lo} - {delta}, {delta} - {hi}, 0.0) END")
    return (f"SELECT MAX({dist}) AS ad, COUNT(*) AS classes FROM {_released_classes(relation, qids, d)} AS r "
            f"FULL OUTER JOIN {population} AS p ON {_matched(qids, d)}")


def verify_k_map(relation: str, qids: list[str], population: str, d: Dialect) -> str:
    """k-map against a population table: the fewest persons of the population in a released
    class (0 when a released class matches none). One row (ad, classes); ad NULL when empty."""
    return (f"SELECT MIN(COALESCE(p.persons, 0)) AS ad, COUNT(*) AS classes FROM {_released_classes(relation, qids, d)} AS r "
            f"LEFT JOIN {population} AS p ON {_matched(qids, d)}")


def _exact(cols: list[str], alias: str, d: Dialect) -> str:
    """An exact text form of ``alias``'s ``cols``: each value's length, a colon and the value, or
    '-' for NULL (never the start of a length), so two rows give the same text only when every
    value is the same."""
    if not cols:
        return "''"
    parts = [f"COALESCE(CAST(LENGTH({x}) AS VARCHAR) || ':' || {x}, '-')" for x in (text(c, alias, d) for c in cols)]
    return " || ".join(parts)


def history_classes(versions: list[tuple[int, str]], qids: list[str], sensitive: list[str], d: Dialect) -> str:
    """SELECT (rid, sig_now) of every row id in any of ``versions`` ((version, relation), oldest
    first): ``sig_now`` numbers its history class. Rows are in one class when, in every version,
    both are absent, or both are present with the same QID labels and both did or did not change
    their sensitive value since their last presence."""
    rid = quote_ident(ROW_ID, d)
    rows = " UNION ALL ".join(
        f"SELECT t.{rid} AS rid, {i} AS k, {_exact(qids, 't', d)} AS lab, {_exact(sensitive, 't', d)} AS sa FROM {rel} AS t"
        for i, (_, rel) in enumerate(versions))
    wide = ", ".join(f"MAX(CASE WHEN st.k = {i} THEN st.lab END) AS l{i}, MAX(CASE WHEN st.k = {i} THEN st.sa END) AS s{i}"
                     for i in range(len(versions)))

    def changed(i: int) -> str:  # the value differs from the one at the row's last presence before
        if i == 0:
            return "0"
        last = ", ".join(f"w.s{j}" for j in range(i - 1, -1, -1))
        return f"CASE WHEN w.s{i} <> COALESCE({last}) THEN 1 ELSE 0 END"

    order = ", ".join(f"w.l{i}, {changed(i)}" for i in range(len(versions)))
    return (f"SELECT w.rid AS rid, DENSE_RANK() OVER (ORDER BY {order}) AS sig_now "
            f"FROM (SELECT st.rid AS rid, {wide} FROM ({rows}) AS st GROUP BY st.rid) AS w")


def history_class_values(classes: str, relation: str, sensitive: list[str], d: Dialect) -> str:
    """SELECT (sig_now, s, n): per history class of ``classes`` (a relation of
    ``history_classes``) present in the version table ``relation``, its rows per sensitive key."""
    key = sa_key(sensitive, "t", d)
    return (f"SELECT h.sig_now AS sig_now, {key} AS s, COUNT(*) AS n FROM {relation} AS t "
            f"JOIN {classes} AS h ON h.rid = t.{quote_ident(ROW_ID, d)} GROUP BY h.sig_now, {key}")


def history_class_sizes(classes: str) -> str:
    """One row: the number of history classes of ``classes``, the row ids ever published, and
    the smallest class's size."""
    return ("SELECT COUNT(*) AS classes, SUM(c.n) AS rows_ever, MIN(c.n) AS smallest "
            f"FROM (SELECT h.sig_now, COUNT(*) AS n FROM {classes} AS h GROUP BY h.sig_now) AS c")
