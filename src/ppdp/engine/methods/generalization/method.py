"""Full-domain generalization by hierarchy levels plus record suppression, (G, S).

The plan is a level per QID and, per histogram row, how many records to keep (S*(G), docs/design/paper_notes.md
§3); the candidate rows are the source joined to the stored hierarchies at those levels, minus
the suppressed keys. A later version keeps the previous levels unless the spec asks otherwise
(dynamic.policy: "stable-levels" keeps them and recomputes S*; "reoptimize" searches again).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl

from ppdp.connectors.base import Connector
from ppdp.engine.core import catalog
from ppdp.engine.core.catalog import RunRecord
from ppdp.engine.core.encoding import COUNT_COLUMN
from ppdp.engine.core.person import failing_persons
from ppdp.engine.core.spec import ReleaseSpec, spec_diff
from ppdp.engine.methods.base import METHODS, ReleasePlan, WarmUp, WarmUpModels
from ppdp.engine.methods.context import RunContext
from ppdp.engine.methods.generalization.metrics import class_size_summary, report_metrics
from ppdp.engine.methods.generalization.objectives import evolve
from ppdp.engine.methods.generalization.objectives import search as objective_search
from ppdp.engine.methods.generalization.optimizers import (
    OBJECTIVE_SEARCH,
    OptimizerResult,
    Tracker,
    check_optimizer_models,
    check_optimizer_params,
    objective_search_of,
    optimizer_names,
    run_optimizer,
)
from ppdp.engine.methods.generalization.problem import Problem
from ppdp.engine.methods.generalization.progress import ProgressBar
from ppdp.engine.methods.results import Prepared
from ppdp.engine.privacy import PrivacyModel, build_model, plan_oracle
from ppdp.errors import ModelRefusal, SpecError
from ppdp.sql import catalog as C
from ppdp.sql import person as SP
from ppdp.sql import queries as Q
from ppdp.sql.dialects import GeneralizedRows, RebuildRows, hierarchies_table, suppressed_table

# Spec sections whose change means the previous levels are no longer a considered choice.
_SEARCH_INPUTS = ("optimizer", "privacy", "utility")


def _objective_search(spec: ReleaseSpec) -> str | None:
    """How the spec's optimizer takes its objective (None: TD, the optimizers' own measure); an
    optimizer that declares no way to take one refuses any other objective."""
    if spec.objective == "td":
        return None
    how = objective_search_of(spec.optimizer)
    if how is None:
        bounds = ", ".join(sorted(n for n, h in OBJECTIVE_SEARCH.items() if h == "bounds"))
        fitness = ", ".join(sorted(n for n, h in OBJECTIVE_SEARCH.items() if h == "fitness"))
        raise SpecError(f"utility.objective {spec.objective!r} runs with optimizer {bounds} (certified) or an "
                        f"evolutionary one ({fitness}), not {spec.optimizer!r}. "
                        "Hint: [optimizer] name = \"lattice\", or objective = \"td\".")
    return how


def optimize(prep: Prepared, *, progress: bool = True) -> tuple[Problem, OptimizerResult]:
    """Search the lattice of levels with the spec's optimizer."""
    spec = prep.spec
    problem = Problem(prep.table, prep.models, backend=spec.evaluator)
    bar = ProgressBar(spec.budget, label=spec.optimizer) if progress else None
    how = _objective_search(spec)
    try:
        if how == "fitness":
            result = evolve(problem, spec.objective, optimizer=spec.optimizer, budget=spec.budget, seed=spec.seed,
                            params=dict(spec.optimizer_params), progress=bar)
        elif how == "bounds":
            result = objective_search(problem, spec.objective, budget=spec.budget, optimizer=spec.optimizer,
                                      params=dict(spec.optimizer_params), progress=bar)
        else:
            result = run_optimizer(spec.optimizer, problem, budget=spec.budget, seed=spec.seed,
                                   params=dict(spec.optimizer_params), progress=bar)
    finally:
        if bar:
            bar.close()
    return problem, result


