"""Stage 9: point the release's view at the verified version (inside the run's transaction)."""

from __future__ import annotations

from ppdp.engine.methods.context import RunContext
from ppdp.sql import publish as P


def switch_view(ctx: RunContext, table: str) -> str:
    """CREATE OR REPLACE the view; PostgreSQL cannot replace a view whose columns changed."""
    con, spec = ctx.con, ctx.spec
    view = ctx.published.view()
    current = con.relation_columns(spec.output_schema, spec.output_name)
    if current is not None and current != con.relation_columns(spec.output_schema, ctx.published.version_name(ctx.version)):
        con.execute(P.drop_view(view))
    con.execute(P.create_view(view, table))
    ctx.on_phase("switched")
    ctx.clock.mark("view_switch")
    return view
