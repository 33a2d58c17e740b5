"""The difference-attack harness: replay source changes through published versions and attack them.

Threat model (what the attacker holds and knows; nothing else is used)
-----------------------------------------------------------------------
* Every published version V1..Vn of the release (``<schema>.<name>__v<N>``: ``ppdp_row_id``,
  generalized QID labels, sensitive values, other released columns) and every ``__delta`` row.
* For a target person t: t's raw QID values in the source of every version (the source key is
  irrelevant: it is not published), whether t was in the source at each version (who joined, who
  left), and whether t's sensitive value changed between two versions in which t was in the
  source — but not the sensitive value itself. (The brief's "t's sensitive value changed at some
  step in (p, j]" is read as "t's value at version j differs from its value at version p": the two
  agree unless a value changes and changes back through refused steps, where only the second is
  observable in the published data.)
* The public generalization: for a raw value and a version, which label it maps to. For the
  hierarchy release this is read from ``_ppdp.hierarchies`` and the run record's levels (treated
  as public); other release methods plug in their own ``RowMatches`` predicate
  (interval / set containment) through the ``ReleaseMethod`` adapter.

The attacker also knows ppdp's mechanism: a step may be held back, so a person's insertion can
appear later, and after a deletion or a change the person's previous row can stand unchanged
(a delayed deletion, a held-back change).

Methods whose rows widen across versions (``ReleaseMethod.rows_widen``: the heterogeneous
release, whose published generalizations never narrow and may widen at every version) carry a
departed person's row as a ghost and hold back a change with the row's sensitive value kept, but
the carried row's generalization may widen like any other. For them "stands unchanged" means "its
sensitive value is unchanged", and the attacker uses what the method promises besides:
  - for a version j in which t is in the source: r is absent (withheld), or covers t's QIDs now
    (every row covers its person: no held-back QID change), and a row published in the version
    before, while t was in the source there too, is still published (a person's row is never
    withdrawn while they stay);
  - for a version j in which t is not in the source: r is absent, or t was in the source before
    and r keeps its sensitive value and covers t's last QIDs (a ghost never narrows).
Candidate set of t: the published row ids r whose whole observable history is consistent with t:
  - for every version j in which t is NOT in the source: r is absent from Vj, or r's row in Vj is
    identical (labels and sensitive value) to its previous presence;
  - for every version j in which t IS in the source: r is absent from Vj (suppressed / withheld), or
    ``row_matches(j, labels of r in Vj, raw QIDs of t at j)``, or r's row is identical to its
    previous presence;
  - r is present in at least one version;
  - SA-change pattern: for every version j where r is present and its row is not a copy of its
    previous presence, with f = the latest earlier version where r was present and not such a copy
    (a row that is not a copy shows the source of its own version), r's sensitive value differs
    between Vf and Vj iff t's sensitive value differs between the sources of f and j.
For every version j in which t's own row (found through the harness's private knowledge of
``_ppdp.row_ids``) is present, and every privacy model:
  - k-anonymity: |candidates| >= k;
  - distinct-l-diversity: distinct sensitive tuples among the candidates present in Vj >= l;
  - entropy-l-diversity: exp(entropy) (natural log) of that distribution >= l;
  - t-closeness: Euclidean distance (HAEF eq. 2-4, as sql/queries.verify_t_query) between the
    candidates' SA distribution in Vj and the SA distribution of all source rows of version j <= t.
t's own row missing from its candidate set is reported too (model ``own-row-consistent``): the
published history contradicts the truth, so either the engine or the harness is wrong.

Sensitive-value exposure (none of the papers measures it): for each person
changed since the previous published version (insert / delete / modify-qid / modify-sa) and for
a sample of unchanged persons, the probability the attacker assigns to t's exact sensitive value
and to its catalogue category: the share of t's true value (category) among the sensitive values
of t's candidate rows present in Vj, where j is the latest version in which t is in the source and
t's own row is published (for a deleted person: the last version where they were present; the
candidate set uses everything the attacker knows, the deletion included). A changed person whose
row was never published while they were in the source (an insertion held back) is counted as
unmeasured. ``summarize_exposures`` gives mean and worst per change kind.

Share file: an attacker who is handed the file ``ppdp export`` wrote holds
whatever that file holds. ``share_file_findings`` reads every column of every relation in it
and reports any that carries source keys, any relation that is not one of the release's
(``<name>``, ``<name>__v<N>``, ``<name>__delta``), and any row that repeats a whole source row
(key included); ``run_share_file_scenario`` publishes two versions into a schema that also holds
a copy of the source (a DBA's, say), exports that schema through the CLI and returns the findings.

A violation is (scenario, step, target, version, model, measured value). The harness also checks
that applying version N's ``__delta`` rows to V(N-1) gives VN exactly (multiset over all columns).

Layout: the pure, engine-independent part (``Observations``, ``candidate_mask``, ``attack``,
``check_deltas``) works on plain Python data and is unit-tested on hand-made histories; the
``Backend`` adapter says where the source lives (DuckDB file or PostgreSQL database) and the
``ReleaseMethod`` adapter says how a version is published and what the public generalization is.
"""

