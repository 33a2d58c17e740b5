"""Stage 7: the version table (shuffled) and its delta, written aside: the view does not move yet.

Rows are written in random order: in source-key order, position would single people out
within a class. The delta holds the rows added (+) and removed (-) since the previous version,
also shuffled; applying it to the previous version gives this one exactly (checked in verify).
"""

from __future__ import annotations

from ppdp.engine.methods.context import RunContext
from ppdp.engine.methods.results import Candidate, HistoryOutcome, Published
from ppdp.sql import catalog as C
from ppdp.sql import publish as P
from ppdp.sql.quoting import quote_table


def publish(ctx: RunContext, candidate: Candidate, history: HistoryOutcome, published: list[int]) -> Published:
    con, d = ctx.con, ctx.dialect
    table = candidate.relation  # the version table, as the candidate was written
    previous = ctx.published.version_table(published[-1]) if published else None
    if history.reverts is not None:  # rewrite it with the held-back records, shuffled again
        final = quote_table(C.PRIVATE_SCHEMA, f"final_{ctx.run_id}", d)
        con.execute(P.create_as(final, P.final_version(table, previous, history.reverts, d)))
        con.execute(P.drop_table(table))
        con.execute(P.create_as(table, P.shuffled(P.select_all(final))))
        con.execute(P.drop_table(final))
        # withheld rows are suppressed in this version, standing rows are not (for rebuilds)
        con.execute(C.insert_withheld(history.reverts, d), [ctx.release, ctx.version, ctx.release])
        con.execute(C.unsuppress_carried(history.reverts, d), [ctx.release, ctx.version, ctx.release])
        con.execute(P.drop_table(history.reverts))
    rows = int(con.query(P.count_rows(table))["n"][0])
    ctx.clock.mark("version_table")
    delta = "first version"
    if previous is not None:
        delta = _write_delta(ctx, table, previous)
    ctx.clock.mark("delta")
    return Published(table, rows, delta)


def _write_delta(ctx: RunContext, table: str, previous: str) -> str:
    """Increments only make sense between versions with the same columns and types; when they
    differ no delta is written for this version and the run record says why."""
    con, spec = ctx.con, ctx.spec
    schema = spec.output_schema
    rel = ctx.published
    cur_cols = con.relation_columns(schema, rel.version_name(ctx.version))
    prev_cols = con.relation_columns(schema, rel.version_name(ctx.previous.version)) if ctx.previous else None
    delta_cols = con.relation_columns(schema, rel.delta_name())
    if cur_cols != prev_cols or (delta_cols is not None and delta_cols[2:] != cur_cols):
        return f"not written: the columns of v{ctx.version} differ from v{ctx.previous.version if ctx.previous else '?'}; reload the version table"
    delta = rel.delta_table()
    con.execute(P.create_delta(delta, table))
    con.execute(P.insert_delta(delta, ctx.version, table, previous))
    return "written"
