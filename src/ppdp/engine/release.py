"""A release run: a short orchestrator over the stages of engine/stages/, in order.

validate -> (skip if nothing changed) -> plan -> materialize -> history -> publish -> verify ->
switch -> access -> record. Everything that can be wrong with the input is checked in
``validate`` before the first write. The writes from ``materialize`` to the view switch and the
run record are one transaction: a failed check, a refused step or a killed process leaves
nothing visible. The release method (engine/methods/) decides the rows; every other stage is
shared by all methods.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ppdp.connectors import connect
from ppdp.engine import catalog, guards
from ppdp.engine.catalog import RunRecord
from ppdp.engine.errors import ConnectorError, PpdpError, SpecError
from ppdp.engine.methods import METHODS, ReleasePlan
from ppdp.engine.models import check_not_empty
from ppdp.engine.runkey import run_key
from ppdp.engine.spec import ReleaseSpec
from ppdp.engine.stages import access, history, materialize, publish, record, switch, validate
from ppdp.engine.stages import verify as verify_stage
from ppdp.engine.stages.context import RunContext
from ppdp.engine.stages.validate import Prepared
from ppdp.sql import publish as P
from ppdp.sql import queries as Q
from ppdp.sql.quoting import quote_table


@dataclass(frozen=True, eq=False)
class ReleaseOutcome:
    run: RunRecord
    plan: ReleasePlan | None
    table: str | None  # schema-qualified, quoted
    view: str | None
    statements: dict[str, str] | None = None  # dry runs: the SQL that would run

    @property
    def result(self) -> Any:
        """The optimizer's result when the method searched (generalization), else None."""
        return None if self.plan is None else self.plan.state


def database_url(spec: ReleaseSpec, override: str | None = None) -> str:
    """The spec's database URL with relative DuckDB paths resolved against the spec's folder."""
    url = override or spec.database
    scheme, sep, rest = url.partition("://")
    if scheme == "duckdb" or not sep:
        path = rest if sep else url
        if path not in (":memory:", "/:memory:") and not Path(path).is_absolute():
            return f"duckdb://{(Path(spec.base_dir) / path).resolve()}"
    return url


def run_release(spec: ReleaseSpec, *, database: str | None = None, progress: bool = True, dry_run: bool = False,
                job: str | None = None, on_phase: Callable[[str], None] | None = None) -> ReleaseOutcome:
    """Run one release of ``spec``. Bad input raises before anything is written.

    ``dry_run`` computes everything, writes only the run record, and returns the SQL it would
    execute. ``on_phase(name)`` is called after "materialized", "verified" and "switched" (tests
    inject faults there; the product has none).
    """
    con = connect(database_url(spec, database))
    release_name = catalog.release_id(spec.output_schema, spec.output_name)
    ctx = RunContext(spec, con, release_name, uuid.uuid4().hex, job, on_phase=on_phase or (lambda phase: None))
    locked = False
    try:
        prep = validate.prepare(spec, con)
        method = METHODS.get(spec.method)
        guards.refuse_unverifiable(prep.models, method=method.name, publishes_classes=method.publishes_classes,
                                   covers=method.covers)
        ctx.clock.mark("histogram_and_validation")
        if not con.try_lock(f"ppdp:{release_name}"):
            raise ConnectorError(f"Another run of release {release_name} is in progress; try again when it has finished.")
        locked = True
        ctx.fingerprint = validate.source_fingerprint(con, prep.source, spec.key, prep.columns)
        ctx.run_key = run_key(spec, ctx.fingerprint, [h.digest() for h in prep.hierarchies])
        ctx.previous = catalog.latest_success(con, release_name) if catalog.has_catalog(con) else None
        ctx.clock.mark("fingerprint")
        view = quote_table(spec.output_schema, spec.output_name, con.dialect)
        if ctx.previous is not None and ctx.previous.run_key == ctx.run_key and not dry_run:
            rec = record.record_skipped(ctx, prep)
            return ReleaseOutcome(rec, None, quote_table(spec.output_schema, f"{spec.output_name}__v{ctx.previous.version}", con.dialect), view)
        if ctx.previous is not None:
            guards.refuse_later_version(prep.models, release=release_name, previous_version=ctx.previous.version,
                                        publishes_classes=method.publishes_classes)
        record.record_running(ctx, prep)
        plan = None
        try:
            plan = method.plan(ctx, prep, progress=progress)
            ctx.clock.mark("search")
            check_not_empty(plan.released_rows, prep.models)
            if dry_run:
                return _dry_run(ctx, prep, method, plan)
            return _publish(ctx, prep, method, plan)
        except BaseException as exc:
            record.record_failure(ctx, prep, plan.solution if plan else {}, plan.metrics if plan else {}, exc)
            raise
    finally:
        if locked:
            con.unlock(f"ppdp:{release_name}")
        con.close()


