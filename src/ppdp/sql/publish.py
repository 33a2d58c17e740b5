"""SQL that writes a version: the candidate rows aside, the version table, its delta, the view.

A version table is written in random row order (``ORDER BY random()``): rows in source-key order
would let row position single people out within a class. Relations and identifiers come quoted
from the callers (``quote_table``); values are bound parameters.
"""

from __future__ import annotations

from sqlglot import exp

from ppdp.sql.dialect import Dialect
from ppdp.sql.quoting import columns as column_refs
from ppdp.sql.quoting import quote_ident, render, slot, table_expr

ROW_ID = "ppdp_row_id"


def create_as(relation: str, select_sql: str) -> str:
    return f"CREATE TABLE {relation} AS {select_sql}"


def drop_table(relation: str, *, if_exists: bool = True) -> str:
    return f"DROP TABLE {'IF EXISTS ' if if_exists else ''}{relation}"


def shuffled(select_sql: str) -> str:
    """``select_sql``'s rows in random order."""
    return f"SELECT x.* FROM ({select_sql}) AS x ORDER BY random()"


def select_all(relation: str) -> str:
    return f"SELECT * FROM {relation}"


def final_version(candidate: str, previous: str | None, reverts: str | None, d: Dialect) -> str:
    """SELECT of the version's rows, shuffled: the candidate rows, minus reverted row ids, plus the
    previous version's row for each row id held back: 'carry' (it left: it stays) or 'keep'
    (it changed: its previous row stays)."""
    rid = quote_ident(ROW_ID, d)
    if reverts is None:
        return f"SELECT c.* FROM {candidate} AS c ORDER BY random()"
    keep = f"SELECT c.* FROM {candidate} AS c WHERE NOT EXISTS (SELECT 1 FROM {reverts} AS r WHERE r.row_id = c.{rid})"
    if previous is None:
        return f"{keep} ORDER BY random()"
    carry = (f"SELECT p.* FROM {previous} AS p WHERE EXISTS "
             f"(SELECT 1 FROM {reverts} AS r WHERE r.row_id = p.{rid} AND r.action IN ('carry', 'keep'))")
    return f"SELECT x.* FROM ({keep} UNION ALL {carry}) AS x ORDER BY random()"


def effective_version(candidate: str, previous: str | None, reverts: str, d: Dialect) -> str:
    """The same rows as ``final_version`` as a FROM-able subquery (no order), aliased by caller."""
    rid = quote_ident(ROW_ID, d)
    keep = f"SELECT c.* FROM {candidate} AS c WHERE NOT EXISTS (SELECT 1 FROM {reverts} AS r WHERE r.row_id = c.{rid})"
    if previous is None:
        return f"({keep})"
    carry = (f"SELECT p.* FROM {previous} AS p WHERE EXISTS "
             f"(SELECT 1 FROM {reverts} AS r WHERE r.row_id = p.{rid} AND r.action IN ('carry', 'keep'))")
    return f"({keep} UNION ALL {carry})"


def count_rows(relation: str) -> str:
    return f"SELECT COUNT(*) AS n FROM {relation}"


def create_delta(delta: str, current: str) -> str:
    """The empty delta table: version, op, then the version's columns."""
    return (f"CREATE TABLE IF NOT EXISTS {delta} AS SELECT CAST(NULL AS INTEGER) AS version, "
            f"CAST(NULL AS VARCHAR) AS op, c.* FROM {current} AS c WHERE 1 = 0")


def insert_delta(delta: str, version: int, current: str, previous: str) -> str:
    """Rows added (+) and removed (-) from ``previous`` to ``current``, in random order."""
    return (f"INSERT INTO {delta} SELECT x.* FROM ("
            f"SELECT {int(version)} AS version, '+' AS op, a.* FROM (SELECT * FROM {current} EXCEPT SELECT * FROM {previous}) AS a "
            f"UNION ALL SELECT {int(version)}, '-', b.* FROM (SELECT * FROM {previous} EXCEPT SELECT * FROM {current}) AS b"
            f") AS x ORDER BY random()")


def delta_mismatch(delta: str, version: int, current: str, previous: str, columns: list[str], d: Dialect) -> str:
    """Rows by which the previous version with the delta applied (drop '-', add '+') and the
    current version differ, and the two row counts: (mismatch, applied_rows, current_rows)."""
    v = int(version)

    def rows(relation: str, op: str | None = None) -> exp.Select:
        select = exp.select(*column_refs(columns)).from_(slot(relation))
        return select if op is None else select.where(f"version = {v} AND op = '{op}'", dialect=d.name)

    kept = exp.except_(rows("previous"), rows("delta", "-"))
    applied = exp.union(exp.select(*column_refs(columns)).from_(kept.subquery("kept")), rows("delta", "+"), distinct=False)
    counts = ["(SELECT COUNT(*) FROM (SELECT * FROM applied EXCEPT SELECT * FROM cur) AS a) "
              "+ (SELECT COUNT(*) FROM (SELECT * FROM cur EXCEPT SELECT * FROM applied) AS b) AS mismatch",
              "(SELECT COUNT(*) FROM applied) AS applied_rows", "(SELECT COUNT(*) FROM cur) AS current_rows"]
    query = exp.select(*counts, dialect=d.name).with_("applied", as_=applied).with_("cur", as_=rows("current"))
    return render(query, d, {"delta": delta, "current": current, "previous": previous})


def create_view(view: str, relation: str) -> str:
    return f"CREATE OR REPLACE VIEW {view} AS SELECT * FROM {relation}"


def drop_view(view: str) -> str:
    return f"DROP VIEW {view}"


def create_schema(schema: str, d: Dialect) -> str:
    return exp.Create(this=table_expr(None, schema), kind="SCHEMA", exists=True).sql(dialect=d.name)

