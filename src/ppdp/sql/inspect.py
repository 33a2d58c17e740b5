"""Read-only probes of a source relation."""

from __future__ import annotations

from ppdp.sql.dialect import Dialect


def empty_select(source_from: str) -> str:
    """No rows, all columns: the column names of a FROM-clause text (``Source.sql()``)."""
    return f"SELECT * FROM {source_from} LIMIT 0"


def scanned_table(query: str, dialect: Dialect) -> tuple[str | None, str] | None:
    """``(schema, table)`` when ``query`` is exactly ``SELECT * FROM [catalog.][schema.]table``
    (what dbt-duckdb's ``dbt.ref()`` relation runs), else None: anything more is not a table."""
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(query, read=dialect.name)
    except sqlglot.errors.ParseError:
        return None
    if not isinstance(tree, exp.Select):
        return None
    clauses = {key for key, value in tree.args.items() if value}
    star = len(tree.expressions) == 1 and isinstance(tree.expressions[0], exp.Star)
    source = tree.args.get("from_")
    if clauses != {"expressions", "from_"} or not star or source is None or not isinstance(source.this, exp.Table):
        return None
    table = source.this
    return (table.db or None, table.name)


def query_schemas(query: str, dialect: Dialect, default_schema: str) -> set[str]:
    """The schemas of the tables a source.query reads (``default_schema`` for unqualified names).

    Parsed with sqlglot, never pasted; CTE names are not tables. Table functions such as
    ``read_csv(...)`` have no schema and are not counted."""
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(query, read=dialect.name)
    except sqlglot.errors.ParseError:
        return set()  # the source check reports the bad SQL in its own words
    ctes = {c.alias_or_name for c in tree.find_all(exp.CTE)}
    out = set()
    for table in tree.find_all(exp.Table):
        if not table.name or (not table.db and table.name in ctes) or isinstance(table.this, exp.Func):
            continue
        out.add(table.db or default_schema)
    return out