from __future__ import annotations

import math
import random
import re
import subprocess
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import polars as pl

from ppdp.connectors import connect
from ppdp.connectors.base import Connector
from ppdp.errors import PpdpError
from ppdp.sql.quoting import quote_ident, quote_table

TOLERANCE = 1e-9
ROW_ID = "ppdp_row_id"

Labels = tuple[Any, ...]
RawQids = tuple[Any, ...]
# (version, the QID labels of a published row, raw QID values) -> does the row cover those values?
RowMatches = Callable[[int, Labels, RawQids], bool]
# (version, the QID labels of a published row, one raw QID value) -> does the row cover that value?
QidPart = Callable[[int, Labels, Any], bool]


def conjunction(parts: Sequence[QidPart]) -> RowMatches:
    """The ``RowMatches`` that holds when part i holds for raw QID i, for every i. The parts ride
    on the predicate (``.parts``): ``candidate_mask`` then evaluates each part once per published
    class and distinct value of its QID, not once per class and person (the same predicate)."""
    parts = tuple(parts)

    def matches(version: int, labels: Labels, raw: RawQids) -> bool:
        return all(part(version, labels, r) for part, r in zip(parts, raw, strict=True))

    matches.parts = parts  # type: ignore[attr-defined]
    return matches


# --- what the attacker holds -----------------------------------------------------------------


@dataclass(frozen=True)
class PublishedVersion:
    """One published version as the analyst reads it: row id -> (QID labels, sensitive tuple)."""

    version: int
    rows: dict[str, tuple[Labels, tuple[Any, ...]]]


@dataclass(frozen=True)
class SourceState:
    """The attacker's background knowledge of the source at one version: key -> raw QIDs and
    key -> sensitive tuple (used only as "changed or not" per person and, aggregated over all
    rows, as the t-closeness reference distribution)."""

    version: int
    qids: dict[str, RawQids]
    sensitive: dict[str, tuple[Any, ...]]


@dataclass(frozen=True)
class ModelCheck:
    """A privacy model of the release and its parameter (k, l or t)."""

    name: str
    param: float


@dataclass(frozen=True)
class Violation:
    scenario: str
    step: int
    target: str
    version: int
    model: str
    measured: float
    required: float


# change kinds of an exposure target (since the previous published version)
INSERT, DELETE, MODIFY_QID, MODIFY_SA, MODIFY_BOTH, MODIFY_OTHER, UNCHANGED = (
    "insert", "delete", "modify-qid", "modify-sa", "modify-qid+sa", "modify-other", "unchanged")
KINDS = (INSERT, DELETE, MODIFY_QID, MODIFY_SA, MODIFY_BOTH, MODIFY_OTHER, UNCHANGED)


@dataclass(frozen=True)
class SaExposure:
    """What the attacker learns about one person's sensitive value at one attack step: the share
    of the person's true value (``p_exact``) and of its category (``p_category``) among the
    sensitive values of their candidate rows published in ``version``. ``version`` is None (and
    the shares too) when the person's row was never published while they were in the source."""

    scenario: str
    step: int
    target: str
    kind: str
    version: int | None
    candidates: int
    p_exact: float | None
    p_category: float | None


@dataclass(frozen=True)
class ExposureSummary:
    """Mean and worst (largest) P(exact) and P(category) over the measured persons of one kind."""

    kind: str
    count: int
    unmeasured: int
    p_exact_mean: float
    p_exact_worst: float
    p_category_mean: float
    p_category_worst: float


