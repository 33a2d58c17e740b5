"""SQL of the sensitive-distribution models: EMD t-closeness (equal, ordered, hierarchical ground
distance, Li et al. 2007), recursive (c, l)-diversity (Machanavajjhala et al. 2007) and
beta-likeness (Cao and Karras 2012), over a published version or over history classes.

Every check is written once over a relation of class counts ``(cid, s, n)`` (class id, sensitive
key as stored with Q, records): ``version_counts`` builds it from a published table, and
``history_counts`` from ``sql.history.class_values`` (the history classes of one version). Each
distance gives ``(cid, e)`` per class; ``version_check`` wraps it into the one row ``(ad,
classes)`` of a version check, ``failing`` into the rows ``(sig_now, ad)`` of the classes over a
bound. Ground-distance data (an order of the sensitive values, a hierarchy over them) enter as a
literal relation of escaped text values (``literal_rows``), keyed in SQL by the same ``sa_key``
as Q, so nothing of the user's data is pasted unescaped.
"""

from __future__ import annotations

from collections.abc import Sequence

from ppdp.sql.dialect import Dialect
from ppdp.sql.history import sa_key
from ppdp.sql.quoting import quote_ident, quote_literal

# A class with fewer than l values fails recursive (c, l)-diversity whatever c: its AD in SQL.
NOT_DIVERSE = 1e300


def _cols(cols: list[str], alias: str, d: Dialect) -> str:
    return ", ".join(f"{alias}.{quote_ident(c, d)}" for c in cols)


def version_counts(relation: str, qids: list[str], sensitive: list[str], d: Dialect) -> str:
    """(cid, s, n): records per (class, sensitive value) of a published table; classes numbered
    by DENSE_RANK over their QID labels (NULL labels form a class like any other)."""
    g = _cols(qids, "x", d)
    return (f"SELECT DENSE_RANK() OVER (ORDER BY {g}) AS cid, x.s AS s, x.n AS n FROM "
            f"(SELECT {_cols(qids, 'r', d)}, {sa_key(sensitive, 'r', d)} AS s, COUNT(*) AS n FROM {relation} AS r "
            f"GROUP BY {_cols(qids, 'r', d)}, {sa_key(sensitive, 'r', d)}) AS x")


def history_counts(values: str) -> str:
    """(cid, s, n) of the history classes of one version (``sql.history.class_values``)."""
    return f"SELECT cv.sig_now AS cid, cv.s AS s, cv.n AS n FROM ({values}) AS cv"


def _shares(counts: str) -> str:
    """(cid, s, p): each value's share of its class."""
    return f"SELECT k.cid, k.s, k.n * 1.0 / SUM(k.n) OVER (PARTITION BY k.cid) AS p FROM ({counts}) AS k"


def literal_rows(columns: Sequence[str], rows: Sequence[Sequence[str | int | None]], d: Dialect) -> str:
    """A relation of literal rows: text as escaped literals, integers as numbers, None as NULL."""
    def lit(v: str | int | None) -> str:
        if v is None:
            return f"CAST(NULL AS {d.text_type})"
        if isinstance(v, int):
            return str(int(v))
        return quote_literal(v, d)
    return " UNION ALL ".join(
        "SELECT " + ", ".join(f"{lit(v)} AS {quote_ident(c, d)}" for c, v in zip(columns, row, strict=True)) for row in rows)


def order_relation(columns: list[str], rows: Sequence[Sequence[str | None]], ranks: Sequence[int], d: Dialect) -> str:
    """(k, rnk): the sa_key of each sensitive value (its text per column in ``rows``) and its rank."""
    lit = literal_rows([*columns, "rnk"], [(*r, int(k)) for r, k in zip(rows, ranks, strict=True)], d)
    return f"SELECT {sa_key(columns, 'ov', d)} AS k, ov.rnk AS rnk FROM ({lit}) AS ov"


