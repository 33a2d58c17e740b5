"""Stage 11 (and the bookends of every run): the run's row in ``_ppdp.runs``.

A run is visible as ``running`` while it searches, then becomes ``succeeded`` (in the same
transaction as the view switch), ``failed`` (in a small transaction of its own, with the error),
or ``skipped`` (the run key equals the current version's: nothing changed).

The run record's figures describe the version that was published (``published_figures``). The release method measures its candidate (the optimizer's TD, class sizes, suppressed count).
When the history stage then holds records back (inserts withheld, deletions and changes delayed:
stages/history.py), the published version differs from that candidate, and the candidate's
figures would describe a table nobody can read: a version identical to v1 got another TD, and
released + suppressed no longer added up to the source's rows. So the figures are measured again
on the version table, and the held-back counts stand beside them:

    released - deletions delayed + suppressed + inserts withheld = source rows

(a delayed deletion is a published row whose record left the source; a delayed change keeps the
record's previous row, one for one). The candidate's own figures stay under ``candidate``.
TD is docs/design/paper_notes.md §1's: sum over released rows and QIDs of 1/|v_g|, |v_g| the number of leaves
under the published value at the release's level; query precision = 100·TD/(nR·nQID) with nR
the source's rows, as for the candidate. The workload error is the candidate's only (it would
need the published rows mapped back to the source histogram).
"""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np

from ppdp.connectors.base import Connector
from ppdp.engine.core import catalog
from ppdp.engine.core.catalog import RunRecord
from ppdp.engine.core.hierarchy import Hierarchy
from ppdp.engine.methods.base import ReleasePlan
from ppdp.engine.methods.context import RunContext, now
from ppdp.engine.methods.results import Candidate, HistoryOutcome, Prepared, Published
from ppdp.sql import figures as F

CANDIDATE_FIGURES = ("td", "query_precision", "suppressed", "workload_error", "class_sizes", "released_records")


def held_back_total(held_back: dict[str, int]) -> int:
    return sum(int(held_back.get(k, 0)) for k in ("inserts_withheld", "deletes_delayed", "changes_delayed"))


def published_figures(con: Connector, table: str, qids: list[str], hierarchies: list[Hierarchy], metrics: dict[str, Any],
                      levels: dict[str, int] | None, held_back: dict[str, int], released: int, source_rows: int) -> dict[str, Any]:
    """``metrics`` (the candidate's) made to describe the published version ``table`` (quoted)."""
    out = dict(metrics) | {"released_records": released, "held_back": dict(held_back), "records": source_rows}
    if not held_back_total(held_back):
        return out  # the candidate was published as it is
    out["candidate"] = {k: metrics[k] for k in CANDIDATE_FIGURES if k in metrics}
    out.pop("workload_error", None)
    wants_td = "td" in metrics and levels is not None
    if "class_sizes" not in metrics and not wants_td:
        return out  # a method without class figures (heterogeneous: its own GCP / SIL, per record)
    counts = con.query(F.class_counts(table, qids, con.dialect))
    sizes = np.asarray(counts["n"].to_list(), dtype=np.int64)
    if "class_sizes" in metrics:
        out["class_sizes"] = ({"classes": 0, "min": 0, "median": 0, "mean": 0, "max": 0} if sizes.size == 0 else
                              {"classes": int(sizes.size), "min": int(sizes.min()), "median": float(np.median(sizes)),
                               "mean": float(sizes.mean()), "max": int(sizes.max())})
    if wants_td and levels is not None:
        td = 0.0
        for q, h in zip(qids, hierarchies, strict=True):
            level = int(levels[q])
            leaves: dict[str, int] = {}
            for row in h.rows:
                leaves[row[level]] = leaves.get(row[level], 0) + 1
            weight = np.array([1.0 / leaves[v] if v in leaves else 0.0 for v in counts[q].cast(str).to_list()])
            td += float(np.sum(weight * sizes))
        out["td"] = td
        if "query_precision" in metrics:
            out["query_precision"] = 100.0 * td / (source_rows * len(qids)) if source_rows else 0.0
    return out


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


def built_hierarchies(prep: Prepared) -> dict[str, Any]:
    """The functional definitions of the version's built (``auto``) hierarchies, by column: the
    next version rebuilds the same hierarchies from them (stages/validate.py load_hierarchy)."""
    built = {h.attribute: h.definition.to_json() for h in prep.hierarchies if h.definition is not None}
    return {"hierarchies": built} if built else {}


def record_success(ctx: RunContext, prep: Prepared, plan: ReleasePlan, candidate: Candidate, held: HistoryOutcome,
                   written: Published, verification: dict[str, Any], grants: dict[str, Any]) -> RunRecord:
    """The published version's run row (inside the run's transaction): the plan's solution with the
    grants, its metrics with what was released and held back, the verification, the source's
    changes and the delta, and the cross-version check."""
    solution = plan.solution | {"access": grants} | built_hierarchies(prep)
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