class Observations:
    """Every published version laid out over the union of row ids, for vectorized candidate tests."""

    def __init__(self, published: Sequence[PublishedVersion], *, widen: bool = False) -> None:
        """``widen``: the release's rows may widen across versions (``ReleaseMethod.rows_widen``):
        a row stands for a held-back change or a carried departure when its sensitive value is
        unchanged, whatever its labels."""
        self.widen = widen
        self.versions = [p.version for p in published]
        ids = sorted({r for p in published for r in p.rows})
        self.row_ids = ids
        self.index = {r: i for i, r in enumerate(ids)}
        n = len(ids)
        self.present: list[np.ndarray] = []
        self.cls: list[np.ndarray] = []  # class code per row, -1 where absent
        self.labels: list[list[Labels]] = []  # class code -> labels
        self.sa: list[np.ndarray] = []  # global SA code per row, -1 where absent
        self.sa_values: list[tuple[Any, ...]] = []
        sa_code: dict[tuple[Any, ...], int] = {}
        for p in published:
            present = np.zeros(n, dtype=bool)
            cls = np.full(n, -1, dtype=np.int64)
            sa = np.full(n, -1, dtype=np.int64)
            codes: dict[Labels, int] = {}
            for rid, (lab, sens) in p.rows.items():
                i = self.index[rid]
                present[i] = True
                cls[i] = codes.setdefault(lab, len(codes))
                if sens not in sa_code:
                    sa_code[sens] = len(sa_code)
                    self.sa_values.append(sens)
                sa[i] = sa_code[sens]
            self.present.append(present)
            self.cls.append(cls)
            self.labels.append(list(codes))
            self.sa.append(sa)
        # previous version (position) where each row was present, and whether its SA differs
        self.prev: list[np.ndarray] = []
        last = np.full(n, -1, dtype=np.int64)
        for j in range(len(published)):
            self.prev.append(np.where(self.present[j], last, -1))
            last = np.where(self.present[j], j, last)
        self.sa_diff = [
            np.where(self.prev[j] >= 0, self.sa[j] != self._sa_at(self.prev[j]), False) for j in range(len(published))
        ]
        self.any_present = np.any(self.present, axis=0) if published else np.zeros(0, dtype=bool)
        # rows identical (labels and SA) to their previous presence: what a held-back change or
        # a delayed deletion looks like from outside
        self.same_row = []
        for j in range(len(published)):
            prev = self.prev[j]
            same = np.zeros(n, dtype=bool)
            for i in np.flatnonzero(self.present[j] & (prev >= 0)):
                p = prev[i]
                same[i] = (widen or self.labels[j][self.cls[j][i]] == self.labels[p][self.cls[p][i]]) \
                    and self.sa[j][i] == self.sa[p][i]
            self.same_row.append(same)
        # the latest earlier version where each row was present and not a copy of its previous
        # presence: a fresh row shows the person's source of that very version
        self.last_fresh: list[np.ndarray] = []
        fresh_at = np.full(n, -1, dtype=np.int64)
        for j in range(len(published)):
            self.last_fresh.append(np.where(self.present[j], fresh_at, -1))
            fresh_at = np.where(self.present[j] & ~self.same_row[j], j, fresh_at)

    def _sa_at(self, positions: np.ndarray) -> np.ndarray:
        stacked = np.stack(self.sa) if self.sa else np.zeros((0, len(self.row_ids)), dtype=np.int64)
        cols = np.arange(len(self.row_ids))
        return np.where(positions >= 0, stacked[np.clip(positions, 0, None), cols], -1)


def candidate_mask(obs: Observations, sources: dict[int, SourceState], key: str, row_matches: RowMatches,
                   cache: dict | None = None) -> np.ndarray:
    """Boolean mask over ``obs.row_ids``: the rows whose observable history is consistent with
    person ``key`` (see the module docstring). ``cache`` memoizes row_matches per class of each
    version position of ``obs``; the Observations of prefixes of one list of published versions
    have the same classes there and may share it."""
    cache = {} if cache is None else cache
    mask = obs.any_present.copy()
    parts: tuple[QidPart, ...] | None = getattr(row_matches, "parts", None)

    def by_class(j: int, test: Callable[[Labels], bool]) -> np.ndarray:
        return np.array([test(lab) for lab in obs.labels[j]] + [False], dtype=bool)

    def matching(j: int, version: int, raw: RawQids) -> np.ndarray:
        ck = (j, raw)
        ok = cache.get(ck)
        if ok is None:
            if parts is None:
                ok = by_class(j, lambda lab: row_matches(version, lab, raw))
            else:  # the conjunction, one memoized class mask per QID value
                ok = np.ones(len(obs.labels[j]) + 1, dtype=bool)
                for i, (part, r) in enumerate(zip(parts, raw, strict=True)):
                    pk = ("part", j, i, r)
                    one = cache.get(pk)
                    if one is None:
                        one = cache[pk] = by_class(j, lambda lab, part=part, r=r: part(version, lab, r))
                    ok &= one
            cache[ck] = ok
        return ok[obs.cls[j]]  # cls -1 indexes the trailing False

    last_raw: RawQids | None = None
    for j, version in enumerate(obs.versions):
        src = sources[version]
        raw = src.qids.get(key)
        if raw is None:
            if not obs.widen:  # t is not in the source: r is absent, or stands unchanged (a delayed deletion)
                mask &= ~obs.present[j] | obs.same_row[j]
            elif last_raw is None:  # t has not joined yet: no row of t
                mask &= ~obs.present[j]
            else:  # t left: r is absent, or t's ghost (sensitive value kept, covering t's last QIDs)
                mask &= ~obs.present[j] | (obs.same_row[j] & matching(j, version, last_raw))
            continue
        if obs.widen:
            # absent (withheld) or covering t's QIDs now; never withdrawn while t stays
            mask &= ~obs.present[j] | matching(j, version, raw)
            if j and sources[obs.versions[j - 1]].qids.get(key) is not None:
                mask &= ~(obs.present[j - 1] & ~obs.present[j])
            last_raw = raw
            continue
        # absent (suppressed / withheld), matching t's QIDs now, or unchanged (a held-back change)
        mask &= ~obs.present[j] | matching(j, version, raw) | obs.same_row[j]
    for j, version in enumerate(obs.versions):
        sens_j = sources[version].sensitive.get(key)
        for f in range(j):
            # rows fresh at j whose last fresh presence was f: their SA changed iff t's changed
            # between the sources of f and j (a copy in between shows f's row unchanged)
            sel = obs.present[j] & ~obs.same_row[j] & (obs.last_fresh[j] == f)
            if not sel.any():
                continue
            sens_f = sources[obs.versions[f]].sensitive.get(key)
            if sens_j is None or sens_f is None:  # t not in the source then: no fresh row of t
                mask &= ~sel
                continue
            mask &= ~sel | (obs.sa_diff[j] == (sens_j != sens_f))
    return mask


