"""Heterogeneous k-anonymity release method (docs/design/paper_notes.md §7): every record its own generalization.

The solution is a k-regular bipartite graph between original tuples and anonymized tuples
(engine/methods/heterogeneous/graph.py; the self edge (i, i') is always in it, Doka et al.'s first matching):
anonymized tuple i' carries original i's sensitive and kept columns and generalizes the k
originals matched to it — a numeric QID as the columns ``<q>_min`` and ``<q>_max``, a categorical
QID as the sorted set of its values joined by ``|`` (sql/heterogeneous.py). The graph starts from
k-member, l-greedy or the Hungarian heuristic and is improved by the iterated local search of
Alg. 1-2 (engine/methods/heterogeneous/ils.py) for GCP or SIL. The edges live only in ``_ppdp``.

Equivalence classes do not exist here, so the class-based model checks do not apply
(``publishes_classes = False``); the verification is the issue's: from the published table and
the source alone, every published tuple covers at least k source tuples and every source tuple
is covered by at least k published tuples; from the private edges, the graph is exactly
k-regular with every self edge, and every edge is consistent.

Later versions. The previous version's graph is repaired locally
(engine/methods/heterogeneous/repair.py: deleted pairs re-paired, inserted tuples swapped in with k-1 edges,
modified tuples keep their edges), then the search runs for the budget from it. Rows keep their
``ppdp_row_id``; versions and ``__delta`` are the shared stages'.

What the cross-version check means here. The attacker holds every version and delta, knows
every person's QIDs in every version and who joined, left or changed (their own columns). For a
person p, a published row r is a *candidate* (could be p's) unless some published version v
(u the published version before it) rules it out:
  (A) r is published in v while p is not in the source of v, or r does not cover p's QIDs of v
      (p's own row always covers p; a ghost, below, is read as its person still there);
  (B) r is published in u, p is in the source of u and v, and r is not in v (a person's row is
      never withdrawn while the person stays; a new person's row may appear late: withheld);
  (C) r is in u and v, p is in the source of u and v, and whether r's own (non-QID) columns
      changed differs from whether p's changed.
The check (sql/heterogeneous.py ``cross_version_failures``): every person whose row is in the new
version, and every person who left at this step, keeps at least k candidates. Rows that vanish
(B) and rows whose own columns change (C) shrink others' candidate sets, which is why a lone
departure or a lone change of a sensitive value is caught: the one vanished (changed) row is
the person's (and is then held back, below). To keep repaired and re-searched graphs from
shrinking candidate sets, published generalizations never narrow: a tuple covers its edges, every original it covered before that
is still present (at its current values, ``_ppdp.hetero_members``), and its previous ranges and
sets; so a person covered by a row stays covered while both remain. The price is utility that
can only widen across versions (a fresh release, a new output name, starts tight again).

Holding back: a new person with fewer than k candidates is withheld (left out of the graph, the
version re-planned without them) until later versions bring enough similar records.

A departure or a change of own columns that would single someone out (the one
vanished or changed row is the person's, and "publish less often" cannot help a lone departure)
is held back too, and the version is still published:
  - a departed record becomes a *ghost*: it stays a node of the graph at its last QIDs (from the
    previous version's ``hetero_sources``) and its row stays published under its row id with its
    last own columns (copied from the previous version's table, sql/heterogeneous.py
    ``candidate_select``); it is repaired, searched and widened like any node and goes at the
    first version whose check passes without it (k-1 similar rows vanishing with it);
  - a record whose own-column change would single it out keeps its previous own columns in its
    row (a *held change*), its QIDs followed as usual, until the change is safe to show.
Why the check still holds. The ghost and the held record are stored in ``hetero_sources`` as the
record at its frozen values (marked ``__frozen``), so the rule above reads a ghost as a person who
stayed with their last QIDs and own columns and a held change as a change made later. That is the
view of an attacker who knows more than the real one (when each ghost goes, when each change is
shown): the real attacker's candidate sets are unions over the possible times, so at least k
for the strong attacker means at least k for the real one. A ghost is a full graph node, so the
graph stays k-regular over present records and ghosts (every edge lies in a perfect matching).
A failing person who stayed unchanged while nothing of the step is left to hold back makes the
step refuse. ``dynamic.policy = "strict"`` refuses instead of holding back;
``dynamic.max_repair_fraction`` bounds the withheld, ghost and held rows together.

Starting from another release (§5.5). ``initial = "release"`` with
``from = "<schema>.<name>"`` improves an existing ppdp generalization or microaggregation release
of the same source (``source`` table/schema/query/file and key as given in both specs; otherwise
a one-line SpecError names the difference): the classes of its current version are read
privately (a generalization's published QID tuples mapped to keys through ``_ppdp.row_ids``, a
microaggregation's ``_ppdp.micro_groups``), made a partition of today's records
(engine/methods/heterogeneous/convert.py: records it suppressed or never saw, and members of classes now
smaller than k, are clustered by k-member among themselves, or, fewer than k, join the class
they widen least), converted to a k-regular graph and searched. The run record's solution
carries ``from_release`` (release, version, method, classes, pooled records, the converted
graph's GCP and SIL) and ``initial_objective`` / ``final_objective`` (before and after the
search; ``objective`` stays the objective's name). Only the first version starts from the other
release: later versions repair this release's own graph (and restart with k-member if the repair
finds no valid swap).

Spec: ``[method] name = "heterogeneous"``, ``params = { initial = "k-member" | "l-greedy" |
"hungarian" | "release", from = "<schema>.<name>", objective = "gcp" | "sil", seconds = 30,
seed = 0, neighbors = 32 }`` (neighbors: the local search's candidate lists, engine/methods/heterogeneous/neighbors.py;
0 = the paper's scan of every node); k is the k of the spec's k-anonymity model (the only model this method supports);
the search budget is ``optimizer.budget`` move evaluations. A later version needs the same k.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import polars as pl

from ppdp.connectors.base import Connector
from ppdp.engine.core import catalog
from ppdp.engine.core.catalog import RunRecord
from ppdp.engine.core.spec import ReleaseSpec
from ppdp.engine.methods.base import METHODS, ReleasePlan, WarmUp, WarmUpModels
from ppdp.engine.methods.context import MAX_ROUNDS, RunContext, published_versions
from ppdp.engine.methods.heterogeneous import initial as I
from ppdp.engine.methods.heterogeneous.convert import graph_from_classes
from ppdp.engine.methods.heterogeneous.ils import iterated_local_search
from ppdp.engine.methods.heterogeneous.incremental import Objective
from ppdp.engine.methods.heterogeneous.metrics import QidTable, gcp, sil
from ppdp.engine.methods.heterogeneous.repair import RepairError, repair_graph
from ppdp.engine.methods.results import Candidate, HistoryOutcome, Prepared
from ppdp.engine.privacy import PrivacyModel, build_model
from ppdp.engine.privacy.k_anonymity import KAnonymity
from ppdp.errors import DataError, SpecError, VerificationError
from ppdp.sql import catalog as C
from ppdp.sql import heterogeneous as HS
from ppdp.sql import microaggregation as M
from ppdp.sql import publish as P
from ppdp.sql import queries as Q
from ppdp.sql.dialects import RebuildRows
from ppdp.sql.relations import ReleaseRelation

PARAMS = {"initial", "from", "objective", "seconds", "seed", "neighbors"}
# The local search scans partners among each tuple's 32 nearest (engine/methods/heterogeneous/neighbors.py),
# then the full neighbourhood at a local optimum: on adult (14 attributes, 10,000 tuples, k = 5,
# 20M evaluations) GCP RPI 5.3-5.8 % over five seeds against 0.09 % for the paper's full scan
# alone (benchmarks/results/hetero/README.md); 0 restores the paper's Alg. 2.
DEFAULT_NEIGHBORS = 32
INITIAL = {"k-member": I.k_member, "l-greedy": I.l_greedy, "hungarian": I.hungarian}
FROM_RELEASE = "release"  # params.initial: the classes of the existing release params.from (§5.5)
CONVERTIBLE = ("generalization", "microaggregation")  # the methods whose releases have classes
SOURCE_FIELDS = ("table", "schema", "query", "file", "key")  # what must match for "the same source"


@dataclass(frozen=True)
class Settings:
    k: int
    initial: str
    objective: Objective
    seconds: float
    seed: int
    from_release: str | None = None  # params.from: set exactly when initial = "release" (settings checks both ways)
    neighbors: int = DEFAULT_NEIGHBORS  # params.neighbors: candidate-list size, 0 = full scan


def settings(spec) -> Settings:
    params = dict(spec.method_params)
    unknown = set(params) - PARAMS
    if unknown:
        raise SpecError(f"method 'heterogeneous' does not take {sorted(unknown)}. Known: {', '.join(sorted(PARAMS))}.")
    models = [build_model(m.name, m.param_dict()) for m in spec.models]
    if len(models) != 1 or not isinstance(models[0], KAnonymity):
        raise SpecError("method 'heterogeneous' publishes heterogeneous k-anonymity: give exactly one model, "
                        f"[[privacy.models]] name = \"{KAnonymity.name}\" k = K.")
    k = models[0].k
    if k < 2:
        raise SpecError(f"method 'heterogeneous' needs k >= 2, got {k}.")
    initial = params.get("initial", "k-member")
    if initial not in INITIAL and initial != FROM_RELEASE:
        raise SpecError(f"method.params.initial {initial!r} is not available. Known: {', '.join([*INITIAL, FROM_RELEASE])}.")
    source = params.get("from")
    if initial == FROM_RELEASE and (not isinstance(source, str) or not source.strip()):
        raise SpecError("method.params.initial = \"release\" needs params.from = \"<schema>.<name>\", an existing "
                        "generalization or microaggregation release of the same source.")
    if initial != FROM_RELEASE and source is not None:
        raise SpecError(f"method.params.from applies to initial = \"release\" only, not to {initial!r}. "
                        "Hint: set initial = \"release\" or remove params.from.")
    objective = params.get("objective", "gcp")
    if objective not in ("gcp", "sil"):
        raise SpecError(f"method.params.objective must be \"gcp\" or \"sil\", got {objective!r}.")
    objective = cast(Objective, objective)  # one of the two, checked just above
    seconds = params.get("seconds", 30)
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not math.isfinite(seconds) or seconds <= 0:
        raise SpecError(f"method.params.seconds must be a positive number, got {seconds!r}.")
    seed = params.get("seed", spec.seed)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise SpecError(f"method.params.seed must be an integer, got {seed!r}.")
    neighbors = params.get("neighbors", DEFAULT_NEIGHBORS)
    if not isinstance(neighbors, int) or isinstance(neighbors, bool) or neighbors < 0:
        raise SpecError(f"method.params.neighbors must be an integer >= 0 (0 = the paper's full scan), got {neighbors!r}.")
    return Settings(k, initial, objective, float(seconds), seed, source, neighbors)


def _is_numeric(dtype: pl.DataType) -> bool:
    return dtype.is_numeric()


@dataclass(frozen=True, eq=False)
class HeteroState:
    """What the method decided for a version: the frames to store and what its SQL needs."""

    edges: pl.DataFrame  # original key, anonymized key
    members: pl.DataFrame  # original key, anonymized key: the edges plus earlier versions' still present
    values: pl.DataFrame  # key, attribute, lo, hi, label: each anonymized tuple's generalization
    sources: pl.DataFrame  # key, attribute, num, label: every source record's QIDs and own digest
    numeric: tuple[str, ...]
    categorical: tuple[str, ...]
    own: tuple[str, ...]  # released non-QID columns (the record's own values)
    graph_keys: frozenset[str]  # the records in this version's graph (published unless withheld)
    new_keys: frozenset[str]  # graph records that were not in the previous version's graph
    # quoted previous version table, when the version has ghosts or held changes:
    # their rows' own columns are copied from it
    previous_table: str | None = None


# The texts of a record's own columns are joined by OWN_SEPARATOR, NULL written as OWN_NULL. So
# that the join is injective (("a\x1fb", "c") and ("a", "b\x1fc") must differ, as must NULL and
# the text "\x00"), each text escapes those two characters and the escape itself; a text holding
# none of the three, which is nearly every text, keeps the digest it had before the escape.
OWN_SEPARATOR, OWN_NULL, OWN_ESCAPE = "\x1f", "\x00", "\x1e"
_OWN_ESCAPES = str.maketrans({OWN_ESCAPE: OWN_ESCAPE + "0", OWN_SEPARATOR: OWN_ESCAPE + "1", OWN_NULL: OWN_ESCAPE + "2"})


def _digest(values: tuple) -> str:
    """A record's own released columns as one digest (the cross-version check compares them):
    md5 of their escaped texts joined (OWN_SEPARATOR, above)."""
    joined = OWN_SEPARATOR.join(OWN_NULL if v is None else str(v).translate(_OWN_ESCAPES) for v in values)
    return hashlib.md5(joined.encode()).hexdigest()


class Heterogeneous:
    name = "heterogeneous"
    publishes_classes = False
    generalizes_by_levels = False
    private_tables: tuple[str, ...] = HS.PRIVATE_TABLES

    def warm_ups(self, models: WarmUpModels) -> list[WarmUp]:
        """Each initial heuristic under each objective, half a second of search each."""
        return [WarmUp(f"{self.name}, {initial}, {objective}", models.base, budget=20_000,
                       method_params=(("initial", initial), ("objective", objective), ("seconds", 0.5)))
                for initial in INITIAL for objective in ("gcp", "sil")]

    def check_params(self, spec: ReleaseSpec) -> None:
        settings(spec)

    def check_database(self, spec: ReleaseSpec, con: Connector) -> None:
        """The checks that need the database, before anything is written: the release named by
        ``params.from`` exists and has classes of the same source (``source_release``)."""
        s = settings(spec)
        if s.from_release is not None:  # initial = "release"
            source_release(con, spec, s.from_release)

    def check_continuation(self, ctx: RunContext, prep: Prepared) -> None:
        """The version guard's hook: refuse, before anything is written, a graph that cannot be
        continued (refused later, it would come after the run record was written)."""
        if ctx.previous is not None:
            self._check_continuable(ctx, ctx.previous, prep, settings(prep.spec))

    def plan(self, ctx: RunContext, prep: Prepared, *, progress: bool) -> ReleasePlan:
        self.check_continuation(ctx, prep)  # (also run by the guards stage; kept for a direct call)
        return self._decide(ctx, prep, frozenset())

    def _check_continuable(self, ctx: RunContext, previous: RunRecord, prep: Prepared, s: Settings) -> None:
        """Refuse when the graph of the version ``previous`` published cannot be continued."""
        prev = previous.solution or {}
        if prev.get("method") != "heterogeneous" or prev.get("k") != s.k:
            raise SpecError(f"Release {ctx.release} v{previous.version} was not published by method 'heterogeneous' with "
                            f"k = {s.k}; its graph cannot be continued. Hint: publish under a new output name, or restore k.")
        own = [c for c in prep.released_columns if c not in prep.spec.qid_columns]
        before = (sorted(prev.get("numeric_qids", []) + prev.get("categorical_qids", [])), prev.get("own_columns"))
        if before != (sorted(prep.spec.qid_columns), own) and prev.get("sources_stored"):
            raise SpecError(f"Release {ctx.release} v{previous.version} published other quasi-identifiers or columns; "
                            "the versions could not be compared across. Hint: publish under a new output name.")
        if not prev.get("sources_stored"):
            raise SpecError(f"Release {ctx.release} v{previous.version} was published before ppdp stored each version's "
                            "source QIDs, which the cross-version check needs. Hint: publish under a new output name.")

    def _decide(self, ctx: RunContext, prep: Prepared, withheld: frozenset[str], carried: frozenset[str] = frozenset(),
                delayed: frozenset[str] = frozenset()) -> ReleasePlan:
        """The graph over the source's records minus ``withheld`` plus the ghosts ``carried``
        (departed records of the previous graph, at their last QIDs; their rows keep the previous
        own columns), ``delayed`` records publishing their previous own columns: a fresh search
        for the first version, the previous graph repaired locally (engine/methods/heterogeneous/repair.py) for
        later ones; then the iterated local search for the budget."""
        spec = prep.spec
        s = settings(spec)
        own = [c for c in prep.released_columns if c not in spec.qid_columns]
        everyone = ctx.con.query(M.record_select(prep.source, spec.key, spec.qid_columns, own)).sort("__key")
        for q in spec.qid_columns:
            if everyone[q].null_count():
                raise DataError(f"Quasi-identifier {q!r} has NULL values; the heterogeneous release needs every value.")
        records = everyone.filter(~pl.col("__key").is_in(list(withheld))) if withheld else everyone
        numeric = [q for q in spec.qid_columns if _is_numeric(records.schema[q])]
        categorical = [q for q in spec.qid_columns if q not in numeric]
        # The previous version's stored persons (hetero_sources): a ghost's last QIDs and every
        # frozen record's previous own digest.
        prev_person: dict[str, dict[str, Any]] = {}
        if ctx.previous is not None and (carried or delayed):
            for key, attribute, value, label in ctx.con.query(HS.state_select(
                    "sources", ctx.release, ctx.previous.published_version, ctx.dialect)).select(
                    "key", "attribute", "num", "label").iter_rows():
                if key in carried or key in delayed:
                    prev_person.setdefault(key, {})[attribute] = value if attribute in numeric else label
        ghosts = sorted(carried)
        n = records.height + len(ghosts)
        if n < s.k:
            raise DataError(f"The source has {n} rows{' not withheld' if withheld else ''}, fewer than k = {s.k}.")
        cat_text = {q: [str(v) for v in records[q].to_list()] + [str(prev_person[g][q]) for g in ghosts]
                    for q in categorical}
        domains = {q: sorted(set(cat_text[q])) for q in categorical}
        for q, domain in domains.items():
            bad = [v for v in domain if HS.SET_SEPARATOR in v]
            if bad:
                raise DataError(f"Values of {q!r} contain '{HS.SET_SEPARATOR}', the set separator of the published column: "
                                f"{bad[:3]}. Hint: clean them or drop the column.")
        num = np.vstack([records.select(numeric).to_numpy().astype(np.float64),
                         np.array([[float(prev_person[g][q]) for q in numeric] for g in ghosts]).reshape(len(ghosts), len(numeric))]) \
            if numeric else np.zeros((n, 0))
        code = {q: {v: i for i, v in enumerate(vals)} for q, vals in domains.items()}
        cat = np.stack([np.array([code[q][v] for v in cat_text[q]]) for q in categorical], axis=1) \
            if categorical else np.zeros((n, 0), dtype=np.int64)
        table = QidTable(num, cat, tuple(len(domains[q]) for q in categorical))
        keys = records["__key"].to_list() + ghosts
        repair: dict[str, Any] = {}
        previous_keys: set[str] = set()
        start = None
        index = {key: i for i, key in enumerate(keys)}
        kept_members: dict[int, set[int]] = {}  # t -> originals t covered before and still present
        prev_values: dict[tuple[str, str], tuple] = {}  # (key, attribute) -> (lo, hi, label) of the previous version
        if ctx.previous is not None:
            prev_version = ctx.previous.published_version
            prev_edges = ctx.con.query(HS.state_select("edges", ctx.release, prev_version, ctx.dialect))
            covered: dict[str, list[str]] = {}
            for o, a in prev_edges.select("original", "anonymized").iter_rows():
                covered.setdefault(a, []).append(o)
            previous_keys = set(covered)
            prev_members = ctx.con.query(HS.state_select("members", ctx.release, prev_version, ctx.dialect))
            for o, a in prev_members.select("original", "anonymized").iter_rows():
                if a in index and o in index:
                    kept_members.setdefault(index[a], set()).add(index[o])
            for key, attribute, lo, hi, label in ctx.con.query(
                    HS.state_select("values", ctx.release, prev_version, ctx.dialect)).select(
                    "key", "attribute", "lo", "hi", "label").iter_rows():
                if key in index:
                    prev_values[(key, attribute)] = (lo, hi, label)
            try:
                fixed = repair_graph(covered, keys, table, s.k)
                start = fixed.graph
                repair = {"kept": fixed.kept, "inserted": fixed.inserted, "deleted": fixed.deleted,
                          "direct_edges": fixed.direct_edges, "swaps": fixed.swaps, "started_over": False}
            except RepairError:  # degenerate instance: no valid swap; the initial heuristic instead
                repair = {"started_over": True}
        converted: dict[str, Any] = {}
        if start is None and s.from_release is not None and ctx.previous is None:  # initial = "release"
            start, converted = release_start(ctx.con, spec, s.from_release, s, keys, table)
        if start is None:  # a release's classes only start the first version; k-member restarts
            initial = s.initial if s.initial in INITIAL else "k-member"
            start = INITIAL[initial](table, s.k) if initial != "k-member" else I.k_member(table, s.k, seed=s.seed)
        result = iterated_local_search(table, start, objective=s.objective, seconds=s.seconds,
                                       max_evaluations=spec.budget, seed=s.seed, neighbors=s.neighbors)
        cover = result.graph.cover
        edges = [(keys[int(o)], keys[t]) for t in range(n) for o in cover[t]]
        # Published generalizations never narrow across versions (see the module docstring): a
        # tuple covers its graph edges, every original it covered before that is still here (at
        # its current values), and its previous ranges and sets.
        member_rows: list[tuple[str, str]] = []
        values: list[tuple[str, str, float | None, float | None, str | None]] = []  # key, attribute, lo, hi, label
        for t in range(n):
            members = np.array(sorted(set(cover[t].tolist()) | kept_members.get(t, set())), dtype=np.int64)
            member_rows += [(keys[int(o)], keys[t]) for o in members]
            for j, q in enumerate(numeric):
                col = num[members, j]
                lo, hi, _ = prev_values.get((keys[t], q), (None, None, None))
                values.append((keys[t], q, float(col.min() if lo is None else min(col.min(), lo)),
                               float(col.max() if hi is None else max(col.max(), hi)), None))
            for j, q in enumerate(categorical):
                labels = {domains[q][int(c)] for c in cat[members, j]}
                _, _, before = prev_values.get((keys[t], q), (None, None, None))
                labels |= set(before.split(HS.SET_SEPARATOR)) if before else set()
                values.append((keys[t], q, None, None, HS.SET_SEPARATOR.join(sorted(labels))))
        sources: list[tuple[str, str, float | None, str | None]] = []  # key, attribute, num, label
        for row in everyone.iter_rows(named=True):
            sources += [(row["__key"], q, float(row[q]), None) for q in numeric]
            sources += [(row["__key"], q, None, str(row[q])) for q in categorical]
            if row["__key"] in delayed:  # the row publishes its previous own columns: so does the check
                sources += [(row["__key"], HS.OWN, None, prev_person[row["__key"]][HS.OWN]),
                            (row["__key"], HS.FROZEN, None, HS.DELAYED)]
            else:
                sources.append((row["__key"], HS.OWN, None, _digest(tuple(row[c] for c in own))))
        for g in ghosts:  # a ghost stands, for the check, as its record at its last values
            sources += [(g, q, float(prev_person[g][q]), None) for q in numeric]
            sources += [(g, q, None, str(prev_person[g][q])) for q in categorical]
            sources += [(g, HS.OWN, None, prev_person[g][HS.OWN]), (g, HS.FROZEN, None, HS.GHOST)]
        solution = {"method": "heterogeneous", "k": s.k, "initial": s.initial, "objective": s.objective,
                    "neighbors": s.neighbors, "evaluations": result.evaluations, "seconds": round(result.seconds, 3), "certified": False,
                    "numeric_qids": numeric, "categorical_qids": categorical, "own_columns": own,
                    "sources_stored": True, "initial_objective": float(result.initial_objective),
                    "final_objective": float(result.objective)}
        if converted:
            solution["from_release"] = converted
        if ctx.previous is not None:
            solution["repair"] = repair | {"from_version": ctx.previous.version}
        metrics = {"records": prep.source_rows, "released_records": n, "suppressed": 0,
                   "gcp": float(gcp(table, result.graph)), "sil": float(sil(table, result.graph)),
                   f"initial_{s.objective}": float(result.initial_objective), s.objective: float(result.objective)}
        state = HeteroState(
            pl.DataFrame(edges, schema={"original": pl.String, "anonymized": pl.String}, orient="row"),
            pl.DataFrame(member_rows, schema={"original": pl.String, "anonymized": pl.String}, orient="row"),
            pl.DataFrame(values, schema={"key": pl.String, "attribute": pl.String, "lo": pl.Float64, "hi": pl.Float64,
                                         "label": pl.String}, orient="row"),
            pl.DataFrame(sources, schema={"key": pl.String, "attribute": pl.String, "num": pl.Float64, "label": pl.String},
                         orient="row"),
            tuple(numeric), tuple(categorical), tuple(own), frozenset(keys),
            frozenset(keys) - previous_keys if ctx.previous is not None else frozenset(),
            ctx.published.version_table(ctx.previous.published_version)
            if ctx.previous is not None and (carried or delayed) else None)
        return ReleasePlan("heterogeneous", solution, metrics, n, state=state)

    def write_private_state(self, ctx: RunContext, prep: Prepared, plan: ReleasePlan) -> None:
        """The graph's edges, each anonymized tuple's generalization, and every source record's
        QIDs and own digest (the next version repairs the graph and checks across versions)."""
        st: HeteroState = plan.state
        for stmt in HS.ddl(ctx.dialect):
            ctx.con.execute(stmt)
        for table, frame in (("hetero_edges", st.edges), ("hetero_members", st.members), ("hetero_values", st.values),
                             ("hetero_sources", st.sources)):
            catalog.append_version_rows(ctx.con, table, ctx.release, ctx.version, frame, ctx.run_id)

    def candidate_select(self, ctx: RunContext, prep: Prepared, plan: ReleasePlan) -> str:
        spec = prep.spec
        st: HeteroState = plan.state
        taken = set(prep.columns)
        clash = [f"{q}_{e}" for q in st.numeric for e in ("min", "max") if f"{q}_{e}" in taken]
        if clash:
            raise SpecError(f"The published bound columns {clash} would clash with source columns. Hint: rename or drop those.")
        full = Q.Source(spec.schema, spec.table, spec.query, ctx.dialect)
        return HS.candidate_select(full, release=ctx.release, version=ctx.version, columns=prep.released_columns,
                                   numeric=list(st.numeric), categorical=list(st.categorical), key=spec.key,
                                   previous=st.previous_table)

    def carries(self, plan: ReleasePlan, previous: RunRecord) -> bool:
        # A previous row cannot stand unchanged: its generalization belongs to the previous graph.
        # (The shared class-based history stage is not used by this method: cross_version is.)
        return False

    def _failures(self, ctx: RunContext, prep: Prepared, st: HeteroState, published: list[int]) -> tuple[str, pl.DataFrame]:
        """Run the cross-version check over every published version and this one's table."""
        spec = prep.spec
        versions = [(v, ctx.published.version_table(v))
                    for v in published + [ctx.version]]
        check = HS.cross_version_failures(versions, release=ctx.release, k=settings(spec).k, numeric=list(st.numeric),
                                          categorical=list(st.categorical), own=list(st.own),
                                          stage=f"xv_{ctx.run_id}", d=ctx.dialect)
        for stmt in check.setup:
            ctx.con.execute(stmt)
        failing = ctx.con.query(check.query)
        for stmt in check.cleanup:
            ctx.con.execute(stmt)
        return "; ".join(check.setup + (check.query,)), failing

    def cross_version(self, ctx: RunContext, prep: Prepared, plan: ReleasePlan, candidate: Candidate,
                      published: list[int]) -> HistoryOutcome:
        """The history stage's hook for this method (``publishes_classes`` is False): check that
        nobody can be narrowed below k across versions (sql/heterogeneous.py ``cross_version_failures``)
        and withhold new records that could; refuse when anyone else could.

        Withholding a new record takes it out of this version's graph: the graph is repaired and
        searched again without it, the private state and the version table are rewritten (the
        candidate rows are the graph's), and the record is published by a later version, when
        enough others share its ranges."""
        spec, con = prep.spec, ctx.con
        st: HeteroState = plan.state
        withheld: frozenset[str] = frozenset()
        carried: frozenset[str] = frozenset()
        delayed: frozenset[str] = frozenset()
        departed, changed = self._step_changes(ctx, st)
        replanned = plan
        limit = int(spec.max_repair_fraction * prep.source_rows)
        for _ in range(MAX_ROUNDS + 1):
            _, failing = self._failures(ctx, prep, st, published)
            if failing.height == 0:
                break
            if not spec.holds_back_changes:
                _refuse(ctx, failing, "dynamic.policy \"strict\" publishes a step whole or not at all",
                        "use dynamic.policy = \"stable-levels\" to withhold new records, carry departed ones as ghosts "
                        "and delay changes until enough others join, leave or change")
            keys = set(failing["key"].to_list())
            leaving = set(failing.filter(pl.col("departed"))["key"].to_list()) - carried
            new = {key for key in keys - leaving if key in st.new_keys}
            changing = (keys & changed) - delayed
            if not (new or leaving or changing):
                # Someone who stayed is narrowed by others' departures or changes (a vanished or
                # changed row was among their candidates): carry and delay every one of this step.
                leaving, changing = set(departed - carried), set(changed - delayed)
                if not (leaving or changing):
                    _refuse(ctx, failing, "records that stayed unchanged were narrowed with every departure carried "
                            "and every change delayed", "publish under a new output name")
            withheld, carried, delayed = withheld | new, carried | leaving, delayed | changing
            held = len(withheld) + len(carried) + len(delayed)
            if held > limit:
                _refuse(ctx, failing, f"holding them back needs {held} rows (withheld, carried or delayed), more than "
                        f"dynamic.max_repair_fraction allows ({limit} of {prep.source_rows})",
                        "raise dynamic.max_repair_fraction, or publish less often")
            replanned = self._decide(ctx, prep, withheld, carried, delayed)
            st = replanned.state
            for table in HS.PRIVATE_TABLES:
                con.execute(HS.delete_version(table.removeprefix("hetero_"), ctx.dialect), [ctx.release, ctx.version])
            self.write_private_state(ctx, prep, replanned)
            con.execute(P.drop_table(candidate.relation))
            con.execute(P.create_as(candidate.relation, P.shuffled(self.candidate_select(ctx, prep, replanned))))
        else:
            _refuse(ctx, failing, f"{MAX_ROUNDS} rounds of holding back did not make every record safe",
                    "publish less often so that more records join, leave and change together")
        record = {"versions_checked": len(published) + 1, "passed": True, "rule": "heterogeneous candidates (sql/heterogeneous.py)",
                  "held_back": {"inserts_withheld": len(withheld), "deletes_delayed": len(carried),
                                "changes_delayed": len(delayed)}}
        if withheld or carried or delayed:  # the run record's metrics describe the first plan; these the published one
            record["metrics_after_withholding"] = {key: replanned.metrics[key] for key in ("gcp", "sil", "released_records")}
        return HistoryOutcome(None, len(withheld), len(carried), record)

    def _step_changes(self, ctx: RunContext, st: HeteroState) -> tuple[frozenset[str], frozenset[str]]:
        """This step's departures (records of the previous version's graph, ghosts included, that
        the first plan leaves out: they left the source) and own-column changes (records of both
        graphs whose own digest differs from the one the previous version stood for)."""
        if ctx.previous is None:
            return frozenset(), frozenset()
        prev = ctx.con.query(HS.state_select("sources", ctx.release, ctx.previous.published_version, ctx.dialect))
        before = dict(prev.filter(pl.col("attribute") == HS.OWN).select("key", "label").iter_rows())
        now = dict(st.sources.filter(pl.col("attribute") == HS.OWN).select("key", "label").iter_rows())
        edges = ctx.con.query(HS.state_select("edges", ctx.release, ctx.previous.published_version, ctx.dialect))
        graph = set(edges["anonymized"].to_list())
        departed = frozenset(graph - set(now))
        changed = frozenset(key for key in graph & set(now) if before.get(key) != now[key])
        return departed, changed

    def covers(self, model: PrivacyModel) -> bool:
        """k-anonymity: the version check counts each record's matches in the published table
        (``extra_checks``) and ``cross_version`` applies the method's own rule across versions."""
        return isinstance(model, KAnonymity)

    def extra_checks(self, ctx: RunContext, prep: Prepared, plan: ReleasePlan, table: str) -> list[dict[str, Any]]:
        """The consistency graph from the published table and the source; the private graph's
        degrees and self edges; every private edge consistent with what was published; from the
        second version on, the cross-version rule re-checked on the written tables."""
        st: HeteroState = plan.state
        checks = _graph_checks(ctx.con, prep.spec, ctx.release, int(ctx.version or 0), table, list(st.numeric),
                               list(st.categorical), int(plan.solution["k"]), with_source=True)
        k = int(plan.solution["k"])
        published = published_versions(ctx)
        if published:
            sql, failing = self._failures(ctx, prep, st, published)
            checks.append({"check": "nobody can be narrowed below k rows across versions", "passed": failing.height == 0,
                           "failing_records": failing.height,
                           "fewest_candidates": int(failing.select(pl.min("candidates")).item()) if failing.height else None,
                           "detail": f"{failing.height} record(s) with fewer than {k} candidate rows", "query": sql})
        return checks

    def recheck(self, con: Connector, run: RunRecord, spec: ReleaseSpec, table: str,
                source_unchanged: bool) -> list[dict[str, Any]]:
        """``ppdp verify``: the checks of ``extra_checks`` on a published version, from the run
        record and the stored graph; the two that read the source only while it is unchanged."""
        sol = run.solution or {}
        return _graph_checks(con, spec, run.release, int(run.version or 0), table, list(sol.get("numeric_qids", [])),
                             list(sol.get("categorical_qids", [])), int(sol["k"]), with_source=source_unchanged)

    def rebuild_rows(self, con: Connector, run: RunRecord, spec: ReleaseSpec) -> RebuildRows:
        """Each published tuple's generalization (``hetero_values``): the candidate SELECT ppdp ran.
        Records withheld for privacy across versions are not in the version's graph, so they have
        no values and the SELECT leaves them out, as it did."""
        version = int(run.version or 0)
        values = con.query(HS.state_select("values", run.release, version, con.dialect))
        rows = tuple(values.select(list(HS.REBUILD_VALUE_COLUMNS)).rows())
        numeric, categorical = run.solution.get("numeric_qids", []), run.solution.get("categorical_qids", [])
        return RebuildRows(HS.HeteroRows(tuple(numeric), tuple(categorical)), (HS.values_table(rows),))


