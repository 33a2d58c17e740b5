"""Stage 8: independent SQL checks of the written version, before the view may move.

Each privacy model is checked on the version table by a query of its own (t-closeness against
the Q stored for this version); the row count must be what the plan and the history stage
decided; every history class over all versions must satisfy every model (the cross-version
guarantee, derived again from the published tables alone by SQL of its own, sql/verify.py: this
stage imports nothing of the history stage, whose work it checks); and applying the delta to
the previous version must give this one exactly. Any failure raises: the transaction rolls back.
"""

from __future__ import annotations

from typing import Any

from ppdp.connectors.base import Connector
from ppdp.engine.core.person import failing_signatures
from ppdp.engine.core.spec import ReleaseSpec
from ppdp.engine.methods.base import ReleaseMethod, ReleasePlan
from ppdp.engine.methods.context import RunContext
from ppdp.engine.methods.results import Prepared, Published
from ppdp.engine.privacy import PrivacyModel, empty_ad, plan_oracle
from ppdp.engine.release.stages.population import population_classes
from ppdp.errors import VerificationError
from ppdp.sql import catalog as C
from ppdp.sql import person as SP
from ppdp.sql import publish as P
from ppdp.sql import verify as V
from ppdp.sql.dialect import Dialect
from ppdp.sql.quoting import quote_table


def model_check_sql(spec: ReleaseSpec, m: PrivacyModel, relation: str, release: str, version: int, d: Dialect,
                    levels: dict[str, int] | None = None) -> str:
    """The model's check as SQL over ``relation`` (t-closeness against the Q stored for ``version``;
    a model that reads population counts against the population's classes of the version, which
    needs the version's levels). A model without one fails closed (engine/release/stages/guards.py refuses it
    before any write)."""
    if m.requirements.population:
        population = population_classes(spec, m, release, version, levels, d)
        sql = None if population is None else m.population_version_sql(relation, spec.qid_columns, population, d)
    else:
        sql = m.version_sql(relation, spec.qid_columns, list(spec.sensitive), V.stored_q(release, version, d), d)
    if sql is None:
        raise VerificationError(f"{m.name} has no SQL verification of a version; nothing may be published under it.")
    return sql