def measure(model: ModelCheck, obs: Observations, j: int, mask: np.ndarray, reference: Counter) -> float:
    """The model's measure on the candidate set (k over all candidates; l and t over those in Vj)."""
    if model.name == "k-anonymity":
        return float(mask.sum())
    codes = obs.sa[j][mask & obs.present[j]]
    counts = np.bincount(codes, minlength=len(obs.sa_values)).astype(float)
    total = counts.sum()
    if model.name == "distinct-l-diversity":
        return float((counts > 0).sum())
    if model.name == "entropy-l-diversity":
        p = counts[counts > 0] / total
        return float(math.exp(-(p * np.log(p)).sum()))
    if model.name == "t-closeness":
        n_ref = sum(reference.values())
        dist = {v: c / n_ref for v, c in reference.items()}
        for code in np.nonzero(counts)[0]:
            v = obs.sa_values[code]
            dist[v] = dist.get(v, 0.0) - counts[code] / total
        return float(math.sqrt(sum(d * d for d in dist.values())))
    raise ValueError(f"the harness has no measure for model {model.name!r}")


def violates(model: ModelCheck, value: float) -> bool:
    if model.name == "t-closeness":
        return value > model.param + TOLERANCE
    return value < model.param - TOLERANCE


def attack(obs: Observations, sources: dict[int, SourceState], row_ids: dict[str, str], targets: Sequence[str],
           models: Sequence[ModelCheck], row_matches: RowMatches, *, scenario: str = "", step: int = 0,
           k_only: Sequence[str] = (), masks: dict[str, np.ndarray] | None = None,
           cache: dict | None = None) -> list[Violation]:
    """Attack every target in every version where its own row is published. ``k_only`` targets
    are checked for k-anonymity (and own-row consistency) only. ``masks`` memoizes candidate
    masks per person for this ``obs`` (shared with ``sa_exposure``); ``cache``: candidate_mask's."""
    out: list[Violation] = []
    cache = {} if cache is None else cache
    masks = {} if masks is None else masks
    refs = {v: Counter(sources[v].sensitive.values()) for v in obs.versions}
    full = set(targets)
    for key in list(targets) + [k for k in k_only if k not in full]:
        own = obs.index.get(row_ids.get(key, ""), -1)
        if own < 0:
            continue  # never published: nothing to single out
        if key not in masks:
            masks[key] = candidate_mask(obs, sources, key, row_matches, cache)
        mask = masks[key]
        for j, version in enumerate(obs.versions):
            if not obs.present[j][own]:
                continue
            if not mask[own]:
                out.append(Violation(scenario, step, key, version, "own-row-consistent", 0.0, 1.0))
            for m in models:
                if key not in full and m.name != "k-anonymity":
                    continue
                value = measure(m, obs, j, mask, refs[version])
                if violates(m, value):
                    out.append(Violation(scenario, step, key, version, m.name, value, m.param))
    return out