def _graph_checks(con: Connector, spec: ReleaseSpec, release: str, version: int, table: str, numeric: list[str],
                  categorical: list[str], k: int, *, with_source: bool) -> list[dict[str, Any]]:
    """The verification of docs/design/paper_notes.md §7 on the version table ``table``: the private graph is
    exactly k-regular with every self edge and, ``with_source``, every published tuple covers and
    every source tuple is covered by at least k (consistency graph) and every edge is consistent."""
    d = con.dialect
    # a ghost is a node of the graph at its last QIDs, no longer in the source;
    # read from the private state, so the same for the run's check and for `ppdp verify`
    ghosts = HS.ghost_persons(release, version, numeric, categorical, d) if version > 1 else None
    n = int(con.query(P.count_rows(table))["n"][0])  # the graph's records (new ones may be withheld)
    graph_sql = HS.graph_degrees(release, version, d)
    g = con.query(graph_sql).row(0, named=True)
    regular = (g["min_anon"] == g["max_anon"] == k and g["min_orig"] == g["max_orig"] == k
               and g["self_edges"] == n and g["distinct_edges"] == g["edges"] == n * k)
    checks: list[dict[str, Any]] = []
    if with_source:
        full = Q.Source(spec.schema, spec.table, spec.query, d)
        cover_sql = HS.coverage_degrees(table, full, numeric, categorical, release=release, key=spec.key, ghosts=ghosts)
        cov = con.query(cover_sql).row(0, named=True)
        checks.append(
            {"check": "every published tuple covers and every source tuple is covered by at least k (consistency graph)",
             "passed": (cov["min_published_covers"] or 0) >= k and (cov["min_source_covered"] or 0) >= k
             and cov["published_tuples"] == n and cov["source_tuples"] == n,
             "detail": f"fewest covered {cov['min_published_covers']}, fewest covering {cov['min_source_covered']} (k = {k})",
             "query": cover_sql} | {key: cov[key] for key in cov})
    checks.append({"check": "the private graph is exactly k-regular with every self edge", "passed": bool(regular),
                   "detail": f"degrees {g['min_anon']}-{g['max_anon']} / {g['min_orig']}-{g['max_orig']}, self edges {g['self_edges']} of {n}",
                   "query": graph_sql})
    if with_source:
        edge_sql = HS.inconsistent_edges(table, Q.Source(spec.schema, spec.table, spec.query, d), release=release,
                                         version=version, key=spec.key, numeric=numeric, categorical=categorical,
                                         ghosts=ghosts)
        bad = int(con.query(edge_sql)["n"][0])
        checks.append({"check": "every edge of the graph is consistent with the published tuple", "passed": bad == 0,
                       "detail": f"{bad} edge(s) not covered", "query": edge_sql})
    return checks


