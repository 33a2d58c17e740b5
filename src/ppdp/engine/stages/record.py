"""Stage 9 (and the bookends of every run): the run's row in ``_ppdp.runs``.

A run is visible as ``running`` while it searches, then becomes ``succeeded`` (in the same
transaction as the view switch), ``failed`` (in a small transaction of its own, with the error),
or ``skipped`` (the run key equals the current version's: nothing changed).
"""

from __future__ import annotations

import uuid
from typing import Any

from ppdp.engine import catalog
from ppdp.engine.catalog import RunRecord
from ppdp.engine.stages.context import RunContext, now
from ppdp.engine.stages.validate import Prepared


def record_running(ctx: RunContext, prep: Prepared) -> None:
    with ctx.con.transaction():
        catalog.ensure_schema(ctx.con)
        catalog.mark_abandoned(ctx.con, ctx.release)
        catalog.insert_run(ctx.con, RunRecord(ctx.run_id, ctx.release, None, "running", ctx.started, None, prep.source_rows,
                                              ctx.spec.raw, {}, {}, {}, None, ctx.job, ctx.run_key, ctx.fingerprint, {}, {}))


def record_skipped(ctx: RunContext, prep: Prepared) -> RunRecord:
    prev = ctx.previous
    assert prev is not None
    rec = RunRecord(uuid.uuid4().hex, ctx.release, prev.version, "skipped", now(), now(), prep.source_rows, ctx.spec.raw,
                    prev.solution, prev.metrics, prev.verification, None, ctx.job, ctx.run_key, ctx.fingerprint, {},
                    {"note": f"same run key as run {prev.run_id}"})
    with ctx.con.transaction():
        catalog.insert_run(ctx.con, rec)
    return rec


def record_failure(ctx: RunContext, prep: Prepared, solution: dict, metrics: dict, exc: BaseException) -> None:
    """The failed run, with whatever it had computed and the error (its own transaction)."""
    with ctx.con.transaction():
        catalog.ensure_schema(ctx.con)
        catalog.update_run(ctx.con, RunRecord(ctx.run_id, ctx.release, None, "failed", ctx.started, now(), prep.source_rows,
                                              ctx.spec.raw, solution, metrics, getattr(exc, "verification", {}),
                                              str(exc) or type(exc).__name__, ctx.job,
                                              ctx.run_key, ctx.fingerprint, {}, {}))


def record_success(ctx: RunContext, prep: Prepared, solution: dict, metrics: dict[str, Any], verification: dict,
                   changes: dict, cross_version: dict) -> RunRecord:
    rec = RunRecord(ctx.run_id, ctx.release, ctx.version, "succeeded", ctx.started, now(), prep.source_rows, ctx.spec.raw,
                    solution, metrics | {"stage_seconds": ctx.clock.seconds}, verification, None, ctx.job, ctx.run_key,
                    ctx.fingerprint, changes, cross_version)
    catalog.update_run(ctx.con, rec)
    return rec
