"""Stage 10: who may read the release: exactly USAGE on its schema and SELECT on its view.

Roles removed from ``[access] roles`` lose what ppdp granted them (engine/release/access.py); a database
without roles (capability) takes no grants, and ``validate`` already refused roles there.
"""

from __future__ import annotations

from ppdp.connectors.base import ROLES
from ppdp.engine.methods.context import RunContext
from ppdp.engine.release.access import apply_access


def grant(ctx: RunContext) -> dict:
    """Apply the spec's reader roles to the release's view (also when the list is empty)."""
    spec = ctx.spec
    if ROLES not in ctx.con.capabilities:
        return {"granted": []}
    return apply_access(ctx.con, spec.output_schema, spec.output_name, tuple(spec.reader_roles))