def sa_exposure(obs: Observations, sources: dict[int, SourceState], row_ids: dict[str, str], targets: Mapping[str, str],
                row_matches: RowMatches, *, category: Mapping[Any, Any] | None = None, scenario: str = "",
                step: int = 0, masks: dict[str, np.ndarray] | None = None,
                cache: dict | None = None) -> list[SaExposure]:
    """P(exact sensitive value) and P(its category) for each target (key -> change kind), at the
    latest version where the target is in the source and its own row is published (module
    docstring). ``category`` maps a sensitive value to its category (unmapped values and the
    default: the value itself); a tuple of several sensitive columns is mapped column-wise.
    ``masks`` and ``cache``: as for ``attack``."""
    cache = {} if cache is None else cache
    masks = {} if masks is None else masks

    def cat(sens: tuple[Any, ...]) -> tuple[Any, ...]:
        return sens if category is None else tuple(category.get(v, v) for v in sens)

    code_of = {v: c for c, v in enumerate(obs.sa_values)}
    cat_codes: dict[tuple[Any, ...], int] = {}
    cat_of_code = np.array([cat_codes.setdefault(cat(v), len(cat_codes)) for v in obs.sa_values] or [0], dtype=np.int64)
    out = []
    for key, kind in targets.items():
        own = obs.index.get(row_ids.get(key, ""), -1)
        at = next((j for j in reversed(range(len(obs.versions)))
                   if own >= 0 and obs.present[j][own] and key in sources[obs.versions[j]].sensitive), None)
        if at is None:
            out.append(SaExposure(scenario, step, key, kind, None, 0, None, None))
            continue
        if key not in masks:
            masks[key] = candidate_mask(obs, sources, key, row_matches, cache)
        codes = obs.sa[at][masks[key] & obs.present[at]]
        n = len(codes)
        true = sources[obs.versions[at]].sensitive[key]
        exact = float(np.count_nonzero(codes == code_of.get(true, -2))) / n if n else 0.0
        same_cat = float(np.count_nonzero(cat_of_code[codes] == cat_codes.get(cat(true), -2))) / n if n else 0.0
        out.append(SaExposure(scenario, step, key, kind, obs.versions[at], n, exact, same_cat))
    return out


def summarize_exposures(exposures: Sequence[SaExposure]) -> dict[str, ExposureSummary]:
    """Per change kind (in ``KINDS`` order, kinds that occur only): count, unmeasured, mean and
    worst P(exact) and P(category)."""
    out = {}
    for kind in KINDS:
        rows = [e for e in exposures if e.kind == kind]
        if not rows:
            continue
        got = [e for e in rows if e.p_exact is not None]
        ex = [e.p_exact for e in got]
        ca = [e.p_category for e in got]
        out[kind] = ExposureSummary(kind, len(got), len(rows) - len(got), float(np.mean(ex)) if ex else 0.0,
                                    max(ex, default=0.0), float(np.mean(ca)) if ca else 0.0, max(ca, default=0.0))
    return out


def change_kinds(change: SourceChange, qids: Sequence[str], sensitive: Sequence[str]) -> dict[str, str]:
    """Source key (as text) -> the kind of this step's change to that person."""
    out = {str(r["id"]): INSERT for r in change.inserts}
    for k in change.deletes:
        out[str(k)] = DELETE
    for k, assignments in change.updates:
        cols = {c for c, _ in assignments}
        q, s = bool(cols & set(qids)), bool(cols & set(sensitive))
        out[str(k)] = MODIFY_BOTH if q and s else MODIFY_QID if q else MODIFY_SA if s else MODIFY_OTHER
    return out


def merge_kinds(pending: dict[str, str], new: Mapping[str, str]) -> None:
    """Fold a step's change kinds into those not yet published (a refused or skipped step):
    an insertion stays an insertion, or vanishes when deleted before any publication."""
    for key, kind in new.items():
        old = pending.get(key)
        if old == INSERT:
            if kind == DELETE:
                del pending[key]
        elif old != kind and {old, kind} <= {MODIFY_QID, MODIFY_SA, MODIFY_BOTH}:
            pending[key] = MODIFY_BOTH
        else:
            pending[key] = kind


def exposure_table(summaries: Mapping[str, ExposureSummary]) -> str:
    """One line per change kind: count, unmeasured, P(exact) and P(category) mean / worst."""
    lines = [f"{'kind':<14} {'count':>6} {'unmeas.':>7} {'P(exact) mean':>13} {'worst':>6} {'P(cat) mean':>11} {'worst':>6}"]
    for s in summaries.values():
        lines.append(f"{s.kind:<14} {s.count:>6} {s.unmeasured:>7} {s.p_exact_mean:>13.3f} {s.p_exact_worst:>6.3f} "
                     f"{s.p_category_mean:>11.3f} {s.p_category_worst:>6.3f}")
    return "\n".join(lines)


def check_deltas(tables: dict[int, pl.DataFrame], delta: pl.DataFrame | None) -> list[str]:
    """Problems with ``__delta``: for each version N whose predecessor N-1 is published, V(N-1)
    minus its '-' rows plus its '+' rows must equal VN as multisets over all columns."""
    problems = []
    for n in sorted(tables):
        if n - 1 not in tables:
            continue
        prev, cur = tables[n - 1], tables[n]
        rows = delta.filter(pl.col("version") == n) if delta is not None else None
        if rows is None:
            problems.append(f"v{n}: no __delta table")
            continue
        cols = prev.columns
        minus = Counter(rows.filter(pl.col("op") == "-").select(cols).rows())
        plus = Counter(rows.filter(pl.col("op") == "+").select(cols).rows())
        have = Counter(prev.rows())
        if minus - have:
            problems.append(f"v{n}: {sum((minus - have).values())} '-' rows are not in v{n - 1}")
        applied = (have - minus) + plus
        want = Counter(cur.select(cols).rows())
        if applied != want:
            problems.append(f"v{n}: delta applied to v{n - 1} differs from v{n} "
                            f"({sum((applied - want).values())} extra, {sum((want - applied).values())} missing rows)")
    return problems


