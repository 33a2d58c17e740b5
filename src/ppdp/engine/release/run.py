"""A release run: a short orchestrator over the stages of engine/release/stages/, in order.

(lock) previous run -> validate -> guards -> identify -> (skip if nothing changed) -> plan ->
reserve_version -> materialize -> history -> publish -> verify -> switch -> access -> record; a
dry run: plan -> preview -> record. The run lock is taken first and the run that published the
current version is read once under it, so every stage sees the same previous run, and a run
that finished while this one started is that previous run. Everything that can be wrong with
the input is checked in ``validate`` and ``guards`` before the first write. The writes from
``materialize`` to the view switch and the run record are one transaction: a failed check, a
refused step or a killed process leaves nothing visible. The release method (engine/methods/) decides the rows; every other stage is shared by
all methods.

Each stage is ``stage(ctx, *inputs) -> frozen result`` (engine/release/stages/__init__.py). Only this
module makes a new context: ``replace(ctx, key=...)`` after identify and
``replace(ctx, version=...)`` once the version is reserved.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ppdp import handoff
from ppdp.connectors import connect
from ppdp.connectors.base import Connector
from ppdp.engine.core import catalog
from ppdp.engine.core.catalog import RunRecord
from ppdp.engine.core.spec import ReleaseSpec
from ppdp.engine.methods import ReleaseMethod, ReleasePlan, method_of
from ppdp.engine.methods.base import RechecksVersion
from ppdp.engine.methods.context import RunContext, no_phase, published_versions
from ppdp.engine.methods.results import Prepared
from ppdp.engine.privacy import check_feasible, check_not_empty
from ppdp.engine.release.placement import may_create_database
from ppdp.engine.release.stages import (
    access,
    guards,
    history,
    identify,
    integrity,
    materialize,
    preview,
    publish,
    record,
    risk,
    switch,
    utility,
    validate,
    verify,
)
from ppdp.errors import ConnectorError, PpdpError, RunInProgress, SpecError
from ppdp.process_heap import keep_freed_memory
from ppdp.sql import catalog as catalog_sql
from ppdp.sql import publish as P
from ppdp.sql import queries as Q
from ppdp.sql.relations import ReleaseRelation


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
    if not url:
        raise SpecError("Missing source.database. Hint: give it in the spec's [source], or the database URL with --db.")
    scheme, sep, rest = url.partition("://")
    if scheme == "duckdb" or not sep:
        path = rest if sep else url
        if path not in (":memory:", "/:memory:") and not Path(path).is_absolute():
            return f"duckdb://{(Path(spec.base_dir) / path).resolve()}"
    return url


def run_release(spec: ReleaseSpec, *, database: str | None = None, progress: bool = True, dry_run: bool = False,
                job: str | None = None, on_phase: Callable[[str], None] | None = None,
                connector: Connector | None = None) -> ReleaseOutcome:
    """Run one release of ``spec``. Bad input raises before anything is written.

    ``dry_run`` computes everything, writes only the run record, and returns the SQL it would
    execute. ``on_phase(name)`` is called after "materialized", "verified" and "switched" (tests
    inject faults there; the product has none). ``connector``: run on this open connection
    (dbt's) instead of opening the spec's database.
    """
    keep_freed_memory()  # the search's kernels reuse the heap instead of faulting pages in (ppdp/process_heap.py)
    method = method_of(spec)
    con = (connector if connector is not None
           else connect(database_url(spec, database), create=may_create_database(spec)))  # a mistyped path creates no file
    ctx = RunContext(spec, con, catalog.release_id(spec.output_schema, spec.output_name), uuid.uuid4().hex, job,
                     on_phase=on_phase or no_phase)
    try:
        with _run_lock(con, ctx.release):
            had_catalog = catalog.has_catalog(con)  # under the lock: nothing of the catalog is read before it
            if had_catalog and not dry_run:
                catalog.upgrade(con)  # keys an older ppdp stored, in this one's format
            # read once, under the lock: a run that published while this one started is the
            # previous run of every stage (t-closeness's Q in validate, the run key, history)
            previous = identify.previous_run(ctx)
            prep = validate.validate(ctx, method, previous)
            guards.guard(ctx, prep, method)
            ctx.clock.mark("histogram_and_validation")
            ctx = replace(ctx, key=identify.identify(ctx, prep, previous))
            tampered = _tampered(ctx, previous) if ctx.key.unchanged else None
            if ctx.key.unchanged and not dry_run and tampered is None:
                return _skipped(ctx, prep)
            guards.guard_versions(ctx, prep, method)
            record.record_running(ctx, prep)
            plan = None
            try:
                plan = method.plan(ctx, prep, progress=progress)
                if tampered is not None:  # published again: say why the unchanged run was not skipped
                    note = f"republished: {tampered} (nothing changed in the source or the spec)"
                    plan = replace(plan, solution=plan.solution | {"notices": [*plan.solution.get("notices", []), note]},
                                   notices=(*plan.notices, note))
                ctx.clock.mark("search")
                check_not_empty(plan.released_rows, prep.models)
                if ctx.previous is None:  # a later version's cross-version step may still hold the failing records back
                    check_feasible(plan, prep.models)
                return _dry_run(ctx, prep, method, plan) if dry_run else _publish(
                    ctx, prep, method, plan, replaces=previous.version if tampered is not None and previous else None)
            except BaseException as exc:
                handoff.release()  # nothing committed reaches the caller
                if not had_catalog and isinstance(exc, ConnectorError):
                    # the database failed this first run (a full disk): leave no _ppdp behind it
                    _drop_new_catalog(con, ctx.release)
                else:
                    try:
                        record.record_failure(ctx, prep, plan, exc)
                    except PpdpError:  # the database cannot be written: the run's error is the one to report
                        if not had_catalog:
                            _drop_new_catalog(con, ctx.release)
                if isinstance(exc, PpdpError):  # the failed run's row, for engine/app/outcome.py
                    exc.run_id, exc.release = ctx.run_id, ctx.release
                raise
    finally:
        con.close()


def _publish(ctx: RunContext, prep: Prepared, method: ReleaseMethod, plan: ReleasePlan,
             replaces: int | None = None) -> ReleaseOutcome:
    """``replaces``: a current version found tampered with (stages/integrity.py) while the run key
    is unchanged. Its table is not what was published, or is gone; the source, the spec and so
    the plan are those it was published from, so this version holds the rows that version
    published, and the cross-version check and the delta compare with the versions before it."""
    with _schema_lock(ctx.con, ctx.spec.output_schema), ctx.con.transaction():
        ctx = replace(ctx, version=materialize.reserve_version(ctx))
        candidate = materialize.materialize(ctx, prep, method, plan)
        kept = risk.check_kept_columns(ctx, prep, method, candidate)
        ctx.on_phase("materialized")
        published = [v for v in published_versions(ctx) if v != replaces]
        held = history.check_history(ctx, prep, method, plan, candidate, published)
        ctx.clock.mark("cross_version_check")
        written = publish.publish(ctx, candidate, held, published)
        expected = candidate.rows - held.withheld + held.carried
        checked = verify.verify(ctx, prep, method, plan, written, expected, published)
        checked = {**checked, "risk": risk.measure(ctx, prep, method, written.table, kept),
                   "content": integrity.content(ctx.con, ctx.spec.output_schema, ctx.published.version_name(ctx.version))}
        # a generalization version holding nothing back is read from the source's histogram
        levels = plan.solution.get("levels") if plan.method == "generalization" and not held.withheld and not held.carried else None
        checked = {**checked, "utility": utility.measure(ctx, prep, levels)}
        ctx.on_phase("verified")
        view = switch.switch_view(ctx, written.table)
        grants = access.grant(ctx)
        rec = record.record_success(ctx, prep, plan, candidate, held, written, checked, grants)
        handoff.committing()  # an interruption from here waits until the caller holds the outcome
    ctx.clock.mark("commit")
    return ReleaseOutcome(rec, plan, written.table, view)


def _dry_run(ctx: RunContext, prep: Prepared, method: ReleaseMethod, plan: ReleasePlan) -> ReleaseOutcome:
    ctx = replace(ctx, version=preview.next_version(ctx))
    stmts = preview.statements(ctx, prep, method, plan)
    return ReleaseOutcome(record.record_dry_run(ctx, prep, plan, stmts), plan, None, None, stmts)


def _skipped(ctx: RunContext, prep: Prepared) -> ReleaseOutcome:
    # [access] is not in the run key, so a change of reader roles alone is
    # applied here, to the current version's view, without publishing a copy of it
    with ctx.con.transaction():
        rec = record.record_skipped(ctx, prep, access.grant(ctx))
    table = ctx.published.version_table(rec.version)
    return ReleaseOutcome(rec, None, table, ctx.published.view())


def _drop_new_catalog(con: Connector, release: str) -> None:
    """Best effort: drop the private schema this failed run created and could not record its
    failure in, so that a run that wrote nothing leaves no empty ``_ppdp`` behind."""
    try:
        if catalog.has_catalog(con) and int(con.query(catalog_sql.count_other_runs(con.dialect), [release]).row(0)[0]):
            return  # another release's run recorded itself in it meanwhile: that catalog stays
    except PpdpError:
        pass  # the runs cannot be counted (the database failed this run): no run of this database recorded itself
    try:
        with con.transaction():
            con.execute(catalog_sql.drop_private_schema(con.dialect))
    except PpdpError:
        pass


def _tampered(ctx: RunContext, previous: RunRecord | None) -> str | None:
    """Why the current version's view or table is not what its run published, or None."""
    if previous is None or previous.version is None:
        return None
    return integrity.tampered(ctx.con, ctx.spec.output_schema, ctx.spec.output_name, int(previous.version),
                              (previous.verification or {}).get("content"))


@contextmanager
def _run_lock(con: Connector, release: str) -> Iterator[None]:
    """One run of a release at a time (the connector's run lock; refused, not waited for)."""
    if not con.try_lock(f"ppdp:{release}"):
        raise RunInProgress(f"Another run of release {release} is in progress; try again when it has finished.")
    try:
        yield
    finally:
        con.unlock(f"ppdp:{release}")


@contextmanager
def _schema_lock(con: Connector, schema: str) -> Iterator[None]:
    """Runs of different releases publish into one schema one at a time (waited for: their
    searches are done). Two transactions that both CREATE SCHEMA IF NOT EXISTS a new schema fail
    the second on PostgreSQL ("duplicate key ... pg_namespace_nspname_index"), which two request
    workers serving two jobs hit."""
    name = f"ppdp-schema:{schema}"
    while not con.try_lock(name):
        time.sleep(0.05)
    try:
        yield
    finally:
        con.unlock(name)


def reverify(con: Connector, name: str) -> dict[str, Any]:
    """Run the SQL verification again on the current version of release ``name``, against what
    was published (the stored Q), and say separately whether the source changed since."""
    from ppdp.engine.core.spec import spec_from_dict
    from ppdp.engine.privacy import ModelContext, build_model
    from ppdp.engine.release.stages.verify import check_models

    release = catalog.resolve_release(con, name)
    run = catalog.latest_success(con, release)
    if run is None:
        raise SpecError(f"No published release named {name!r} in {con.url}.")
    spec = spec_from_dict(run.spec)
    version = int(run.version or 0)  # a published run has its version
    if spec.sensitive:  # the checks join the stored Q by key in SQL, and this read-only check cannot rewrite it
        catalog.require_current_sa_keys(con)
    # bound to the sensitive values of the Q stored with the version (an ordered distance's order)
    # and to the source's size when it was released (k-map's estimated threshold)
    stored = catalog.stored_distribution(con, release, version)
    values = tuple(tuple(json.loads(v)) for v in stored["sa_value"].to_list()) if stored.height else ()
    context = ModelContext(tuple(spec.sensitive), values, spec.base_dir, spec.sensitive_hierarchy, run.source_rows)
    models = [build_model(m.name, m.param_dict()).bind(context) for m in spec.models]
    relation = ReleaseRelation(spec.output_schema, spec.output_name, con.dialect).version_table(version)
    source_changed: bool | None
    try:
        source = Q.Source(spec.schema, spec.table, spec.query, con.dialect, research=validate.research_of(models))
        described = validate.described_columns(spec, con, source)
        types = {c: t for c, t in described.items() if t is not None}
        source_changed = validate.source_fingerprint(con, source, spec.key, list(described), types) != run.source_fingerprint
    except PpdpError:
        source_changed = None  # the source is gone or no longer valid
    tampered = integrity.tampered(con, spec.output_schema, spec.output_name, version, (run.verification or {}).get("content"))
    expected = int(run.verification.get("rows", run.metrics.get("released_records", 0)))
    if con.relation_columns(spec.output_schema, ReleaseRelation(spec.output_schema, spec.output_name, con.dialect)
                            .version_name(version)) is None:  # nothing to check the models on
        return {"checks": [], "method_checks": [], "rows": None, "expected_rows": expected, "version": run.version,
                "release": release, "source_changed": source_changed, "passed": False, "tampered": tampered}
    method = method_of(spec)
    checks, method_checks = [], []
    if method.publishes_classes:
        levels = (run.solution or {}).get("levels")
        if spec.counts_persons:  # counted per person, as the run verified it (docs/design/person_unit.md)
            from ppdp.engine.release.stages.verify import check_models_per_person

            checks = check_models_per_person(con, spec, models, relation, release, version, uuid.uuid4().hex, levels)
        else:
            checks = check_models(con, spec, models, relation, release, version, levels)
    elif isinstance(method, RechecksVersion):  # rows without classes: the method's own checks
        method_checks = method.recheck(con, run, spec, relation, source_unchanged=source_changed is False)
    else:
        raise SpecError(f"Release {release} was published by method {method.name!r}, which has no check of a published "
                        "version; its run record keeps the checks of its run ('ppdp show').")
    rows = int(con.query(P.count_rows(relation))["n"][0])
    return {"checks": checks, "method_checks": method_checks, "rows": rows, "expected_rows": expected,
            "version": run.version, "release": release, "source_changed": source_changed, "tampered": tampered,
            "passed": all(c["passed"] for c in checks + method_checks) and rows == expected and tampered is None}
