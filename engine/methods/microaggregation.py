"""Microaggregation release method: DRASL's groups of at least K (PAPER_NOTES §6).

The records are clustered by DRASL Alg. 1 (engine/microaggregation/cluster.py: the metric f_link
of eq. 14 with the synonymous-linkage probability of eq. 13 from a sensitive-value catalogue);
each group's QIDs are published generalized to the group: a continuous QID as the range
``[lo, hi]`` of the group's values, a semantic nominal QID as the lowest common ancestor of the
group's values in the QID's hierarchy. Sensitive values and kept columns are released as they
are. Group membership lives only in ``_ppdp``.

Spec: ``[method] name = "microaggregation"`` and ``params = { algorithm = "drasl", k = 8,
alpha = 0.6, beta = 0.4, seed = 0, catalogue = "diseases32" | "path/to/catalogue.csv",
kinds = { age = "continuous" } }``; K defaults to the k of the spec's k-anonymity model (one is
required: it is what the version check verifies). Kinds default from the column type (numeric:
continuous, otherwise semantic nominal over the QID's hierarchy).

Not yet: DRASL's dynamic updates (Alg. 2-5, forged records). A later run of a microaggregation
release is refused with that reason rather than re-clustered (a re-clustering would move nearly
every record to a new group, which the cross-version check would then hold back or refuse).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from engine import catalog
from engine.catalog import RunRecord
from engine.errors import DataError, SpecError
from engine.hierarchy import Hierarchy
from engine.methods import METHODS, ReleasePlan
from engine.microaggregation.cluster import first_release
from engine.microaggregation.distances import QidKind, default_kind, encode, fit_schema
from engine.microaggregation.entropy import ALPHA, BETA
from engine.microaggregation.linkage import (
    BUILTIN_CATALOGUES,
    SensitiveCatalogue,
    builtin_catalogue,
    linkage_probability,
    load_catalogue,
)
from engine.stages.context import RunContext
from engine.stages.validate import Prepared
from sql import micro as M
from sql import queries as Q

PARAMS = {"algorithm", "k", "alpha", "beta", "seed", "catalogue", "kinds"}
SUPPORTED_KINDS = ("continuous", "semantic")


@dataclass(frozen=True)
class Settings:
    """The method's validated ``[method] params``."""

    k: int
    alpha: float
    beta: float
    seed: int
    catalogue: str
    kinds: tuple[tuple[str, str], ...]


def settings(spec) -> Settings:
    """Validate ``[method] params`` against the spec (SpecError with one line)."""
    params = dict(spec.method_params)
    unknown = set(params) - PARAMS
    if unknown:
        raise SpecError(f"method 'microaggregation' does not take {sorted(unknown)}. Known: {', '.join(sorted(PARAMS))}.")
    if params.get("algorithm", "drasl") != "drasl":
        raise SpecError(f"method.params.algorithm {params['algorithm']!r} is not available. Hint: algorithm = \"drasl\".")
    k_models = [m.param_dict().get("k") for m in spec.models if m.name == "k-anonymity"]
    if not k_models:
        raise SpecError("method 'microaggregation' publishes groups of at least K: add [[privacy.models]] name = \"k-anonymity\" "
                        "k = K (the version check verifies it).")
    k = params.get("k", k_models[0])
    if not isinstance(k, int) or isinstance(k, bool) or k < 2 or k != k_models[0]:
        raise SpecError(f"method.params.k must be an integer >= 2 equal to the k-anonymity model's k ({k_models[0]}), got {k!r}.")
    for name in ("alpha", "beta"):
        v = params.get(name, ALPHA if name == "alpha" else BETA)
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
            raise SpecError(f"method.params.{name} must be a finite number >= 0, got {v!r}.")
    seed = params.get("seed", spec.seed)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise SpecError(f"method.params.seed must be an integer, got {seed!r}.")
    catalogue = params.get("catalogue")
    if not isinstance(catalogue, str):
        raise SpecError("method 'microaggregation' needs params.catalogue: a sensitive-value catalogue "
                        f"({', '.join(sorted(BUILTIN_CATALOGUES))}, or an ARX CSV file value;category;...;*).")
    if len(spec.sensitive) != 1:
        raise SpecError(f"method 'microaggregation' needs exactly one sensitive column (its catalogue's values), got {len(spec.sensitive)}.")
    kinds = params.get("kinds", {})
    if not isinstance(kinds, dict):
        raise SpecError("method.params.kinds must be a table, e.g. kinds = { age = \"continuous\" }.")
    for col, kind in kinds.items():
        if col not in spec.qid_columns:
            raise SpecError(f"method.params.kinds names {col!r}, which is not a quasi-identifier.")
        if kind not in SUPPORTED_KINDS:
            raise SpecError(f"method.params.kinds.{col} = {kind!r}: the microaggregation release publishes "
                            f"{' and '.join(SUPPORTED_KINDS)} QIDs. Hint: give the QID a hierarchy and kind \"semantic\".")
    return Settings(int(k), float(params.get("alpha", ALPHA)), float(params.get("beta", BETA)), int(seed), catalogue,
                    tuple(sorted(kinds.items())))


