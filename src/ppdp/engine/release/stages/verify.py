"""Stage 8: independent SQL checks of the written version, before the view may move.

Each privacy model is checked on the version table by a query of its own (t-closeness against
the Q stored for this version); the row count must be what the plan and the history stage
decided; every history class over all versions must satisfy every model (the cross-version
guarantee, re-checked from the published tables alone); and applying the delta to the previous
version must give this one exactly. Any failure raises: the transaction rolls back.
"""

from __future__ import annotations

from typing import Any

from ppdp.connectors.base import Connector
from ppdp.engine.core.spec import ReleaseSpec
from ppdp.engine.methods.base import ReleaseMethod, ReleasePlan
from ppdp.engine.methods.context import RunContext
from ppdp.engine.methods.results import Prepared, Published
from ppdp.engine.privacy import PrivacyModel, empty_ad
from ppdp.engine.release.stages.history import failing_classes, version_tables
from ppdp.engine.release.stages.population import population_classes
from ppdp.errors import VerificationError
from ppdp.sql import catalog as C
from ppdp.sql import history as H
from ppdp.sql import publish as P
from ppdp.sql import verify as V
from ppdp.sql.dialect import Dialect
from ppdp.sql.quoting import quote_table


def model_check_sql(spec: ReleaseSpec, m: PrivacyModel, relation: str, release: str, version: int, d: Dialect,
                    levels: dict[str, int] | None = None) -> str:
    """The model's check as SQL over ``relation`` (t-closeness against the Q stored for ``version``;
    a model that reads population counts against the population's classes of the version, which
    needs the version's levels). A model without one fails closed (engine/guards.py refuses it
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
        ad, classes = m.check_result(con.query(sql))
        ad_value = empty_ad(m) if ad is None else ad
        checks.append({"model": m.name, "params": m.params(), "ad": ad,
                       "classes": classes, "passed": bool(m.feasible(ad_value)) and ad is not None, "query": sql})
    return checks


def verify(ctx: RunContext, prep: Prepared, method: ReleaseMethod, plan: ReleasePlan, written: Published,
           expected_rows: int, published: list[int]) -> dict[str, Any]:
    """The checks of the written version ``written.table``, or VerificationError. The method's own
    checks run first (``extra_checks``); the models' class checks apply when the method's rows
    form equivalence classes (``publishes_classes``); a method whose rows do not (heterogeneous
    k-anonymity) verifies its model in its own checks."""
    table, delta_written, classes = written.table, written.delta == "written", method.publishes_classes
    extra = method.extra_checks(ctx, prep, plan, table)
    con, spec = ctx.con, ctx.spec
    checks = (check_models(con, spec, prep.models, table, ctx.release, ctx.version, plan.solution.get("levels"))
              if classes else [])
    rows = int(con.query(P.count_rows(table))["n"][0])
    out: dict[str, Any] = {"checks": checks, "rows": rows, "expected_rows": expected_rows}
    problems = [f"{c['model']} failed (AD = {c['ad']})" for c in checks if not c["passed"]]
    out["method_checks"] = list(extra)
    problems += [f"{c['check']} failed ({c.get('detail', '')})" for c in out["method_checks"] if not c["passed"]]
    if rows != expected_rows:
        problems.append(f"{rows} rows materialized, {expected_rows} expected")
    if rows == 0:
        problems.append("the version is empty")
    if published and classes:
        versions = version_tables(ctx, published + [ctx.version])
        # every row's history recomputed from the published tables alone (not the history
        # stage's), written once for the model queries
        sig_table = quote_table(C.PRIVATE_SCHEMA, f"vsig_{ctx.run_id}", ctx.dialect)
        con.execute(P.create_as(sig_table, H.signatures(versions, spec.qid_columns, list(spec.sensitive), ctx.version, ctx.dialect)))
        failing = failing_classes(ctx, prep, versions, ctx.version, P.select_all(sig_table))
        con.execute(P.drop_table(sig_table))
        out["cross_version"] = {"versions": len(versions), "failing_classes": {k: len(v) for k, v in failing.items()}}
        problems += [f"{model} fails on {len(sigs)} history class(es) across versions" for model, sigs in failing.items()]
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