def compute_metrics(prep: Prepared, result: OptimizerResult) -> dict[str, Any]:
    """The spec's utility report, class sizes and each model's achieved value."""
    spec = prep.spec
    out: dict[str, Any] = report_metrics(prep.table, result.g, result.retained, spec.report,
                                         workload_queries=spec.workload_queries, workload_seed=spec.workload_seed)
    out["max_td"] = float(prep.table.n_records + prep.table.excluded_null_rows) * prep.table.n_qids
    out["records"] = prep.source_rows
    out["released_records"] = int(np.sum(result.retained))
    # the unit the histogram counts (docs/design/person_unit.md): released_records are persons
    out["unit"] = "person" if prep.persons is not None else "row"
    if prep.persons is not None:  # the run record's records / released_records stay rows
        out["persons"], out["released_persons"] = prep.source_persons, out["released_records"]
    out["class_sizes"] = class_size_summary(prep.table, result.g, result.retained)
    for m, ad in zip(prep.models, result.ad, strict=True):
        out[f"ad[{m.name}]"] = None if math.isinf(ad) else float(ad)
    return out


def solution_record(prep: Prepared, result: OptimizerResult) -> dict[str, Any]:
    return {
        "levels": {q: int(g) for q, g in zip(prep.spec.qid_columns, result.g, strict=True)},
        "heights": {q: int(h) for q, h in zip(prep.spec.qid_columns, prep.table.heights, strict=True)},
        "optimizer": result.optimizer, "budget": prep.spec.budget, "seed": prep.spec.seed,
        "evaluations": result.evaluations, "seconds": round(result.seconds, 3), "certified": result.certified,
        "feasible": result.feasible, "info": result.info,
    } | ({"not_certified_because": list(result.not_certified_because)} if result.not_certified_because else {})


def choose(prep: Prepared, previous: RunRecord | None, *, progress: bool) -> tuple[OptimizerResult, tuple[str, ...]]:
    """The dynamic policy: keep the previous levels (recomputing S*) unless told to re-optimize
    or the quasi-identifiers changed; say so when the spec's search settings changed but the
    levels were kept (they were chosen by the earlier settings)."""
    spec = prep.spec
    levels = (previous.solution or {}).get("levels", {}) if previous else {}
    if previous is None or spec.dynamic_policy == "reoptimize":
        return optimize(prep, progress=progress)[1], ()
    if list(levels) != spec.qid_columns or any(int(levels[q]) > int(h) for q, h in zip(spec.qid_columns, prep.table.heights, strict=True)):
        return optimize(prep, progress=progress)[1], (
            f"dynamic.policy {spec.dynamic_policy!r}: the quasi-identifiers or their hierarchies differ from "
            f"v{previous.version}'s, so the levels were searched again",)
    changed = spec_diff(previous.spec, spec.raw).among(_SEARCH_INPUTS)
    notices = (f"dynamic.policy {spec.dynamic_policy!r} kept v{previous.version}'s levels although the spec's "
               f"{', '.join(changed)} changed since; set dynamic.policy = \"reoptimize\" to search again",) if changed else ()
    problem = Problem(prep.table, prep.models, backend=spec.evaluator)
    g = np.array([int(levels[q]) for q in spec.qid_columns], dtype=np.int64)
    retained, ev = problem.evaluate_optimal(g[None, :])
    tracker = Tracker(problem, 1, name=f"stable-levels(v{previous.version})")
    tracker.offer(g[None, :], retained, ev)
    return tracker.result(certified=False, info={"policy": spec.dynamic_policy, "levels_from_version": previous.version}), notices


def _accepts(optimizer: str, tables: tuple[dict[str, Any], ...]) -> bool:
    """Whether ``optimizer`` accepts the models of these ``[[privacy.models]]`` tables (what
    ``Generalization.check_input`` asks of a release's models)."""
    try:
        check_optimizer_models(optimizer, [build_model(t["name"], {k: v for k, v in t.items() if k != "name"})
                                           for t in tables])
    except SpecError:
        return False
    return True