def check_models(con: Connector, spec: ReleaseSpec, models: list[PrivacyModel], relation: str, release: str,
                 version: int, levels: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """Each model's SQL check of ``relation`` (``levels``: the version's, for population checks)."""
    checks = []
    for m in models:
        sql = model_check_sql(spec, m, relation, release, version, con.dialect, levels)
        frame = con.query(sql)
        ad, classes = m.check_result(frame)
        ad_value = empty_ad(m) if ad is None else ad
        checks.append({"model": m.name, "params": m.params(), "ad": ad, "achieved": m.achieved_value(frame, ad),
                       "classes": classes, "passed": bool(m.feasible(ad_value)) and ad is not None, "query": sql})
    return checks


def person_projection_columns(spec: ReleaseSpec, models: list[PrivacyModel]) -> list[str]:
    """The columns a version is projected onto persons by: the QIDs, and the sensitive
    attributes when a model reads them (they are then constant per person: validate refuses
    otherwise), so that the projection holds one row per person and class."""
    reads = any(m.requirements.sensitive_counts for m in models)
    return [*spec.qid_columns, *(spec.sensitive if reads else ())]


def check_models_per_person(con: Connector, spec: ReleaseSpec, models: list[PrivacyModel], relation: str,
                            release: str, version: int, run_id: str,
                            levels: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """Each model's own SQL check, run on the version projected onto persons (one row per
    distinct person and published class, the person's value left out; the persons are the
    release's private map of row ids, sql/person.py), so every
    count the check makes is a count of distinct persons (docs/design/person_unit.md)."""
    d = con.dialect
    projected = quote_table(C.PRIVATE_SCHEMA, f"persons_{run_id}", d)
    con.execute(P.drop_table(projected))
    con.execute(P.create_as(projected, SP.version_persons(relation, release, person_projection_columns(spec, models), d)))
    try:
        checks = check_models(con, spec, models, projected, release, version, levels)
        persons = int(con.query(P.count_rows(projected))["n"][0])  # one row per person (QIDs constant per person)
    finally:
        con.execute(P.drop_table(projected))
    return [c | {"unit": "person", "persons": persons, "query": c["query"].replace(projected, f"<{relation} projected onto persons>")}
            for c in checks]


def check_history_classes(ctx: RunContext, prep: Prepared, published: list[int]) -> dict[str, Any]:
    """Every history class over the published versions and this one, derived again from the
    version tables alone (sql/verify.py, not the history stage's histories), checked against
    every model in every version in which it is present: all classes, not only those this step
    reveals anew, so what the history stage left unchecked is checked here. The classes are
    written once (a private table) for the models' queries. Returns the number of versions and
    classes, and the failing classes' count per model."""
    con, d, spec = ctx.con, ctx.dialect, ctx.spec
    versions = [(v, ctx.published.version_table(v)) for v in [*published, ctx.version]]
    tables = dict(versions)
    name = f"vclasses_{ctx.run_id}"
    classes = quote_table(C.PRIVATE_SCHEMA, name, d)
    con.execute(P.create_as(classes, V.history_classes(versions, spec.qid_columns, list(spec.sensitive), d)))
    sizes = con.query(V.history_class_sizes(classes)).row(0, named=True)
    failing: dict[str, int] = {}
    for m in prep.models:
        queries = m.history_failures(P.select_all(classes), lambda v: V.history_class_values(classes, tables[v], list(spec.sensitive), d),
                                     lambda v: V.stored_q(ctx.release, v, d), list(tables), d=d)
        if queries is None:  # fail closed; engine/guards.py refuses such a model before any write
            raise VerificationError(f"{m.name} has no history check across versions; nothing may be published under it.")
        bad: set[Any] = set()
        for sql in queries:
            bad |= set(con.query(sql)["sig_now"].to_list())
        if bad:
            failing[f"{m.name} {m.params()}"] = len(bad)
    out: dict[str, Any] = {"versions": len(versions), "history_classes": int(sizes["classes"])}
    if ctx.spec.counts_persons:  # the signature rule per person (docs/design/person_unit.md)
        k = plan_oracle(prep.models).params.k
        bad_classes, persons, smallest = failing_signatures(con.query(SP.history_persons(P.select_all(classes), ctx.release, d)), k)
        out["smallest_person_signature"] = smallest
        if bad_classes:
            failing[f"k-anonymity per person {{'k': {k}}} ({persons} person(s) in smaller signature groups)"] = len(bad_classes)
    con.execute(P.drop_table(classes))
    return out | {"failing_classes": failing}


def verify(ctx: RunContext, prep: Prepared, method: ReleaseMethod, plan: ReleasePlan, written: Published,
           expected_rows: int, published: list[int]) -> dict[str, Any]:
    """The checks of the written version ``written.table``, or VerificationError. The method's own
    checks run first (``extra_checks``); the models' class checks apply when the method's rows
    form equivalence classes (``publishes_classes``); a method whose rows do not (heterogeneous
    k-anonymity) verifies its model in its own checks."""
    table, delta_written, classes = written.table, written.delta == "written", method.publishes_classes
    extra = method.extra_checks(ctx, prep, plan, table)
    con, spec = ctx.con, ctx.spec
    if classes and spec.counts_persons:  # a person release: every check counts persons
        checks = check_models_per_person(con, spec, prep.models, table, ctx.release, ctx.version, ctx.run_id,
                                         plan.solution.get("levels"))
    else:
        checks = (check_models(con, spec, prep.models, table, ctx.release, ctx.version, plan.solution.get("levels"))
                  if classes else [])
    rows = int(con.query(P.count_rows(table))["n"][0])
    out: dict[str, Any] = {"checks": checks, "rows": rows, "expected_rows": expected_rows}
    problems = [f"{c['model']} failed (AD = {c['ad']})" for c in checks if not c["passed"]]
    if prep.persons is not None and not published and checks and checks[0]["persons"] != plan.released_rows:
        problems.append(f"{checks[0]['persons']} persons published, {plan.released_rows} planned")
    if spec.person_varying and not published:  # the signature rule over the version's classes
        k = plan_oracle(prep.models).params.k
        bad, persons, smallest = failing_signatures(con.query(SP.version_class_persons(table, ctx.release, spec.qid_columns,
                                                                                       ctx.dialect)), k)
        out["smallest_person_signature"] = smallest
        if bad:
            problems.append(f"{persons} person(s) have a class signature shared by fewer than {k} persons")
    out["method_checks"] = list(extra)
    problems += [f"{c['check']} failed ({c.get('detail', '')})" for c in out["method_checks"] if not c["passed"]]
    if rows != expected_rows:
        problems.append(f"{rows} rows materialized, {expected_rows} expected")
    if rows == 0:
        problems.append("the version is empty")
    if published and classes:
        out["cross_version"] = check_history_classes(ctx, prep, published)
        problems += [f"{model} fails on {n} history class(es) across versions"
                     for model, n in out["cross_version"]["failing_classes"].items()]
    if published:  # without classes the method re-checks its own cross-version rule in ``extra``
        prev = ctx.published.version_table(published[-1])
        delta = ctx.published.delta_table()
        cols = [c for c, _ in con.relation_columns(spec.output_schema, ctx.published.version_name(ctx.version)) or []]
        if delta_written:
            m = con.query(P.delta_mismatch(delta, ctx.version, table, prev, cols, ctx.dialect)).row(0, named=True)
            out["delta"] = {k: int(v) for k, v in m.items()}
            if m["mismatch"] or m["applied_rows"] != m["current_rows"]:
                problems.append(f"applying the delta to v{published[-1]} does not give v{ctx.version} ({m['mismatch']} rows differ)")
    out["passed"] = not problems
    ctx.clock.mark("verification")
    if problems:
        exc = VerificationError(f"SQL verification of {table} failed ({'; '.join(problems)}); nothing was published.")
        exc.verification = out  # the failed run's record keeps what was checked and found
        raise exc
    return out