def tree_relation(columns: list[str], rows: Sequence[Sequence[str | None]], node: Sequence[Sequence[int]], d: Dialect) -> str:
    """(k, lvl, child, parent): for each sensitive value (``rows``) and level lvl in 1..H, its
    ancestor ids at lvl - 1 and lvl (``node[j][i]``: value i's ancestor at level j)."""
    lit = literal_rows([*columns, "lvl", "child", "parent"],
                       [(*r, j, int(node[j - 1][i]), int(node[j][i])) for i, r in enumerate(rows) for j in range(1, len(node))], d)
    return f"SELECT {sa_key(columns, 'tv', d)} AS k, tv.lvl, tv.child, tv.parent FROM ({lit}) AS tv"


def equal_distance(counts: str, q_relation: str) -> str:
    """(cid, e): EMD with equal ground distance, 1/2 sum_i |p_i - q_i| (Li et al. 2007, as ARX's
    EqualDistanceTCloseness): values absent from a class add their q, so e = 1/2 (sum q +
    sum over present (|p - q| - q))."""
    return (f"SELECT c.cid, 0.5 * ((SELECT SUM(qa.q) FROM {q_relation} AS qa) "
            f"+ SUM(ABS(c.p - COALESCE(q.q, 0)) - COALESCE(q.q, 0))) AS e "
            f"FROM ({_shares(counts)}) AS c LEFT JOIN {q_relation} AS q ON q.sa_key = c.s GROUP BY c.cid")


def ordered_distance(counts: str, q_relation: str, order: str, m: int) -> str:
    """(cid, e): EMD with ordered ground distance, 1/(m-1) sum_i |sum_{j<=i} (p_j - q_j)| over
    the m values in their order (Li et al. 2007; ARX's OrderedDistanceTCloseness). ``order``
    has columns (k, rnk): the sa_key of each value and its position."""
    scale = max(m - 1, 1)
    return (
        f"SELECT cum.cid, SUM(ABS(cum.cs)) / {scale}.0 AS e FROM ("
        f"SELECT g.cid, g.rnk, SUM(COALESCE(c.p, 0) - COALESCE(q.q, 0)) OVER (PARTITION BY g.cid ORDER BY g.rnk "
        f"ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS cs FROM "
        f"(SELECT cl.cid, o.k, o.rnk FROM (SELECT DISTINCT k0.cid FROM ({counts}) AS k0) AS cl CROSS JOIN ({order}) AS o) AS g "
        f"LEFT JOIN ({_shares(counts)}) AS c ON c.cid = g.cid AND c.s = g.k "
        f"LEFT JOIN {q_relation} AS q ON q.sa_key = g.k) AS cum GROUP BY cum.cid"
    )


def hierarchical_distance(counts: str, q_relation: str, tree: str, height: int) -> str:
    """(cid, e): EMD with hierarchical ground distance (Li et al. 2007; ARX's
    HierarchicalDistanceTCloseness): sum over inner nodes N of level(N)/H * min(pos(N), neg(N)),
    where a child's net extra is the sum of p - q over its leaves and pos/neg sum the positive /
    negative nets of N's children. ``tree`` has columns (k, lvl, child, parent): for each leaf
    (sa_key k) and level lvl in 1..H, its ancestor ids at lvl - 1 and at lvl."""
    return (
        f"SELECT nd.cid, SUM(nd.lvl * LEAST(nd.pos, nd.neg)) / {max(height, 1)}.0 AS e FROM ("
        f"SELECT nt.cid, nt.lvl, nt.parent, SUM(CASE WHEN nt.x > 0 THEN nt.x ELSE 0 END) AS pos, "
        f"SUM(CASE WHEN nt.x < 0 THEN -nt.x ELSE 0 END) AS neg FROM ("
        f"SELECT g.cid, g.lvl, g.parent, g.child, SUM(COALESCE(c.p, 0) - COALESCE(q.q, 0)) AS x FROM "
        f"(SELECT cl.cid, t.k, t.lvl, t.child, t.parent FROM (SELECT DISTINCT k0.cid FROM ({counts}) AS k0) AS cl "
        f"CROSS JOIN ({tree}) AS t) AS g "
        f"LEFT JOIN ({_shares(counts)}) AS c ON c.cid = g.cid AND c.s = g.k "
        f"LEFT JOIN {q_relation} AS q ON q.sa_key = g.k GROUP BY g.cid, g.lvl, g.parent, g.child) AS nt "
        f"GROUP BY nt.cid, nt.lvl, nt.parent) AS nd GROUP BY nd.cid"
    )


