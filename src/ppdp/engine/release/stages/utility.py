"""Utility stage (after risk.measure): the utility of the written version (engine/utility: ARX's
quality models, TD, query precision, workload error), stored in ``_ppdp.utility`` beside the
version's risk in ``_ppdp.risk`` and returned for the run record and the certificate."""

from __future__ import annotations

import json
import math
from typing import Any

from ppdp.engine.methods.context import RunContext
from ppdp.engine.methods.results import Prepared
from ppdp.engine.utility import assess_version, canonical
from ppdp.sql import catalog as C
from ppdp.sql.queries import Source


def measure(ctx: RunContext, prep: Prepared) -> dict[str, Any]:
    """Utility of version ``ctx.version``; the source read whole (rows withheld before the
    search count as withheld, as ARX's outliers)."""
    spec = ctx.spec
    assert ctx.version is not None
    source = Source(spec.schema, spec.table, spec.query, ctx.dialect, research=prep.source.research)
    result = assess_version(ctx.con, release=ctx.release, version=ctx.version, source=source, key=spec.key,
                            qids=spec.qid_columns, hierarchies=tuple(canonical(h) for h in prep.hierarchies),
                            schema=spec.output_schema, name=spec.output_name, method=spec.method)
    out = _finite(result.summary())
    ctx.con.execute(C.insert_utility(ctx.dialect), [ctx.release, ctx.version, ctx.run_id, json.dumps(out)])
    ctx.clock.mark("utility")
    return out


def _finite(value: Any) -> Any:
    """``value`` with NaN and infinities as None (JSON has neither)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value
