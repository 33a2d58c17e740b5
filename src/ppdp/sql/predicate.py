"""A user's SQL predicate over the source (delta-presence's research subset), parsed and checked.

The predicate is user text: it is never pasted into a statement. sqlglot parses it, every node
must be of a kind on the allow-list below (comparisons, boolean connectives, arithmetic, literals,
columns and a few scalar functions: no subquery, no statement, no table, no placeholder), every
column must be one the source has, and the statement text is then generated from the checked
tree with every column quoted and qualified by the source's alias.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from ppdp.sql.dialect import Dialect
from ppdp.sql.errors import build_error

# Node kinds a predicate may contain. Anything else (Select, Subquery, Table, Star, Placeholder,
# Parameter, Anonymous functions, window functions, ...) is refused.
_ALLOWED: tuple[type[exp.Expression], ...] = (
    exp.Column, exp.Identifier, exp.Literal, exp.Boolean, exp.Null, exp.Paren,
    exp.And, exp.Or, exp.Not, exp.Xor,
    exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Is, exp.In, exp.Between, exp.Like, exp.ILike,
    exp.NullSafeEQ, exp.NullSafeNEQ,
    exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.Neg,
    exp.Cast, exp.DataType, exp.DataTypeParam, exp.Tuple,
    exp.Lower, exp.Upper, exp.Abs, exp.Length, exp.Coalesce, exp.Substring, exp.Trim,
)
# The root must be a truth value, not a number or a column.
_BOOLEAN_ROOTS: tuple[type[exp.Expression], ...] = (
    exp.And, exp.Or, exp.Not, exp.Xor, exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Is, exp.In,
    exp.Between, exp.Like, exp.ILike, exp.NullSafeEQ, exp.NullSafeNEQ, exp.Boolean,
)


def parse_predicate(text: str, what: str, dialect: Dialect) -> exp.Expr:
    """``text`` as one boolean expression tree, or a one-line error naming ``what``."""
    if not isinstance(text, str) or not text.strip():
        raise build_error(f"{what} must be a non-empty SQL predicate, got {text!r}. Hint: research = \"age > 40\".")
    try:
        parsed = sqlglot.parse(text, read=dialect.name)
    except sqlglot.errors.SqlglotError as exc:
        raise build_error(f"{what} is not a valid SQL predicate: {str(exc).splitlines()[0]}") from None
    if len(parsed) != 1 or parsed[0] is None:
        raise build_error(f"{what} must be exactly one boolean expression (no ';', no statements).")
    tree = parsed[0]
    for node in tree.walk():
        if not isinstance(node, _ALLOWED):
            raise build_error(f"{what} may only compare source columns with values (found {node.key.upper()}: "
                              "no subqueries, statements, tables or other functions).")
    root = tree.unnest()
    if not isinstance(root, _BOOLEAN_ROOTS):
        raise build_error(f"{what} must be a condition (true or false per row), got {root.sql(dialect=dialect.name)!r}. "
                          "Hint: research = \"age > 40\".")
    for col in tree.find_all(exp.Column):
        if col.table:
            raise build_error(f"{what} names column {col.sql(dialect=dialect.name)!r} with a table; name source columns alone.")
    return tree


def predicate_columns(tree: exp.Expr) -> set[str]:
    """The column names a parsed predicate reads."""
    return {c.name for c in tree.find_all(exp.Column)}


def check_columns(tree: exp.Expr, what: str, columns: list[str]) -> None:
    """Refuse a predicate that reads a column the source does not have."""
    unknown = sorted(predicate_columns(tree) - set(columns))
    if unknown:
        raise build_error(f"{what} reads column(s) {', '.join(map(repr, unknown))} that the source does not have.")


def qualified(tree: exp.Expr, alias: str) -> exp.Expr:
    """The checked predicate over ``alias``: every column quoted and qualified, parenthesized."""
    out = tree.copy()
    for col in list(out.find_all(exp.Column)):
        col.replace(exp.column(col.name, alias, quoted=True))
    return exp.Paren(this=out)


def predicate_sql(tree: exp.Expr, alias: str, dialect: Dialect) -> str:
    """The checked predicate as SQL text over ``alias``."""
    return qualified(tree, alias).sql(dialect=dialect.name)