def violation_table(violations: Sequence[Violation], limit: int = 40) -> str:
    """A compact, readable table of violations (first ``limit`` rows, then a count per model)."""
    head = f"{'scenario':<28} {'step':>4} {'target':>10} {'ver':>3} {'model':<22} {'measured':>9} {'required':>8}"
    lines = [head]
    for v in violations[:limit]:
        lines.append(f"{v.scenario:<28} {v.step:>4} {v.target:>10} {v.version:>3} {v.model:<22} {v.measured:>9.4g} {v.required:>8.4g}")
    if len(violations) > limit:
        lines.append(f"... {len(violations) - limit} more")
    per = Counter((v.scenario, v.model) for v in violations)
    lines.append("per scenario and model: " + ", ".join(f"{s}/{m}: {c}" for (s, m), c in sorted(per.items())))
    return "\n".join(lines)


# --- adapters: where the source lives, how a version is published ----------------------------


@dataclass(frozen=True)
class Backend:
    """Where the source table lives: a database URL and the schema of the source table."""

    name: str
    url: str
    source_schema: str

    def connect(self) -> Connector:
        return connect(self.url)


def duckdb_backend(path: Path) -> Backend:
    return Backend("duckdb", f"duckdb://{path}", "main")


def postgres_backend(url: str) -> Backend:
    return Backend("postgres", url, "public")


class ReleaseMethod(Protocol):
    """How a release method publishes and what its public generalization is."""

    output_schema: str
    output_name: str
    release_id: str  # the key of the release's private state (schema and name)
    qids: list[str]
    sensitive: list[str]
    models: list[ModelCheck]
    rows_widen: bool  # a row's published generalization may widen across versions (Observations)

    @property
    def published_qids(self) -> list[str]:
        """The published columns that carry the QIDs (a row's labels, in order)."""
        ...

    def publish(self, backend: Backend) -> int | None:
        """Publish a version of the current source; its number, or None when nothing new was
        published (e.g. a skipped run). Raises ppdp.errors.PpdpError when refused."""
        ...

    def row_matches(self, con: Connector, versions: Sequence[int]) -> RowMatches:
        """The public generalization of ``versions`` as a predicate."""
        ...


@dataclass(frozen=True)
class SourceChange:
    """One step's changes to the source: deleted keys, updated columns per key, inserted rows."""

    deletes: tuple[int, ...] = ()
    updates: tuple[tuple[int, tuple[tuple[str, Any], ...]], ...] = ()
    inserts: tuple[dict[str, Any], ...] = ()

    def changed_keys(self) -> set[int]:
        return set(self.deletes) | {k for k, _ in self.updates} | {r["id"] for r in self.inserts}


Step = Callable[[dict[int, dict[str, Any]], random.Random], SourceChange]


@dataclass(frozen=True)
class Scenario:
    """A named sequence of source changes, each followed by a publication attempt."""

    name: str
    steps: tuple[Step, ...]
    seed: int = 0
    unchanged_sample: int = 200


@dataclass
class ScenarioReport:
    scenario: str
    backend: str
    versions: list[int] = field(default_factory=list)
    refusals: list[tuple[int, str]] = field(default_factory=list)  # (step, message)
    skipped_steps: list[int] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    delta_problems: list[str] = field(default_factory=list)
    targets: int = 0
    exposures: list[SaExposure] = field(default_factory=list)

    def summary(self) -> str:
        return (f"{self.scenario} on {self.backend}: versions {self.versions}, refused steps "
                f"{[s for s, _ in self.refusals]}, targets {self.targets}, violations {len(self.violations)}, "
                f"delta problems {len(self.delta_problems)}")


SOURCE_TABLE = "adult"
KEY = "id"


# The harness's own reads and writes (load_source .. read_row_ids) run on a connection the caller
# opens once per scenario (``closing(backend.connect())``), never on the release's: each release
# run opens and closes its own connection, as it does in production (on DuckDB it attaches to the
# database this one holds open: one DuckDB instance per file and process).


def load_source(con: Connector, backend: Backend, frame: pl.DataFrame) -> None:
    con.write_frame(backend.source_schema, SOURCE_TABLE, frame)


