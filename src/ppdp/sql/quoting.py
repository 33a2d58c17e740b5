"""Identifier quoting. Every name that comes from a user goes through here (or sqlglot)."""

from __future__ import annotations

import functools

from sqlglot import exp

from ppdp.sql.dialect import Dialect


def ident(name: str) -> exp.Identifier:
    """A always-quoted sqlglot identifier."""
    return exp.Identifier(this=name, quoted=True)


def quote_ident(name: str, dialect: Dialect) -> str:
    """``name`` as a quoted identifier in ``dialect`` (embedded quotes doubled)."""
    return _quoted(name, dialect)


@functools.lru_cache(maxsize=4096)
def _quoted(name: str, dialect: Dialect) -> str:
    """Cached: a pure function of its arguments, and sqlglot's generation per call was most of
    building a small table's histogram query (17 identifiers)."""
    return ident(name).sql(dialect=dialect.name)


def quote_table(schema: str | None, name: str, dialect: Dialect) -> str:
    return (f"{quote_ident(schema, dialect)}." if schema else "") + quote_ident(name, dialect)


def table_expr(schema: str | None, name: str, alias: str | None = None) -> exp.Table:
    t = exp.Table(this=ident(name), db=ident(schema) if schema else None)
    if alias:
        t.set("alias", exp.TableAlias(this=ident(alias)))
    return t


_SLOT = "ppdp_relation_slot_"


def slot(name: str = "relation", alias: str | None = None) -> exp.Table:
    """A stand-in table for a relation a builder is handed as SQL text (a table ``quote_table``
    quoted, or a FROM item such as ``Source.sql()``, subquery and alias included): the builder
    composes its expression around it and ``render`` puts the text in its place verbatim, so a
    relation is never parsed and generated again."""
    table = exp.Table(this=ident(_SLOT + name))
    if alias:  # ppdp's own short alias, unquoted as the templates wrote it
        table.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
    return table


def render(tree: exp.Expr, dialect: Dialect, relations: dict[str, str]) -> str:
    """``tree`` as SQL for ``dialect``, each ``slot(name)`` replaced by ``relations[name]``."""
    sql = tree.sql(dialect=dialect.name)
    for name, text in relations.items():
        sql = sql.replace(quote_ident(_SLOT + name, dialect), text)
    return sql


def columns(names: list[str]) -> list[exp.Column]:
    """Quoted column references, one per name."""
    return [exp.Column(this=ident(n)) for n in names]


def count_star(alias: str) -> exp.Expr:
    """``COUNT(*) AS <alias>``."""
    return exp.alias_(exp.Count(this=exp.Star()), alias)


def quote_literal(value: str, dialect: Dialect) -> str:
    """``value`` as an escaped SQL string literal in ``dialect`` (for values in SQL text that
    cannot be bound, e.g. inside view definitions and subqueries reused as relations)."""
    return exp.Literal.string(value).sql(dialect=dialect.name)