def _catalogue(spec, name: str) -> SensitiveCatalogue:
    if name in BUILTIN_CATALOGUES:
        return builtin_catalogue(name, spec.sensitive[0])
    path = Path(name) if Path(name).is_absolute() else Path(spec.base_dir) / name
    if not path.exists():
        raise SpecError(f"Catalogue {str(path)!r} does not exist. Hint: one of {', '.join(sorted(BUILTIN_CATALOGUES))} or a CSV path.")
    return load_catalogue(path, spec.sensitive[0])


def _lca(h: Hierarchy, values: list[str]) -> str:
    """The lowest level at which the hierarchy maps all ``values`` to one label."""
    code = h.leaf_code
    rows = [h.rows[code[v]] for v in values]
    for level in range(h.height + 1):
        labels = {r[level] for r in rows}
        if len(labels) == 1:
            return labels.pop()
    return h.rows[0][-1]


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


class Microaggregation:
    name = "microaggregation"
    publishes_classes = True

    def check_params(self, spec) -> None:
        """The parameters and the catalogue (it must load) before anything is read or written."""
        _catalogue(spec, settings(spec).catalogue)

    def plan(self, ctx: RunContext, prep: Prepared, *, progress: bool) -> ReleasePlan:
        spec = prep.spec
        if ctx.previous is not None:
            raise SpecError(f"Release {ctx.release} already has v{ctx.previous.version}: dynamic microaggregation (DRASL "
                            "Alg. 2-5, forged records) is not available yet, and re-clustering would move nearly every "
                            "record to a new group. Hint: publish the new data under a new output name.")
        s = settings(spec)
        catalogue = _catalogue(spec, s.catalogue)
        # in key order: the clustering (seeded) must not depend on the order the database returns rows in
        records = ctx.con.query(M.record_select(prep.source, spec.key, spec.qid_columns, list(spec.sensitive))).sort("__key")
        sa = spec.sensitive[0]
        if records[sa].null_count():
            raise DataError(f"The sensitive column {sa!r} has NULL values; every record needs a catalogue value.")
        unknown = sorted(set(records[sa].to_list()) - set(catalogue.values))
        if unknown:
            raise DataError(f"{len(unknown)} value(s) of {sa!r} are not in the catalogue {s.catalogue!r}: "
                            f"{', '.join(map(repr, unknown[:5]))}. Hint: add them to the catalogue.")
        declared = dict(s.kinds)
        kinds = []
        for q, h in zip(spec.qid_columns, prep.hierarchies, strict=True):
            kind = declared.get(q)
            kinds.append(QidKind(q, kind, hierarchy=h if kind == "semantic" else None) if kind
                         else default_kind(q, records.schema[q], hierarchy=h))
        if any(k.kind not in SUPPORTED_KINDS for k in kinds):
            raise SpecError("method 'microaggregation' needs every QID continuous or semantic (with a hierarchy).")
        columns = {q: (records[q].to_list() if k.kind == "continuous" else [str(v) for v in records[q].to_list()])
                   for q, k in zip(spec.qid_columns, kinds, strict=True)}
        grouping = first_release(encode(fit_schema(kinds, columns), columns), catalogue.codes(records[sa].to_list()),
                                 catalogue, k=s.k, alpha=s.alpha, beta=s.beta, seed=s.seed)
        keys = records["__key"].to_list()
        members, labels = [], []
        sa_values = records[sa].to_list()
        total_pr = 0.0
        for g, rows in enumerate(grouping.groups):
            members += [(keys[r], g) for r in rows]
            total_pr += linkage_probability([sa_values[r] for r in rows], catalogue)
            for k in kinds:
                vals = [columns[k.column][r] for r in rows]
                label = (f"[{_number(min(vals))}, {_number(max(vals))}]" if k.kind == "continuous" else _lca(k.hierarchy, vals))
                labels.append((g, k.column, label))
        sizes = grouping.sizes()
        solution = {"method": "microaggregation", "algorithm": "drasl", "k": s.k, "alpha": s.alpha, "beta": s.beta,
                    "seed": s.seed, "catalogue": s.catalogue, "kinds": {k.column: k.kind for k in kinds},
                    "groups": len(sizes), "certified": False}
        metrics = {"records": prep.source_rows, "released_records": len(keys), "suppressed": prep.source_rows - len(keys),
                   "groups": len(sizes), "group_size": {"min": min(sizes), "max": max(sizes), "mean": float(np.mean(sizes))},
                   "total_pr": total_pr}  # DRASL eq. 15: the sum over groups of eq. 13
        state = (pl.DataFrame(members, schema={"key": pl.String, "grp": pl.Int32}, orient="row"),
                 pl.DataFrame(labels, schema={"grp": pl.Int32, "attribute": pl.String, "value": pl.String}, orient="row"),
                 tuple(k.column for k in kinds if k.kind == "continuous"), tuple(k.column for k in kinds if k.kind == "semantic"))
        return ReleasePlan("microaggregation", solution, metrics, len(keys), state=state)

    def write_private_state(self, ctx: RunContext, prep: Prepared, plan: ReleasePlan) -> None:
        """Group membership, group labels, and the semantic QIDs' hierarchies (for the check)."""
        con = ctx.con
        members, labels, _, semantic = plan.state
        for stmt in M.ddl(ctx.dialect):
            con.execute(stmt)
        for table, frame in (("micro_groups", members), ("micro_labels", labels)):
            catalog.append_version_rows(con, table, ctx.release, ctx.version, frame, ctx.run_id)
        catalog.store_hierarchies(con, ctx.release, ctx.version, [h for h in prep.hierarchies if h.attribute in semantic], ctx.run_id)

    def candidate_select(self, ctx: RunContext, prep: Prepared, plan: ReleasePlan) -> str:
        spec = prep.spec
        full = Q.Source(spec.schema, spec.table, spec.query, ctx.dialect)
        return M.candidate_select(full, release=ctx.release, version=ctx.version, columns=prep.released_columns,
                                  qids=spec.qid_columns, key=spec.key)

    def carries(self, plan: ReleasePlan, previous: RunRecord) -> bool:
        return False  # no later versions yet (see the module docstring)

    def extra_checks(self, ctx: RunContext, prep: Prepared, plan: ReleasePlan, table: str) -> list[dict[str, Any]]:
        """Every generalized value covers its record's source value (independent SQL)."""
        spec = prep.spec
        _, _, continuous, semantic = plan.state
        full = Q.Source(spec.schema, spec.table, spec.query, ctx.dialect)
        sql = M.uncovered_query(table, full, release=ctx.release, version=ctx.version, key=spec.key,
                                continuous=list(continuous), semantic=list(semantic))
        n = int(ctx.con.query(sql)["uncovered"][0])
        return [{"check": "generalized values cover the source values", "passed": n == 0, "uncovered": n,
                 "detail": f"{n} published value(s) do not cover their record's source value", "query": sql}]


METHODS.register("microaggregation")(Microaggregation())