def apply_change(con: Connector, backend: Backend, frame_schema: dict[str, pl.DataType], change: SourceChange) -> None:
    """Run the change as DML on the source (bound values, quoted names), in one transaction:
    the step's change is committed at once, not once per statement."""
    d = con.dialect
    table = quote_table(backend.source_schema, SOURCE_TABLE, d)
    key = quote_ident(KEY, d)
    with con.transaction():
        if change.deletes:
            marks = ", ".join("?" for _ in change.deletes)
            con.execute(f"DELETE FROM {table} WHERE {key} IN ({marks})", list(change.deletes))
        for k, assignments in change.updates:
            sets = ", ".join(f"{quote_ident(c, d)} = ?" for c, _ in assignments)
            con.execute(f"UPDATE {table} SET {sets} WHERE {key} = ?", [v for _, v in assignments] + [k])
        if change.inserts:
            stage = "harness_new_rows"
            frame = pl.DataFrame(list(change.inserts), schema=frame_schema, orient="row")
            con.write_frame(backend.source_schema, stage, frame)
            cols = ", ".join(quote_ident(c, d) for c in frame_schema)
            con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM {quote_table(backend.source_schema, stage, d)}")
            con.execute(f"DROP TABLE {quote_table(backend.source_schema, stage, d)}")


def apply_to_state(state: dict[int, dict[str, Any]], change: SourceChange) -> None:
    for k in change.deletes:
        del state[k]
    for k, assignments in change.updates:
        state[k] = state[k] | dict(assignments)
    for row in change.inserts:
        assert row["id"] not in state, f"insert of existing key {row['id']}"
        state[row["id"]] = dict(row)


def snapshot_source(con: Connector, backend: Backend, qids: list[str], sensitive: list[str], version: int) -> SourceState:
    """Read the source as text (the form the engine compares with hierarchy leaves)."""
    d = con.dialect
    cols = [KEY] + qids + sensitive
    sel = ", ".join(f"CAST({quote_ident(c, d)} AS VARCHAR) AS {quote_ident(c, d)}" for c in cols)
    frame = con.query(f"SELECT {sel} FROM {quote_table(backend.source_schema, SOURCE_TABLE, d)}")
    q = frame.select(qids).rows()
    s = frame.select(sensitive).rows()
    keys = frame[KEY].to_list()
    return SourceState(version, dict(zip(keys, q, strict=True)), dict(zip(keys, s, strict=True)))


def read_published(con: Connector, method: ReleaseMethod, versions: Sequence[int]) -> tuple[dict[int, pl.DataFrame], pl.DataFrame | None]:
    """Every published version table and the delta table, as an analyst reads them."""
    d = con.dialect
    tables = {v: con.query(f"SELECT * FROM {quote_table(method.output_schema, f'{method.output_name}__v{v}', d)}")
              for v in versions}
    delta = None
    if con.relation_columns(method.output_schema, f"{method.output_name}__delta") is not None:
        delta = con.query(f"SELECT * FROM {quote_table(method.output_schema, f'{method.output_name}__delta', d)}")
    return tables, delta


def published_version(version: int, table: pl.DataFrame, qids: list[str], sensitive: list[str]) -> PublishedVersion:
    """``qids``: the published QID columns (``ReleaseMethod.published_qids``)."""
    text = table.select(pl.col(ROW_ID).cast(pl.String), *[pl.col(c).cast(pl.String) for c in qids + sensitive])
    rows = {r[0]: (tuple(r[1:1 + len(qids)]), tuple(r[1 + len(qids):])) for r in text.rows()}
    return PublishedVersion(version, rows)


def read_row_ids(con: Connector, release: str) -> dict[str, str]:
    """Private knowledge of the harness (not the attacker's): source key -> release row id."""
    frame = con.query("SELECT key, row_id FROM _ppdp.row_ids WHERE release = ?", [release])
    return dict(frame.rows())


