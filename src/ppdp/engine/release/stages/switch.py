"""Stage 9: point the release's view at the verified version (inside the run's transaction)."""

from __future__ import annotations

from ppdp.engine.methods.context import RunContext
from ppdp.sql import publish as P
from ppdp.sql.quoting import quote_table


def switch_view(ctx: RunContext, table: str) -> str:
    """CREATE OR REPLACE the view; PostgreSQL cannot replace a view whose columns changed."""
    con, spec = ctx.con, ctx.spec
    view = quote_table(spec.output_schema, spec.output_name, ctx.dialect)
    current = con.relation_columns(spec.output_schema, spec.output_name)
    if current is not None and current != con.relation_columns(spec.output_schema, f"{spec.output_name}__v{ctx.version}"):
        con.execute(P.drop_view(view))
    con.execute(P.create_view(view, table))
    ctx.on_phase("switched")
    ctx.clock.mark("view_switch")
    return view
