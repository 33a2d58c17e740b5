"""SQL of ``ppdp report``: read-only queries over a release's published relations and ``_ppdp``.

Every identifier is quoted here; values (release identity, version) are bound parameters. The
queries return aggregates (counts per class size, per value, per class and sensitive value); the
report decides what of it to show (engine/app/report/gather.py).
"""

from __future__ import annotations

from sqlglot import exp

from ppdp.sql.catalog import private
from ppdp.sql.dialect import Dialect
from ppdp.sql.queries import text_expr
from ppdp.sql.quoting import columns, count_star, ident, quote_ident, render, slot


def _cols(cols: list[str], d: Dialect) -> str:
    return ", ".join(quote_ident(c, d) for c in cols)


def class_size_counts(relation: str, cols: list[str], d: Dialect) -> str:
    """(size, classes): how many equivalence classes on ``cols`` have each size."""
    sizes = exp.select(count_star("n")).from_(slot(alias="r")).group_by(*columns(cols))
    tree = (exp.select(exp.alias_(exp.column("n"), "size"), count_star("classes")).from_(sizes.subquery("c"))
            .group_by(exp.column("n")).order_by(exp.column("n")))
    return render(tree, d, {"relation": relation})


def _text(col: str, d: Dialect) -> exp.Expr:
    """Column ``col`` of the relation aliased ``r`` as canonical text (queries.text)."""
    return text_expr(exp.column(col, "r", quoted=True), d)


def _text_counts(relation: str, labelled: list[tuple[str, str]], d: Dialect) -> str:
    """SELECT each column's text AS its label, COUNT(*) AS n FROM the relation AS r, grouped by
    the texts (``labelled``: (column, label) pairs)."""
    texts = [_text(c, d) for c, _ in labelled]
    tree = (exp.select(*(exp.alias_(t, ident(label)) for t, (_, label) in zip(texts, labelled, strict=True)), count_star("n"))
            .from_(slot(alias="r")).group_by(*(t.copy() for t in texts)))
    return render(tree, d, {"relation": relation})


def value_counts(relation: str, cols: list[str], d: Dialect) -> str:
    """(c0, c1, ..., n): the published value (tuple) counts of ``cols``, as text."""
    return _text_counts(relation, [(c, f"c{i}") for i, c in enumerate(cols)], d)


def class_sensitive_counts(relation: str, qids: list[str], sensitive: list[str], d: Dialect) -> str:
    """(class hash, class labels q0.., sensitive labels s0.., n) per class and sensitive value."""
    return _text_counts(relation, [(c, f"q{i}") for i, c in enumerate(qids)] + [(c, f"s{i}") for i, c in enumerate(sensitive)], d)


def row_count(relation: str) -> str:
    return f"SELECT COUNT(*) AS n FROM {relation}"


def hierarchy_values(d: Dialect) -> str:
    """Per hierarchy value of one attribute of a version: the fewest leaves it stands for (a label
    can recur on several levels; the finest reading is what a user of the release can assume),
    and the attribute's number of leaves (params: release, version, attribute; the same again)."""
    h = private("hierarchies", d)
    return (f"SELECT value, MIN(leaf_count) AS leaves, (SELECT COUNT(DISTINCT leaf) FROM {h} "
            "WHERE release = ? AND version = ? AND attribute = ?) AS domain "
            f"FROM {h} WHERE release = ? AND version = ? AND attribute = ? GROUP BY value")


def hierarchy_attributes(d: Dialect) -> str:
    return f"SELECT DISTINCT attribute FROM {private('hierarchies', d)} WHERE release = ? AND version = ?"


def delta_counts(relation: str, d: Dialect) -> str:
    """(version, op, n): rows each delta step added ('+') and removed ('-')."""
    return (f"SELECT {quote_ident('version', d)} AS version, {quote_ident('op', d)} AS op, COUNT(*) AS n "
            f"FROM {relation} GROUP BY {quote_ident('version', d)}, {quote_ident('op', d)}")


def micro_group_sizes(d: Dialect) -> str:
    """(size, groups) of a microaggregation version's groups (params: release, version)."""
    return (f"SELECT n AS size, COUNT(*) AS groups FROM (SELECT grp, COUNT(*) AS n FROM {private('micro_groups', d)} "
            "WHERE release = ? AND version = ? GROUP BY grp) AS g GROUP BY n ORDER BY n")


def micro_group_labels(d: Dialect) -> str:
    """(grp, attribute, value) of a microaggregation version (params: release, version)."""
    return (f"SELECT grp, attribute, value FROM {private('micro_labels', d)} WHERE release = ? AND version = ? "
            "ORDER BY grp, attribute")


def range_widths(relation: str, lo: str, hi: str, d: Dialect) -> str:
    """(width, n): how many published records carry a numeric range of each width."""
    w = exp.paren(exp.Sub(this=exp.Column(this=ident(hi), table=exp.to_identifier("r")), expression=exp.Column(this=ident(lo), table=exp.to_identifier("r"))))
    tree = exp.select(exp.alias_(w, "width"), count_star("n")).from_(slot(alias="r")).group_by(w.copy()).order_by(exp.Literal.number(1))
    return render(tree, d, {"relation": relation})


def numeric_domain(relation: str, lo: str, hi: str, d: Dialect) -> str:
    """The smallest lower and largest upper bound published (the range widths' yardstick)."""
    low = exp.alias_(exp.Min(this=exp.Column(this=ident(lo), table=exp.to_identifier("r"))), "lo")
    high = exp.alias_(exp.Max(this=exp.Column(this=ident(hi), table=exp.to_identifier("r"))), "hi")
    return render(exp.select(low, high).from_(slot(alias="r")), d, {"relation": relation})

