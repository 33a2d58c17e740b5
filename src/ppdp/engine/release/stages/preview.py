"""A dry run's stage instead of reserve_version..switch: the SQL the run would execute.

Everything up to the plan ran as in a real run; nothing is written but the run record
(record.record_dry_run), which keeps these statements.
"""

from __future__ import annotations

from ppdp.engine.methods.base import ReleaseMethod, ReleasePlan
from ppdp.engine.methods.context import RunContext
from ppdp.engine.methods.results import Prepared
from ppdp.engine.release.stages.verify import model_check_sql
from ppdp.sql import publish as P
from ppdp.sql import queries as Q


def next_version(ctx: RunContext) -> int:
    """The version a real run would publish now."""
    return (ctx.previous.version or 0) + 1 if ctx.previous else 1


def statements(ctx: RunContext, prep: Prepared, method: ReleaseMethod, plan: ReleasePlan) -> dict[str, str]:
    """Label -> SQL of the statements that would publish version ``ctx.version``."""
    spec, d = prep.spec, ctx.dialect
    relation = ctx.published.version_table(ctx.version)
    out = {
        "histogram": Q.histogram_query(prep.source, spec.qid_columns, list(spec.sensitive)),
        "materialize": P.create_as(relation, P.final_version(f"({method.candidate_select(ctx, prep, plan)}) AS candidate", None, None, d)),
        "switch_view": P.create_view(ctx.published.view(), relation),
    }
    for m in prep.models:
        out[f"verify {m.name}"] = model_check_sql(spec, m, relation, ctx.release, ctx.version, d)
    return out
