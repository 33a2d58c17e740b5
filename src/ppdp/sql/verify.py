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

from ppdp.sql.catalog import private_table, version_rows
from ppdp.sql.dialect import Dialect
from ppdp.sql.history import sa_key
from ppdp.sql.queries import ROW_ID, text, text_expr
from ppdp.sql.quoting import columns, count_star, ident, quote_ident, render, slot


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
    tree = exp.select().from_(slot("source"))
    for i, q in enumerate(qids):
        a = f"h{i}"
        on = exp.and_(exp.column("release", a).eq(exp.Literal.string(release)),
                      exp.column("version", a).eq(exp.Literal.number(int(version))),
                      exp.column("attribute", a).eq(exp.Literal.string(q)),
                      exp.column("level", a).eq(exp.Literal.number(int(levels[q]))),
                      exp.column("leaf", a).eq(text_expr(exp.column(q, "src", quoted=True), d)))
        hierarchies = private_table("hierarchies")
        hierarchies.set("alias", exp.TableAlias(this=exp.to_identifier(a)))  # ppdp's alias, unquoted
        tree = tree.join(hierarchies, on=on, join_type="LEFT", copy=False)
    tree = tree.select(*(exp.alias_(exp.column("value", f"h{i}"), ident(q)) for i, q in enumerate(qids)), count_star("persons"),
                       copy=False)
    # sqlglot writes IS NOT NULL as NOT x IS NULL (NOT binds looser than IS in every dialect)
    not_null = [exp.Column(this=ident(q), table=exp.to_identifier("src")).is_(exp.null()).not_() for q in qids]
    tree = tree.where(exp.and_(*not_null) if not_null else _one_is_one(), copy=False)
    tree = tree.group_by(*(exp.Literal.number(i + 1) for i in range(len(qids))), copy=False)
    return render(exp.paren(tree), d, {"source": source_sql})


def _one_is_one() -> exp.Expr:
    return exp.EQ(this=exp.Literal.number(1), expression=exp.Literal.number(1))


def _matched(qids: list[str]) -> exp.Expr:
    """The released class ``r`` and the population class ``p`` agree on every QID (null_safe_eq)."""
    conds: list[exp.Expr] = []
    for q in qids:
        r, p = exp.Column(this=ident(q), table=exp.to_identifier("r")), exp.Column(this=ident(q), table=exp.to_identifier("p"))
        empty = exp.Literal.string("")
        conds += [exp.EQ(this=exp.Coalesce(this=r, expressions=[empty]), expression=exp.Coalesce(this=p, expressions=[empty.copy()])),
                  exp.EQ(this=exp.paren(r.copy().is_(exp.null())), expression=exp.paren(p.copy().is_(exp.null())))]
    return exp.and_(*conds) if conds else _one_is_one()


def _released_classes(qids: list[str]) -> exp.Subquery:
    """(QIDs, n) per released class of the relation (``slot()``), aliased ``r``."""
    return exp.select(*columns(qids), count_star("n")).from_(slot()).group_by(*columns(qids)).subquery("r")


def _against_population(ad: exp.Expr, relation: str, qids: list[str], population: str, join_type: str, d: Dialect) -> str:
    """SELECT ``ad`` AS ad, COUNT(*) AS classes FROM the released classes ``join_type`` JOIN the
    population's (``population``, aliased ``p``) on the QIDs."""
    tree = (exp.select(exp.alias_(ad, "ad"), count_star("classes")).from_(_released_classes(qids))
            .join(slot("population", alias="p"), on=_matched(qids), join_type=join_type))
    return render(tree, d, {"relation": relation, "population": population})


def verify_delta_presence(relation: str, qids: list[str], population: str, dmin: float, dmax: float, d: Dialect) -> str:
    """delta-presence of a version (Nergiz et al. 2007): over every class of the population
    and every released class, the largest distance of delta = released / persons outside
    [dmin, dmax] (a population class without released records has delta 0; a released class
    without persons fails with distance 1). One row (ad, classes)."""
    def delta() -> exp.Expr:
        released = exp.Coalesce(this=exp.column("n", "r"), expressions=[exp.Literal.number(0)])
        return exp.Div(this=exp.cast(released, exp.DataType.build(d.double_type, dialect=d.name)), expression=exp.column("persons", "p"))

    no_persons = exp.EQ(this=exp.Coalesce(this=exp.column("persons", "p"), expressions=[exp.Literal.number(0)]),
                        expression=exp.Literal.number(0))
    # GREATEST as written (no NULL reaches it: sqlglot's Greatest adds NULL checks for DuckDB)
    outside = exp.Anonymous(this="GREATEST", expressions=[
        exp.Sub(this=exp.Literal.number(repr(float(dmin))), expression=delta()),
        exp.Sub(this=delta(), expression=exp.Literal.number(repr(float(dmax)))), exp.Literal.number("0.0")])
    dist = exp.Case(ifs=[exp.If(this=no_persons, true=exp.Literal.number("1.0"))], default=outside)
    return _against_population(exp.Max(this=dist), relation, qids, population, "FULL OUTER", d)


def verify_k_map(relation: str, qids: list[str], population: str, d: Dialect) -> str:
    """k-map against a population table: the fewest persons of the population in a released
    class (0 when a released class matches none). One row (ad, classes); ad NULL when empty."""
    persons = exp.Coalesce(this=exp.column("persons", "p"), expressions=[exp.Literal.number(0)])
    return _against_population(exp.Min(this=persons), relation, qids, population, "LEFT", d)


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