def recursive_ratio(counts: str, l_min: int) -> str:
    """(cid, e): r_1 / (r_l + ... + r_m) of a class's counts in descending order (Machanavajjhala
    et al. 2007, Def. 4.1; ARX's RecursiveCLDiversity); NOT_DIVERSE when it has fewer than l values."""
    return (
        f"SELECT rk.cid, CASE WHEN COUNT(*) < {int(l_min)} THEN {NOT_DIVERSE!r} "
        f"ELSE MAX(rk.n) * 1.0 / SUM(CASE WHEN rk.i >= {int(l_min)} THEN rk.n ELSE 0 END) END AS e FROM "
        f"(SELECT k.cid, k.n, ROW_NUMBER() OVER (PARTITION BY k.cid ORDER BY k.n DESC) AS i FROM ({counts}) AS k) AS rk "
        f"GROUP BY rk.cid"
    )


def likeness_excess(counts: str, q_relation: str, beta: float, enhanced: bool) -> str:
    """(cid, e): the largest excess of a present value's relative gain (p - q) / q over its bound,
    beta (basic) or min(beta, -ln q) (enhanced) (Cao and Karras 2012; ARX's BasicBLikeness,
    EnhancedBLikeness). A value without a Q row fails (NOT_DIVERSE)."""
    b = f"{float(beta)!r}"
    bound = f"LEAST({b}, -LN(q.q))" if enhanced else b
    return (f"SELECT c.cid, MAX(CASE WHEN q.q IS NULL OR q.q <= 0 THEN {NOT_DIVERSE!r} "
            f"ELSE (c.p - q.q) / q.q - {bound} END) AS e "
            f"FROM ({_shares(counts)}) AS c LEFT JOIN {q_relation} AS q ON q.sa_key = c.s GROUP BY c.cid")


def with_largest_gain(check: str, counts: str, q_relation: str) -> str:
    """A version check's row (ad, classes) with ``gain``: the largest relative gain (p - q) / q
    of a value in a class over the version (what beta-likeness bounds; Cao and Karras 2012)."""
    return (f"SELECT v.ad, v.classes, g.gain FROM ({check}) AS v CROSS JOIN "
            f"(SELECT MAX((c.p - q.q) / q.q) AS gain FROM ({_shares(counts)}) AS c "
            f"JOIN {q_relation} AS q ON q.sa_key = c.s AND q.q > 0) AS g")


def disclosure_gap(counts: str, q_relation: str) -> str:
    """(cid, e): the largest |log2(p / q)| over the values present in a class (Brickell and
    Shmatikov 2008, as ARX's DDisclosurePrivacy: base 2, absent values unchecked). A value
    without a Q row fails (NOT_DIVERSE)."""
    return (f"SELECT c.cid, MAX(CASE WHEN q.q IS NULL OR q.q <= 0 THEN {NOT_DIVERSE!r} "
            f"ELSE ABS(LN(c.p / q.q) / LN(2.0)) END) AS e "
            f"FROM ({_shares(counts)}) AS c LEFT JOIN {q_relation} AS q ON q.sa_key = c.s GROUP BY c.cid")


def version_check(per_class: str) -> str:
    """The one row (ad, classes) of a version check: the largest per-class value (NULL: empty)."""
    return f"SELECT MAX(pc.e) AS ad, COUNT(*) AS classes FROM ({per_class}) AS pc"


def failing(per_class: str, bound: float, *, strict: bool = False, tolerance: float = 1e-9) -> str:
    """History classes (sig_now, ad) whose value is above ``bound`` (at or above it: ``strict``,
    for a model that needs e < bound)."""
    cond = f"pc.e >= {float(bound)!r}" if strict else f"pc.e > {float(bound)!r} + {tolerance!r}"
    return f"SELECT pc.cid AS sig_now, pc.e AS ad FROM ({per_class}) AS pc WHERE {cond}"
