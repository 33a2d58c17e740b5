"""ppdp's SQL as Spark SQL: one statement in, the Spark statements that do it out.

The builders of sql/ write DuckDB/PostgreSQL-flavoured text (``VARCHAR``, ``DOUBLE PRECISION``,
``gen_random_uuid()``, ``random()``, ``'it''s'``, ``"identifiers"`` in hand-written tests) with
identifiers quoted for the connector's dialect (backticks for Spark). Rather than a Spark branch
in every builder, the Spark connector hands each statement to ``spark_statements``: sqlglot
reads it with Spark's grammar plus the standard quoting (``''`` inside strings, ``"`` around
identifiers) and writes Spark SQL. The SQL for DuckDB and PostgreSQL is not touched.

What Spark's file tables (Parquet, no Delta/Iceberg) lack is rewritten here:

* ``DELETE FROM t WHERE c``: the kept rows go to a scratch table, ``INSERT OVERWRITE t`` takes
  them back, the scratch table is dropped (Spark refuses to overwrite a table it reads from).
* ``UPDATE t SET a = x WHERE c``: the same, with ``CASE WHEN c THEN x ELSE a END AS a``
  (needs the table's columns, given by the caller).
* Key constraints (``PRIMARY KEY``) are dropped: Spark has no keys; ppdp's writes keep the
  private tables unique under its run lock.

``?`` parameters become sqlglot literals (quoted and escaped by sqlglot for Spark), so a value
never becomes SQL text of its own.
"""

from __future__ import annotations

import datetime as dt
import math
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.dialects.spark import Spark

from ppdp.sql.dialect import SPARK

DIALECT = SPARK.name


class SparkReader(Spark):
    """Spark's grammar with the standard quoting of the text ppdp's builders write."""

    class Tokenizer(Spark.Tokenizer):
        IDENTIFIERS = ["`", '"']
        STRING_ESCAPES = ["\\", "'"]


class StatementError(ValueError):
    """The statement cannot be run on Spark as given (wrong parameter count, unparsable text)."""