def source_release(con, spec, name: str) -> tuple[str, RunRecord, str]:
    """The release ``name`` (``params.from``): its identity, current run and method. SpecError
    (one line) when it does not exist, has no published version, was published by a method
    without classes, or over another source or key. Reads only the catalog."""
    try:
        release = catalog.resolve_release(con, name)
    except SpecError:
        raise SpecError(f"method.params.from names no published release {name!r} in this database. "
                        "Hint: give an existing release as schema.name ('ppdp runs' lists them).") from None
    run = catalog.latest_success(con, release)
    if run is None:
        raise SpecError(f"method.params.from: release {release} has no published version. Hint: publish it first.")
    method = (run.spec.get("method") or {}).get("name", "generalization")
    if method not in CONVERTIBLE:
        raise SpecError(f"method.params.from: release {release} was published by method {method!r}, which has no classes "
                        f"to convert. Hint: give a {' or '.join(CONVERTIBLE)} release.")
    theirs, ours = run.spec.get("source") or {}, spec.raw.get("source") or {}
    for field in SOURCE_FIELDS:
        if theirs.get(field) != ours.get(field):
            raise SpecError(f"method.params.from: release {release} was published from source.{field} = "
                            f"{theirs.get(field)!r}, this release reads {ours.get(field)!r}; its classes are not of these "
                            "records. Hint: initialise from a release of the same source and key.")
    return release, run, method


