"""SQL of the re-identification risk measures: class sizes and their frequencies, counted by
GROUP BY in the database (DuckDB, PostgreSQL, Spark); the estimators run on the small results.

``relation`` arguments are SQL relations already quoted by the caller (quote_table); column
names are quoted here. NULL is a value of its own, as GROUP BY treats it.
"""

from __future__ import annotations

from sqlglot import exp

from ppdp.sql.dialect import Dialect
from ppdp.sql.quoting import columns, count_star, ident, quote_ident, render, slot


def _group(cols: list[str], d: Dialect) -> str:
    return ", ".join(quote_ident(c, d) for c in cols)


def _double(d: Dialect) -> str:
    return d.double_type


def _sizes(cols: list[str], *projections: exp.Expr) -> exp.Select:
    """SELECT ``projections`` (COUNT(*) AS n: none given) FROM the relation (``slot()``) GROUP BY ``cols``."""
    return exp.select(*(projections or [count_star("n")])).from_(slot()).group_by(*columns(cols))


def class_sizes(relation: str, cols: list[str], d: Dialect) -> str:
    """Frequency of frequencies: (size, classes) — how many classes have each size."""
    return render(exp.select(exp.alias_(exp.column("n"), "size"), count_star("classes")).from_(_sizes(cols).subquery("c"))
            .group_by(exp.column("n")), d, {"relation": relation})


def combination_sizes(relation: str, combos: list[list[str]], d: Dialect) -> str:
    """(combo, size, classes) for several column combinations in one statement."""
    parts = [exp.select(exp.alias_(exp.Literal.number(i), "combo"), exp.alias_(exp.column("n"), "size"), count_star("classes"))
             .from_(_sizes(cols).subquery(f"c{i}")).group_by(exp.column("n")) for i, cols in enumerate(combos)]
    return render(exp.union(*parts, distinct=False), d, {"relation": relation})


def weighted_sizes(relation: str, cols: list[str], weight: str, d: Dialect) -> str:
    """(fk, fw, classes): classes by sample size fk and sum of sampling weights fw (sdcMicro's
    fk and Fk)."""
    w = exp.cast(exp.Column(this=ident(weight)), exp.DataType.build("double"))
    sizes = _sizes(cols, count_star("fk"), exp.alias_(exp.Sum(this=w), "fw"))
    fk, fw = exp.column("fk"), exp.column("fw")
    return render(exp.select(fk, fw, count_star("classes")).from_(sizes.subquery("c")).group_by(fk.copy(), fw.copy()), d,
                  {"relation": relation})


def weight_summary(relation: str, weight: str, d: Dialect) -> str:
    """One row (nulls, smallest): the rows whose sampling weight is NULL, and the smallest weight."""
    w = exp.cast(exp.Column(this=ident(weight)), exp.DataType.build("double"))
    nulls = exp.Sub(this=exp.Count(this=exp.Star()), expression=exp.Count(this=w.copy()))
    return render(exp.select(exp.alias_(nulls, "nulls"), exp.alias_(exp.Min(this=w), "smallest")).from_(slot()), d,
                  {"relation": relation})


def population_sizes(sample: str, population: str, cols: list[str], d: Dialect) -> str:
    """(size, population_size, classes): each sample class's size and the size of the matching
    class in the population table (NULL where the population has no person in the class)."""
    g = _group(cols, d)
    on = exp.and_(*[exp.NullSafeEQ(this=exp.Column(this=ident(c), table=ident("s")),
                                   expression=exp.Column(this=ident(c), table=ident("p"))) for c in cols]).sql(dialect=d.name)
    return (f"WITH s AS (SELECT {g}, COUNT(*) AS n FROM {sample} GROUP BY {g}), "
            f"p AS (SELECT {g}, COUNT(*) AS pn FROM {population} GROUP BY {g}) "
            f"SELECT s.n AS size, p.pn AS population_size, COUNT(*) AS classes "
            f"FROM s LEFT JOIN p ON {on} GROUP BY s.n, p.pn")


def average_risk_check(relation: str, qids: list[str], small: int, records_at_risk: float | None, d: Dialect) -> str:
    """The average-risk model's check: one row (ad, classes). ad = classes / records (the
    average prosecutor risk), or 1 + the share of records in classes smaller than ``small``
    when that share exceeds ``records_at_risk`` (ARX's AverageReidentificationRisk); NULL when
    the relation is empty."""
    dbl = _double(d)
    avg = f"CAST(COUNT(*) AS {dbl}) / SUM(n)"
    if records_at_risk is None:
        ad = avg
    else:
        share = f"CAST(SUM(CASE WHEN n < {int(small)} THEN n ELSE 0 END) AS {dbl}) / SUM(n)"
        ad = f"CASE WHEN {share} <= {float(records_at_risk)!r} THEN {avg} ELSE 1.0 + {share} END"
    # ``ad`` is fixed text (numbers formatted here); the relation and QIDs enter as expressions
    return render(exp.select(f"{ad} AS ad", "COUNT(*) AS classes", dialect=d.name).from_(_sizes(qids).subquery("c")), d,
                  {"relation": relation})


def sample_uniques_check(relation: str, qids: list[str], d: Dialect) -> str:
    """The sample-uniqueness model's check: one row (ad = share of records alone in their class,
    classes)."""
    ad = f"CAST(SUM(CASE WHEN n = 1 THEN 1 ELSE 0 END) AS {_double(d)}) / SUM(n) AS ad"
    return render(exp.select(ad, "COUNT(*) AS classes", dialect=d.name).from_(_sizes(qids).subquery("c")), d,
                  {"relation": relation})