def run_scenario(scenario: Scenario, backend: Backend, method: ReleaseMethod, base: pl.DataFrame, *,
                 category: Mapping[Any, Any] | None = None) -> ScenarioReport:
    """Load ``base``, publish v1, then apply each step and publish again; attack after every
    published step with everything published so far; check the deltas. The report's exposures
    hold P(exact) / P(category) (``category``: sensitive value -> category) of the persons
    changed since the previous published version and of the unchanged sample, per step."""
    rng = random.Random(scenario.seed)
    report = ScenarioReport(scenario.name, backend.name)
    schema = dict(base.schema)
    state = {r["id"]: r for r in base.rows(named=True)}
    sources: dict[int, SourceState] = {}
    changed: set[str] = set()
    attack_steps: list[tuple[int, int, dict[str, str]]] = []  # (step, versions published by then, changed: kind)
    pending: dict[str, str] = {}  # persons changed since the last published version: change kind
    with closing(backend.connect()) as con:
        load_source(con, backend, base)
        for step in range(len(scenario.steps) + 1):
            if step > 0:
                change = scenario.steps[step - 1](state, rng)
                apply_to_state(state, change)
                apply_change(con, backend, schema, change)
                changed |= {str(k) for k in change.changed_keys()}
                merge_kinds(pending, change_kinds(change, method.qids, method.sensitive))
            snap = snapshot_source(con, backend, method.qids, method.sensitive, version=-1)
            try:
                version = method.publish(backend)
            except PpdpError as exc:
                report.refusals.append((step, str(exc).splitlines()[0][:200]))
                continue
            if version is None:
                report.skipped_steps.append(step)
                continue
            report.versions.append(version)
            sources[version] = SourceState(version, snap.qids, snap.sensitive)
            attack_steps.append((step, len(report.versions), dict(pending)))
            pending.clear()
        if not report.versions:
            return report
        tables, delta = read_published(con, method, report.versions)
        row_ids = read_row_ids(con, method.release_id)
        matches = method.row_matches(con, report.versions)
    report.delta_problems = check_deltas(tables, delta)
    published = [published_version(v, tables[v], method.published_qids, method.sensitive) for v in report.versions]
    everyone = sorted({k for s in sources.values() for k in s.qids})
    unchanged = [k for k in everyone if k not in changed]
    sample = random.Random(scenario.seed + 1).sample(unchanged, min(scenario.unchanged_sample, len(unchanged)))
    targets = sorted(changed)
    report.targets = len(targets) + len(sample)
    cache: dict = {}  # every step attacks a prefix of ``published``: one memo of row_matches per class
    for step, n_versions, kinds in attack_steps:
        obs = Observations(published[:n_versions], widen=method.rows_widen)
        known = {v: sources[v] for v in report.versions[:n_versions]}
        masks: dict[str, np.ndarray] = {}
        report.violations += attack(obs, known, row_ids, targets, method.models, matches,
                                    scenario=scenario.name, step=step, k_only=sample, masks=masks, cache=cache)
        report.exposures += sa_exposure(obs, known, row_ids, kinds | {k: UNCHANGED for k in sample}, matches,
                                        category=category, scenario=scenario.name, step=step, masks=masks,
                                        cache=cache)
    return report


# --- share files ----------------------------------------------------------


def share_file_findings(share: Path, source: pl.DataFrame, release_name: str) -> list[str]:
    """What the holder of a share file learns of the source: columns carrying source keys (more
    than chance: any shared value beyond a tenth of the keys), relations that are not the
    release's, rows equal to a whole source row. Empty: nothing."""
    import duckdb

    keys = {str(k) for k in source[KEY].to_list()}
    rows = {tuple(str(v) for v in r) for r in source.rows()}
    allowed = re.compile(rf"{re.escape(release_name)}(__v[0-9]+|__delta)?")
    found: list[str] = []
    con = duckdb.connect(str(share), read_only=True)
    try:
        for schema, table in con.execute("SELECT table_schema, table_name FROM information_schema.tables").fetchall():
            if not allowed.fullmatch(table):
                found.append(f"{schema}.{table}: not a relation of release {release_name!r}")
            frame = con.sql(f'SELECT * FROM "{schema}"."{table}"').pl()
            for col in frame.columns:
                hits = keys & {str(v) for v in frame[col].unique().to_list()}
                if len(hits) > len(keys) // 10:
                    found.append(f"{schema}.{table}.{col}: {len(hits)} source keys")
            if set(source.columns) <= set(frame.columns):
                same = sum(1 for r in frame.select(source.columns).rows() if tuple(str(v) for v in r) in rows)
                if same:
                    found.append(f"{schema}.{table}: {same} whole source rows")
    finally:
        con.close()
    return found


def run_share_file_scenario(backend: Backend, method: ReleaseMethod, base: pl.DataFrame, share: Path,
                            plant: Sequence[str]) -> tuple[list[int | None], subprocess.CompletedProcess, list[str]]:
    """Load ``base``, publish v1, add rows, publish v2 (so a delta exists), run the ``plant``
    statements (a copy of the source put into the published schema), then ``ppdp export`` the
    published schema into ``share`` through the CLI under test. Returns the published versions,
    the export's process and what the share file gives away (after a failed export: nothing to
    read, the caller looks at the process)."""
    from tests.support.cli_under_test import ppdp

    newcomers = base.head(5).with_columns(pl.col(KEY) + 10_000_000)
    with closing(backend.connect()) as con:  # closed before the export, which may be another process
        load_source(con, backend, base)
        versions = [method.publish(backend)]
        apply_change(con, backend, dict(base.schema), SourceChange(inserts=tuple(newcomers.rows(named=True))))
        versions.append(method.publish(backend))
        for sql in plant:
            con.execute(sql)
    proc = ppdp("export", str(share), "--db", backend.url, "--schema", method.output_schema)
    current = pl.concat([base, newcomers])
    return versions, proc, share_file_findings(share, current, method.output_name) if share.exists() else []