def release_classes(con, spec, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Each source key's class in the current version of the release ``name`` (``params.from``,
    checked by ``source_release``), read privately, and what was read: a generalization release's
    published QID tuples mapped to source keys by ``_ppdp.row_ids`` (its suppressed keys are not
    in a class), a microaggregation release's ``_ppdp.micro_groups``."""
    d = con.dialect
    release, run, method = source_release(con, spec, name)
    if method == "microaggregation":
        frame = con.query(HS.micro_classes(d), [release, run.version])
    else:
        where = con.query(C.select_release(d), [release]).row(0, named=True)
        published = ReleaseRelation(where["output_schema"], where["output_name"], d)
        table_name = published.version_name(int(run.version or 0))
        if con.relation_columns(where["output_schema"], table_name) is None:
            raise DataError(f"method.params.from: the version table {where['output_schema']}.{table_name} of release "
                            f"{release} is gone. Hint: publish that release again.")
        qids = [q["column"] for q in run.spec.get("quasi_identifiers", [])]
        frame = con.query(HS.generalized_classes(published.version_table(int(run.version or 0)), qids, d), [release])
    classes = dict(zip(frame["key"].cast(pl.String).to_list(), frame["grp"].to_list(), strict=True))
    return classes, {"release": release, "version": run.version, "method": method, "classes": len(set(classes.values()))}