def _publish(ctx: RunContext, prep: Prepared, method, plan: ReleasePlan) -> ReleaseOutcome:
    con = ctx.con
    with con.transaction():
        candidate = materialize.materialize(ctx, prep, method, plan)
        if candidate.rows != plan.released_rows:
            raise PpdpError(f"The candidate rows ({candidate.rows}) differ from the plan's ({plan.released_rows}); nothing was published.")
        ctx.on_phase("materialized")
        published = [r.version for r in catalog.published_runs(con, ctx.release)]
        held = history.check_history(ctx, prep, method, plan, candidate, published)
        ctx.clock.mark("cross_version_check")
        version = publish.publish(ctx, candidate, held, published)
        expected = candidate.rows - held.withheld + held.carried
        verification = verify_stage.verify(ctx, prep, version.table, expected, published, delta_written=version.delta == "written",
                                           extra=method.extra_checks(ctx, prep, plan, version.table),
                                           classes=method.publishes_classes)
        ctx.on_phase("verified")
        view = switch.switch_view(ctx, version.table)
        grants = access.grant(ctx)
        metrics = plan.metrics | {"released_records": version.rows, "held_back": held.record.get("held_back", {})}
        changes = candidate.changes | ({"delta": version.delta} if ctx.previous is not None else {})
        cross = held.record | ({"checks": verification.get("cross_version")} if "cross_version" in verification else {})
        rec = record.record_success(ctx, prep, plan.solution | {"access": grants}, metrics, verification, changes, cross)
    ctx.clock.mark("commit")
    return ReleaseOutcome(rec, plan, version.table, view)


def _statements(ctx: RunContext, prep: Prepared, method, plan: ReleasePlan, version: int) -> dict[str, str]:
    spec, d = prep.spec, ctx.dialect
    relation = quote_table(spec.output_schema, f"{spec.output_name}__v{version}", d)
    ctx.version = version
    out = {
        "histogram": Q.histogram_query(prep.source, spec.qid_columns, list(spec.sensitive)),
        "materialize": P.create_as(relation, P.final_version(f"({method.candidate_select(ctx, prep, plan)}) AS candidate", None, None, d)),
        "switch_view": P.create_view(quote_table(spec.output_schema, spec.output_name, d), relation),
    }
    for m in prep.models:
        out[f"verify {m.name}"] = verify_stage.model_check_sql(spec, m, relation, ctx.release, version, d)
    return out


def _dry_run(ctx: RunContext, prep: Prepared, method, plan: ReleasePlan) -> ReleaseOutcome:
    version = (ctx.previous.version + 1) if ctx.previous else 1
    stmts = _statements(ctx, prep, method, plan, version)
    rec = RunRecord(ctx.run_id, ctx.release, None, "succeeded", ctx.started, record.now(), prep.source_rows, prep.spec.raw,
                    plan.solution | {"dry_run": True, "would_publish_version": version}, plan.metrics,
                    {"dry_run": True, "statements": stmts}, None, ctx.job, ctx.run_key, ctx.fingerprint, {}, {})
    with ctx.con.transaction():
        catalog.update_run(ctx.con, rec)
    return ReleaseOutcome(rec, plan, None, None, stmts)


def reverify(con, name: str) -> dict[str, Any]:
    """Run the SQL verification again on the current version of release ``name``, against what
    was published (the stored Q), and say separately whether the source changed since."""
    from ppdp.engine.models import build_model
    from ppdp.engine.spec import spec_from_dict
    from ppdp.engine.stages.verify import check_models

    release = catalog.resolve_release(con, name)
    run = catalog.latest_success(con, release)
    if run is None:
        raise SpecError(f"No published release named {name!r} in {con.url}.")
    spec = spec_from_dict(run.spec)
    models = [build_model(m.name, m.param_dict()) for m in spec.models]
    relation = quote_table(spec.output_schema, f"{spec.output_name}__v{run.version}", con.dialect)
    checks = check_models(con, spec, models, relation, release, run.version)
    rows = int(con.query(P.count_rows(relation))["n"][0])
    expected = int(run.verification.get("rows", run.metrics.get("released_records", 0)))
    source_changed: bool | None
    try:
        source = Q.Source(spec.schema, spec.table, spec.query, con.dialect)
        columns = validate.source_columns(spec, con, source)
        source_changed = validate.source_fingerprint(con, source, spec.key, columns) != run.source_fingerprint
    except PpdpError:
        source_changed = None  # the source is gone or no longer valid
    return {"checks": checks, "rows": rows, "expected_rows": expected, "version": run.version, "release": release,
            "source_changed": source_changed, "passed": all(c["passed"] for c in checks) and rows == expected}
