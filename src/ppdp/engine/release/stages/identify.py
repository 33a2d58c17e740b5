"""Stage 3 (under the run lock): what this run's input is, and what the release has published.

The source's fingerprint (row count and an order-free sum of row hashes, computed in the
database), the run key over the spec, the hierarchies' contents, the fingerprint and the ppdp
version (engine/release/runkey.py), and the run that published the current version. A run whose key
equals that run's is skipped: nothing changed.
"""

from __future__ import annotations

from ppdp.engine.core import catalog
from ppdp.engine.methods.context import RunContext
from ppdp.engine.methods.results import Prepared, RunKey
from ppdp.engine.release.runkey import run_key
from ppdp.engine.release.stages.validate import source_fingerprint


def identify(ctx: RunContext, prep: Prepared) -> RunKey:
    """Reads only; the orchestrator puts the result into the context of every later stage."""
    con = ctx.con
    fingerprint = source_fingerprint(con, prep.source, ctx.spec.key, prep.columns)
    key = run_key(ctx.spec, fingerprint, [h.digest() for h in prep.hierarchies], con.identity())
    previous = catalog.latest_success(con, ctx.release) if catalog.has_catalog(con) else None
    ctx.clock.mark("fingerprint")
    return RunKey(fingerprint, key, previous)
