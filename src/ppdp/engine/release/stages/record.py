"""Stage 11 (and the bookends of every run): the run's row in ``_ppdp.runs``.

A run is visible as ``running`` while it searches, then becomes ``succeeded`` (in the same
transaction as the view switch), ``failed`` (in a small transaction of its own, with the error),
or ``skipped`` (the run key equals the current version's: nothing changed).
"""

from __future__ import annotations

import uuid
from typing import Any

from ppdp.engine.core import catalog
from ppdp.engine.core.catalog import RunRecord
from ppdp.engine.methods.base import ReleasePlan
from ppdp.engine.methods.context import RunContext, now
from ppdp.engine.methods.results import Candidate, HistoryOutcome, Prepared, Published
from ppdp.engine.release.figures import published_figures


def record_running(ctx: RunContext, prep: Prepared) -> None:
    """The run, visible as running while it plans (its own transaction)."""
    with ctx.con.transaction():
        catalog.ensure_schema(ctx.con)
        catalog.mark_abandoned(ctx.con, ctx.release)
        catalog.insert_run(ctx.con, RunRecord(ctx.run_id, ctx.release, None, "running", ctx.started, None, prep.source_rows,
                                              ctx.spec.raw, {}, {}, {}, None, ctx.job, ctx.run_key, ctx.fingerprint, {}, {}))


def record_skipped(ctx: RunContext, prep: Prepared, grants: dict[str, Any] | None = None) -> RunRecord:
    """A run whose key equals the current version's: a row of its own and the reader grants it
    applied (``grants``), nothing else written."""
    prev = ctx.previous
    assert prev is not None
    solution = prev.solution if grants is None else prev.solution | {"access": grants}
    rec = RunRecord(uuid.uuid4().hex, ctx.release, prev.version, "skipped", now(), now(), prep.source_rows, ctx.spec.raw,
                    solution, prev.metrics, prev.verification, None, ctx.job, ctx.run_key, ctx.fingerprint, {},
                    {"note": f"same run key as run {prev.run_id}"})
    with ctx.con.transaction():
        catalog.insert_run(ctx.con, rec)
    return rec


def record_failure(ctx: RunContext, prep: Prepared, plan: ReleasePlan | None, exc: BaseException) -> None:
    """The failed run, with whatever it had computed and the error (its own transaction)."""
    solution, metrics = (plan.solution, plan.metrics) if plan is not None else ({}, {})
    with ctx.con.transaction():
        catalog.ensure_schema(ctx.con)
        catalog.update_run(ctx.con, RunRecord(ctx.run_id, ctx.release, None, "failed", ctx.started, now(), prep.source_rows,
                                              ctx.spec.raw, solution, metrics, getattr(exc, "verification", {}),
                                              str(exc) or type(exc).__name__, ctx.job,
                                              ctx.run_key, ctx.fingerprint, {}, {}))


def record_success(ctx: RunContext, prep: Prepared, plan: ReleasePlan, candidate: Candidate, held: HistoryOutcome,
                   written: Published, verification: dict[str, Any], grants: dict[str, Any]) -> RunRecord:
    """The published version's run row (inside the run's transaction): the plan's solution with the
    grants, its metrics with what was released and held back, the verification, the source's
    changes and the delta, and the cross-version check."""
    solution = plan.solution | {"access": grants}
    metrics = published_figures(ctx.con, written.table, ctx.spec.qid_columns, prep.hierarchies, plan.metrics,  # the published version's figures
                                plan.solution.get("levels"), held.record.get("held_back", {}), written.rows, prep.source_rows)
    changes = candidate.changes | ({"delta": written.delta} if ctx.previous is not None else {})
    cross = held.record | ({"checks": verification.get("cross_version")} if "cross_version" in verification else {})
    rec = RunRecord(ctx.run_id, ctx.release, ctx.version, "succeeded", ctx.started, now(), prep.source_rows, ctx.spec.raw,
                    solution, metrics | {"stage_seconds": ctx.clock.seconds}, verification, None, ctx.job, ctx.run_key,
                    ctx.fingerprint, changes, cross)
    catalog.update_run(ctx.con, rec)
    return rec


def record_dry_run(ctx: RunContext, prep: Prepared, plan: ReleasePlan, statements: dict[str, str]) -> RunRecord:
    """A dry run's row: what the real run would do (publish ``ctx.version``, or be skipped when the
    key equals the current version's) and the SQL it would run."""
    prev = ctx.previous
    would = ({"would_publish_version": None, "would_skip": f"same run key as run {prev.run_id} (version {prev.version})"}
             if ctx.key.unchanged and prev is not None else {"would_publish_version": ctx.version})
    # status "dry-run", not "succeeded": it published nothing, and `job history` must not say it did
    rec = RunRecord(ctx.run_id, ctx.release, None, "dry-run", ctx.started, now(), prep.source_rows, ctx.spec.raw,
                    plan.solution | {"dry_run": True} | would, plan.metrics,
                    {"dry_run": True, "statements": statements}, None, ctx.job, ctx.run_key, ctx.fingerprint, {}, {})
    with ctx.con.transaction():
        catalog.update_run(ctx.con, rec)
    return rec