class Generalization:
    name = "generalization"
    publishes_classes = True
    generalizes_by_levels = True
    counts_persons = True  # its search counts whatever the histogram counts: persons in a person release
    private_tables: tuple[str, ...] = ()  # its levels and suppressed keys are in the shared tables

    def warm_ups(self, models: WarmUpModels) -> list[WarmUp]:
        """Every optimizer under the base model, and Flash with a suppression limit too (its
        traversal is another kernel than the zero-limit one); each other model set with the
        lattice and the GA with the exact oracle (their kernels differ per model kind), and with
        Flash where it accepts the set: beside k-anonymity alone Flash takes its plain traversal,
        which rolls a node's classes up (``Problem.evaluate_unsuppressed``) where every AD is the
        smallest class."""
        out = [WarmUp(f"{self.name}, {name}, {models.base_name}", models.base, name) for name in optimizer_names()]
        out.append(WarmUp(f"{self.name}, flash with a suppression limit, {models.base_name}", models.base, "flash",
                          optimizer_params=(("suppression_limit", 0.1),)))
        # the lattice at k = 10: on the sample some rows then have more partners than
        # optimizers/bounds.py BITSET_MIN_PARTNERS, and the box bounds read those from bitsets
        out.append(WarmUp(f"{self.name}, lattice with partner bitsets, {models.base_name} with k = 10",
                          tuple({**m, "k": 10} for m in models.base), "lattice"))
        # the lattice under a limit (its class bound and infeasible tops), and ARX's metrics as
        # objectives: by Flash's tags at a zero limit, scored in the bound's order under a limit,
        # from the classes on the lattice, and as the GA's fitness (objectives.py ``evolve``,
        # which scores a class-based metric by ``_objective_kernel.class_scores``)
        out.append(WarmUp(f"{self.name}, lattice with a suppression limit, {models.base_name}", models.base, "lattice",
                          optimizer_params=(("suppression_limit", 0.1),)))
        # at a zero limit its rounds and their tops' evaluations run in one kernel (lattice._tops_fused)
        out.append(WarmUp(f"{self.name}, lattice at a zero suppression limit, {models.base_name}", models.base,
                          "lattice", optimizer_params=(("suppression_limit", 0.0),)))
        out += [WarmUp(f"{self.name}, {optimizer}, objective {objective}, {models.base_name}", models.base, optimizer,
                       optimizer_params=params, objective=objective, budget=5_000)
                for optimizer, objective, params in (("flash", "loss", (("suppression_limit", 0.0),)),
                                                     ("flash", "discernibility", (("suppression_limit", 0.05),)),
                                                     ("lattice", "aecs", ()),
                                                     ("ga", "aecs", ()))]
        for label, sets in models.others:
            names = ("lattice", "id-dga+oracle", *(("flash",) if _accepts("flash", sets) else ()))
            out += [WarmUp(f"{self.name}, {name}, {label}", sets, name) for name in names]
        return out

    def check_database(self, spec: ReleaseSpec, con: Connector) -> None:
        """Nothing in the database beyond the source (validated by the shared stage)."""

    def check_params(self, spec: ReleaseSpec) -> None:
        if spec.method_params:
            raise SpecError(f"method 'generalization' takes no [method] params, got {sorted(k for k, _ in spec.method_params)}. "
                            "Hint: optimizer options go in [optimizer] params.")
        check_optimizer_params(spec.optimizer, dict(spec.optimizer_params))
        _objective_search(spec)

    def check_input(self, prep: Prepared) -> None:
        """The optimizer accepts the models (e.g. Flash needs monotone ones): before any write."""
        check_optimizer_models(prep.spec.optimizer, prep.models)

    def plan(self, ctx: RunContext, prep: Prepared, *, progress: bool) -> ReleasePlan:
        result, notices = choose(prep, ctx.previous, progress=progress)
        solution = solution_record(prep, result) | ({"notices": list(notices)} if notices else {})
        if prep.spec.person_varying:  # the search counted rows; persons are suppressed after it
            solution = solution | {"certified": False, "not_certified_because": [
                *solution.get("not_certified_because", []),
                "quasi-identifiers vary by row (source.person_varying): the search counts rows, and whole persons are "
                "suppressed afterwards by the signature rule, so neither the levels nor the suppression are proven optimal"]}
        return ReleasePlan("generalization", solution, compute_metrics(prep, result), int(np.sum(result.retained)),
                           state=result, notices=notices)

    def write_private_state(self, ctx: RunContext, prep: Prepared, plan: ReleasePlan) -> None:
        """The version's hierarchies and suppressed keys."""
        catalog.store_hierarchies(ctx.con, ctx.release, ctx.version, prep.hierarchies, ctx.run_id)
        result: OptimizerResult = plan.state
        self._suppress_rows(ctx, prep, result)
        if prep.spec.person_varying:  # after the rows' suppression: whole persons by the signature rule
            self._suppress_persons(ctx, prep, result)

    def _suppress_rows(self, ctx: RunContext, prep: Prepared, result: OptimizerResult) -> None:
        d, release, version, con = ctx.dialect, ctx.release, ctx.version, ctx.con
        if prep.table.excluded_null_rows == 0 and np.array_equal(result.retained, prep.table.counts):
            return  # nothing is suppressed: no key to record, and no pass over the source to find none
        stage = f"retained_{ctx.run_id}"
        retained = prep.table.values.with_columns(pl.Series(COUNT_COLUMN, result.retained, dtype=pl.Int64))
        con.write_frame(C.PRIVATE_SCHEMA, stage, retained)
        spec = prep.spec
        if prep.persons is None:
            keys_sql = Q.suppressed_keys_query(prep.source, spec.key, spec.qid_columns, list(spec.sensitive), stage)
        else:  # the histogram counts persons: suppression takes each chosen person's every row
            person_keys = Q.suppressed_keys_query(prep.persons, spec.person_column, spec.qid_columns, list(spec.sensitive), stage)
            keys_sql = SP.person_rows_keys(prep.source, spec.key, spec.person_column, person_keys)
        con.execute(C.insert_suppressed(keys_sql, d), [release, version])
        con.execute(C.drop_private(stage, d))

    def _suppress_persons(self, ctx: RunContext, prep: Prepared, result: OptimizerResult) -> None:
        """QIDs that vary by row (docs/design/person_unit.md): at the chosen levels, every person
        whose signature (the set of classes its remaining rows are in) is shared by fewer than k
        persons is suppressed whole. Removing such persons changes no other person's signature,
        and removes every member of each failing group, so one pass leaves every signature shared
        by at least k persons."""
        spec, d, con = prep.spec, ctx.dialect, ctx.con
        levels = {q: int(g) for q, g in zip(spec.qid_columns, result.g, strict=True)}
        full = Q.Source(spec.schema, spec.table, spec.query, d, research=prep.source.research)
        select = Q.release_select(full, release=ctx.release, version=ctx.version, columns=[spec.person_column, *spec.qid_columns],
                                  levels=levels, key=spec.key, row_ids=False).sql(dialect=d.name)
        pairs = con.query(SP.generalized_person_classes(select, spec.person_column, spec.qid_columns, d))
        k = plan_oracle(prep.models).params.k
        failing = failing_persons(pairs, k)
        if not failing:
            return
        if len(failing) == pairs["person"].n_unique():
            raise ModelRefusal(f"At the levels found, no {k} persons share the classes their rows fall into "
                               f"(source.person_varying {list(spec.person_varying)}), so every person would be "
                               "suppressed; nothing was published. Hint: coarser hierarchies for the varying "
                               "quasi-identifiers, or fewer of them.")
        stage = f"persons_out_{ctx.run_id}"
        con.write_frame(C.PRIVATE_SCHEMA, stage, pl.DataFrame({"key": failing}, schema={"key": pl.String}))
        con.execute(C.insert_suppressed(SP.new_person_keys(full, spec.key, spec.person_column, stage, ctx.release, ctx.version), d),
                    [ctx.release, ctx.version])
        con.execute(C.drop_private(stage, d))

    def candidate_select(self, ctx: RunContext, prep: Prepared, plan: ReleasePlan) -> str:
        spec = prep.spec
        result: OptimizerResult = plan.state
        levels = {q: int(g) for q, g in zip(spec.qid_columns, result.g, strict=True)}
        full = Q.Source(spec.schema, spec.table, spec.query, ctx.dialect, research=prep.source.research)
        select = Q.release_select(full, release=ctx.release, version=ctx.version, columns=prep.released_columns,
                                  levels=levels, key=spec.key)
        return select.sql(dialect=ctx.dialect.name)

    def carries(self, plan: ReleasePlan, previous: RunRecord) -> bool:
        """A previous row is valid in this version when the levels are the same."""
        return (previous.solution or {}).get("levels") == plan.solution.get("levels")

    def covers(self, model: PrivacyModel) -> bool:
        """Never by itself: every model is verified by its own SQL check (publishes classes)."""
        return False

    def extra_checks(self, ctx: RunContext, prep: Prepared, plan: ReleasePlan, table: str) -> list[dict[str, Any]]:
        return []  # the models' checks on the version table are the whole verification

    def rebuild_rows(self, con: Connector, run: RunRecord, spec: ReleaseSpec) -> RebuildRows:
        """The version's hierarchies and suppressed keys, and the levels: the joins ppdp ran."""
        d, version = con.dialect, int(run.version or 0)
        hierarchies = con.query(C.version_hierarchies(d), [run.release, version])
        suppressed = con.query(C.version_suppressed(d), [run.release, version])
        levels = {q: int(g) for q, g in run.solution["levels"].items()}
        return RebuildRows(GeneralizedRows(levels), (hierarchies_table(tuple(hierarchies.rows())),
                                                     suppressed_table(tuple(suppressed.rows()))))


METHODS.register(Generalization.name)(Generalization())
