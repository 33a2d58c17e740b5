"""Stage 8: who may read the release: exactly USAGE on its schema and SELECT on its view."""

from __future__ import annotations

from engine.stages.context import RunContext
from sql import publish as P


def grant(ctx: RunContext, view: str) -> dict:
    spec, d = ctx.spec, ctx.dialect
    for role in spec.reader_roles:
        ctx.con.execute(P.grant_usage(spec.output_schema, role, d))
        ctx.con.execute(P.grant_select(view, role, d))
    return {"granted": list(spec.reader_roles)}