def release_start(con, spec, name: str, s: Settings, keys: list[str], table: QidTable):
    """The starting graph from the classes of release ``name`` (``s.from_release``) over ``keys``
    (the rows of ``table``): engine/methods/heterogeneous/convert.py, and what the run record says about it."""
    classes, info = release_classes(con, spec, name)
    conversion = graph_from_classes(table, [classes.get(key) for key in keys], s.k, seed=s.seed)
    info |= {"classes_kept": conversion.classes_kept, "pooled": conversion.pooled, "pool_clusters": conversion.pool_clusters,
             "converted_gcp": float(gcp(table, conversion.graph)), "converted_sil": float(sil(table, conversion.graph))}
    return conversion.graph, info


def _refuse(ctx: RunContext, failing: pl.DataFrame, why: str, hint: str) -> None:
    departed = int(failing["departed"].sum())
    raise VerificationError(
        f"Cross-version privacy check failed for release {ctx.release} v{ctx.version}: someone holding every version and "
        f"knowing who joined, left or changed could narrow {failing.height} record(s) ({departed} of them left at this step) "
        f"to fewer than k rows (fewest: {int(failing.select(pl.min('candidates')).item())}); {why}. Nothing was published. Hint: {hint}."
    )


METHODS.register(Heterogeneous.name)(Heterogeneous())
