"""SQL of a table's profile: the statistics ``auto`` hierarchies and ``ppdp suggest`` choose from,
for every column in ONE aggregate statement (one scan of the table).

Per column ``c`` (aliases ``c{i}_<stat>``, ``i`` the column's position in the list given):
rows (``COUNT(*)``, once, as ``n``), ``nn`` non-NULL values, ``nd`` distinct values (approximate
where the database has an estimator: DuckDB and Spark's HyperLogLog; PostgreSQL counts exactly),
for text columns ``lmin``/``lmax`` the shortest and longest text and ``code`` the values
whose text is code-shaped (``CODE_PATTERN``: letters and digits with at least one digit, such as
ZIP, ICD or phone numbers), and for numbers (as doubles) and dates (as text) ``vmin``/``vmax`` and, for numbers,
``q`` the approximate quantiles ``QUANTILES``. ``relation`` is SQL text already quoted by the
caller (``Source.sql()`` or ``quote_table``); every column name is quoted here.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from ppdp.sql.dialect import Dialect
from ppdp.sql.queries import text_expr
from ppdp.sql.quoting import count_star, ident, render, slot

QUANTILES = (0.01, 0.05, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 0.95, 0.99)
# A code: digits, possibly with letters and the separators of ZIP+4, ICD-10 or phone numbers.
CODE_PATTERN = r"^[A-Za-z]?[0-9][0-9A-Za-z.\- ]*$"


def _col(name: str) -> exp.Column:
    return exp.Column(this=ident(name))


def _text(c: exp.Expression, d: Dialect) -> exp.Expression:
    return exp.cast(c.copy(), exp.DataType.build(d.text_type, dialect=d.name))


def _distinct(c: exp.Expression, d: Dialect) -> exp.Expression:
    if d.name == "postgres":  # no estimator built in: exact
        return exp.Count(this=exp.Distinct(expressions=[c.copy()]))
    return exp.ApproxDistinct(this=c.copy())


def _quantiles(c: exp.Expression, d: Dialect) -> exp.Expression:
    qs = exp.Array(expressions=[exp.Literal.number(q) for q in QUANTILES])
    if d.name == "postgres":
        return exp.WithinGroup(this=exp.Anonymous(this="percentile_disc", expressions=[qs]),
                               expression=exp.Order(expressions=[exp.Ordered(this=c.copy())]))
    return exp.ApproxQuantile(this=exp.cast(c.copy(), exp.DataType.build("double")), quantile=qs)


def profile_query(relation: str, cols: list[tuple[str, str]], d: Dialect) -> str:
    """One row: the statistics above for each ``(name, kind)``; ``kind`` is "number", "date" or
    "text" (the caller's reading of the column's SQL type)."""
    parts: list[Any] = [count_star("n")]
    for i, (name, kind) in enumerate(cols):
        c = _col(name)
        text = _text(c, d)
        code = exp.Case(ifs=[exp.If(this=exp.RegexpLike(this=text.copy(), expression=exp.Literal.string(CODE_PATTERN)),
                                    true=exp.Literal.number(1))], default=exp.Literal.number(0))
        parts += [exp.alias_(exp.Count(this=c.copy()), f"c{i}_nn"), exp.alias_(_distinct(c, d), f"c{i}_nd")]
        if kind == "text":  # lengths and code shapes of text only (a regex per row is the costly part)
            parts += [exp.alias_(exp.Min(this=exp.Length(this=text.copy())), f"c{i}_lmin"),
                      exp.alias_(exp.Max(this=exp.Length(this=text.copy())), f"c{i}_lmax"),
                      exp.alias_(exp.Sum(this=code), f"c{i}_code")]
        if kind == "number":
            parts += [exp.alias_(exp.cast(exp.Min(this=c.copy()), exp.DataType.build("double")), f"c{i}_vmin"),
                      exp.alias_(exp.cast(exp.Max(this=c.copy()), exp.DataType.build("double")), f"c{i}_vmax")]
        if kind == "date":  # as text: a database's dates reach past Python's year 9999
            parts += [exp.alias_(_text(exp.Min(this=c.copy()), d), f"c{i}_vmin"), exp.alias_(_text(exp.Max(this=c.copy()), d), f"c{i}_vmax")]
        if kind == "number":
            parts.append(exp.alias_(_quantiles(c, d), f"c{i}_q"))
    return render(exp.select(*parts).from_(slot()), d, {"relation": relation})


def value_counts_query(relation: str, column: str, d: Dialect) -> str:
    """``(v, n)``: every non-NULL value of ``column`` as its canonical text (the leaves' text,
    sql/queries.py ``text_expr``) with its number of rows."""
    c = _col(column)
    tree = (exp.select(exp.alias_(text_expr(c, d), "v"), count_star("n")).from_(slot())
            .where(exp.Not(this=exp.Is(this=c.copy(), expression=exp.Null()))).group_by(c.copy()))
    return render(tree, d, {"relation": relation})


def repeat_query(relation: str, column: str, d: Dialect) -> str:
    """One row ``(groups, repeated)``: the number of distinct non-NULL values of ``column`` and
    how many of them occur on more than one row (a person column repeats across rows)."""
    c = _col(column)
    inner = (exp.select(count_star("m")).from_(slot())
             .where(exp.Not(this=exp.Is(this=c.copy(), expression=exp.Null()))).group_by(c.copy()))
    rep = exp.Sum(this=exp.Case(ifs=[exp.If(this=exp.GT(this=exp.column("m"), expression=exp.Literal.number(1)),
                                            true=exp.Literal.number(1))], default=exp.Literal.number(0)))
    tree = exp.select(count_star("groups"), exp.alias_(rep, "repeated")).from_(inner.subquery("g"))
    return render(tree, d, {"relation": relation})


def varying_per_person_query(relation: str, person: str, columns: list[str], d: Dialect) -> str:
    """One row: for each of ``columns`` (alias ``c{i}``, ``i`` its position), the number of persons
    (distinct values of ``person``) whose rows hold more than one value of it -- a quasi-identifier
    that varies by row, not by person."""
    p = _col(person)
    inner = exp.select(p.copy(), *(exp.alias_(exp.Count(this=exp.Distinct(expressions=[_col(c)])), f"n{i}")
                                   for i, c in enumerate(columns))).from_(slot()).group_by(p.copy())
    outer = exp.select(*(exp.alias_(exp.Sum(this=exp.Case(
        ifs=[exp.If(this=exp.GT(this=exp.column(f"n{i}"), expression=exp.Literal.number(1)), true=exp.Literal.number(1))],
        default=exp.Literal.number(0))), f"c{i}") for i in range(len(columns)))).from_(inner.subquery("per_person"))
    return render(outer, d, {"relation": relation})


def exact_distinct_query(relation: str, column: str, d: Dialect) -> str:
    """One row ``d``: the exact number of distinct non-NULL values of ``column``."""
    tree = exp.select(exp.alias_(exp.Count(this=exp.Distinct(expressions=[_col(column)])), "d")).from_(slot())
    return render(tree, d, {"relation": relation})


def all_rows_query(relation: str, d: Dialect) -> str:
    """Every row and column of the relation."""
    return render(exp.select(exp.Star()).from_(slot()), d, {"relation": relation})


def block_sample_query(table: str, percent: float, d: Dialect) -> str:
    """About ``percent`` % of a table's rows, read by blocks (only those blocks are scanned), the
    same blocks on every call: for estimates that need not be exact. ``table`` is a quoted table."""
    p = f"{min(max(float(percent), 0.0001), 100.0):.4f}"
    if d.name == "duckdb":
        return f"SELECT * FROM {table} USING SAMPLE {p}% (system, 1)"
    if d.name == "postgres":
        return f"SELECT * FROM {table} TABLESAMPLE SYSTEM ({p}) REPEATABLE (1)"
    return f"SELECT * FROM {table} TABLESAMPLE ({p} PERCENT)"


def sample_query(relation: str, rows: int, d: Dialect) -> str:
    """``rows`` rows of the relation drawn at random (DuckDB: a repeatable reservoir sample)."""
    if d.name == "duckdb":
        return f"SELECT * FROM {relation} USING SAMPLE reservoir({int(rows)} ROWS) REPEATABLE (1)"
    if d.name == "postgres":
        return f"SELECT * FROM {relation} ORDER BY md5(CAST(random() AS VARCHAR)) LIMIT {int(rows)}"
    return f"SELECT * FROM {relation} ORDER BY rand(1) LIMIT {int(rows)}"