def literal(value: Any) -> exp.Expression:
    """A Python value as a Spark SQL literal expression."""
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int):
        return exp.Literal.number(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return exp.cast(exp.Literal.string(repr(value)), "DOUBLE")
        return exp.cast(exp.Literal.number(repr(value)), "DOUBLE")  # DOUBLE, not Spark's DECIMAL literal
    if isinstance(value, dt.datetime):
        return exp.cast(exp.Literal.string(value.isoformat(sep=" ")), "TIMESTAMP")
    if isinstance(value, dt.date):
        return exp.cast(exp.Literal.string(value.isoformat()), "DATE")
    return exp.Literal.string(str(value))


_MARK = "ppdp_param_"


def number_placeholders(sql: str) -> tuple[str, int]:
    """``sql`` with each ``?`` placeholder, in text order, named ``:ppdp_param_<i>``; and the
    count. Spark's tokenizer finds them, so ``?`` inside strings, quoted names and comments stays.

    (Named, because sqlglot's tree order is not text order: a CTE is attached after the SELECT
    that follows it.)
    """
    try:
        tokens = SparkReader().tokenize(sql)
    except sqlglot.errors.TokenError as exc:
        raise StatementError(f"not valid SQL: {str(exc).splitlines()[0]}") from None
    out, last, n = [], 0, 0
    for tok in tokens:
        if tok.token_type == sqlglot.tokens.TokenType.PLACEHOLDER and sql[tok.start : tok.end + 1] == "?":
            out.append(sql[last : tok.start])
            out.append(f":{_MARK}{n}")
            last, n = tok.end + 1, n + 1
    out.append(sql[last:])
    return "".join(out), n


def bind(statement: exp.Expr, params: Sequence[Any]) -> exp.Expr:
    """``statement`` with its ``:ppdp_param_<i>`` placeholders replaced by literals of ``params[i]``."""
    for holder in list(statement.find_all(exp.Placeholder)):
        name = holder.name
        if name.startswith(_MARK):
            holder.replace(literal(params[int(name[len(_MARK):])]))
    return statement


def parse(sql: str) -> exp.Expr:
    try:
        parsed = [s for s in sqlglot.parse(sql, read=SparkReader) if s is not None]
    except sqlglot.errors.ParseError as exc:
        raise StatementError(f"not valid SQL: {str(exc).splitlines()[0]}") from None
    if len(parsed) != 1:
        raise StatementError(f"expected one statement, got {len(parsed)}")
    return parsed[0]


def _drop_keys(create: exp.Create) -> None:
    schema = create.this
    if not isinstance(schema, exp.Schema):
        return
    for e in list(schema.expressions):
        if isinstance(e, exp.PrimaryKey):
            e.pop()
        elif isinstance(e, exp.ColumnDef):
            for c in list(e.args.get("constraints") or []):
                if isinstance(c.args.get("kind"), exp.PrimaryKeyColumnConstraint):
                    c.pop()


def _scratch(table: exp.Table) -> exp.Table:
    name = f"__ppdp_rewrite_{uuid.uuid4().hex[:12]}"
    return exp.Table(this=exp.Identifier(this=name, quoted=True), db=table.args.get("db"))


def _rewrite(kept: exp.Select, table: exp.Table) -> list[exp.Expr]:
    """Replace ``table``'s rows by ``kept``'s, through a scratch table."""
    target = table.copy()
    target.set("alias", None)
    scratch = _scratch(target)
    return [
        exp.Create(this=scratch, kind="TABLE", expression=kept),
        exp.Insert(this=target.copy(), expression=exp.select(exp.Star()).from_(scratch.copy()), overwrite=True),
        exp.Drop(tables=[scratch.copy()], kind="TABLE", exists=True),
    ]


def _not_matching(where: exp.Expression | None) -> exp.Expression:
    """Rows DELETE keeps: those where the condition is false or NULL."""
    if where is None:
        return exp.false()
    return exp.not_(exp.func("COALESCE", exp.paren(where.this.copy()), exp.false()))


def _delete(stmt: exp.Delete) -> list[exp.Expr]:
    table = stmt.this
    kept = exp.select(exp.Star()).from_(table.copy()).where(_not_matching(stmt.args.get("where")))
    return _rewrite(kept, table)


def _update(stmt: exp.Update, columns: Callable[[exp.Table], list[str]]) -> list[exp.Expr]:
    table = stmt.this
    sets = {}
    for eq in stmt.expressions:
        sets[eq.this.name] = eq.expression
    where = stmt.args.get("where")
    selected: list[exp.Expr] = []
    for col in columns(table):
        current = exp.column(exp.Identifier(this=col, quoted=True))
        value = sets.get(col)
        if value is None:
            selected.append(current)
        elif where is None:
            selected.append(exp.alias_(value.copy(), exp.Identifier(this=col, quoted=True)))
        else:
            case = exp.Case(ifs=[exp.If(this=exp.func("COALESCE", exp.paren(where.this.copy()), exp.false()), true=value.copy())],
                            default=current.copy())
            selected.append(exp.alias_(case, exp.Identifier(this=col, quoted=True)))
    kept = exp.select(*selected).from_(table.copy())
    return _rewrite(kept, table)


def spark_statements(sql: str, params: Sequence[Any] | None = None, *,
                     columns: Callable[[exp.Table], list[str]] | None = None) -> list[str]:
    """The Spark SQL statements that do what ``sql`` (with ``params`` bound) does.

    ``columns(table)`` lists a table's columns (needed to rewrite UPDATE). Raises
    StatementError when the text cannot be read or the parameters do not match.
    """
    text, n = number_placeholders(sql)
    values = list(params or [])
    if n != len(values):
        raise StatementError(f"The statement has {n} placeholder(s) but {len(values)} parameter(s) were given")
    stmt = bind(parse(text), values)
    if isinstance(stmt, exp.Create) and (stmt.args.get("kind") or "").upper() == "TABLE":
        _drop_keys(stmt)
    if isinstance(stmt, exp.Delete):
        out = _delete(stmt)
    elif isinstance(stmt, exp.Update):
        if columns is None:
            raise StatementError("UPDATE needs the table's columns")
        out = _update(stmt, columns)
    else:
        out = [stmt]
    return [s.sql(dialect=DIALECT) for s in out]
