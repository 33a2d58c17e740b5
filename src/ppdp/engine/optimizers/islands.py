"""Island model shared by every population-based optimizer (ID-DGA §4.1, Algorithm 1).

The whole population is divided into ``islands`` sub-populations that evolve independently.
Every ``migration_interval`` (MI) generations each island sends its best individual to the next
island on a ring; the receiver replaces a random individual that is not its own best
(PAPER_NOTES §4). One island is the ordinary single-population algorithm.

Pieces:

* ``Island``: one sub-population and its budgeted evaluation. An algorithm subclasses it and
  writes ``generation()`` (one generation of GA, DE, ID-DGA, HAEF ...).
* Executors run the islands behind a three-method interface (``start``, ``epochs``, ``close``):
  ``epochs(MI)`` yields, epoch after epoch, one ``EpochReport`` per island, the ring migration
  happening between epochs. ``LocalExecutor`` runs the islands in this process, one after the
  other, in lock step; ``ProcessExecutor`` one worker process per island (``multiprocessing``,
  spawn context by default: Polars warns when a process that started threads forks, so the
  workers are fresh interpreters that rebuild the Problem from NumPy arrays). A distributed
  engine would be one more executor. Processes and pipes live in this module only (STYLE.md).
* ``choose_executor``: which executor a run uses. ``executor = "auto"`` (the default) runs a
  throwaway probe island for a few tens of milliseconds, multiplies its cost per evaluation by
  the budget, and takes worker processes only when that serial estimate is ``AUTO_MARGIN`` (1.5)
  times the estimate with processes (worker start-up, measured once per process, the compute
  spread over the cores, the ring's messages). On the ID-DGA instances a whole run lasts tens of
  milliseconds and a worker a second to start (benchmarks/results/islands.md): processes
  rarely pay there. The choice and its figures go into the run's ``info``.
* ``run_islands``: the master of Algorithm 1. It merges the islands' reports into one
  ``Tracker`` (island by island within each epoch, so the best-so-far history is per
  evaluation), records run time, start-up, communication time and evaluations per island
  (ID-DGA Table 5) and the diversity of the whole population per generation (HAEF §6.1.4,
  Fig. 9).

Keeping the worker processes busy (the compute between two migrations is a millisecond or two
on the ID-DGA instances; a message costs tens of microseconds, a process wake-up more):

* The islands form a ring of pipes: after each epoch, island i sends its best straight to
  island i + 1 and waits only for island i - 1's best, never for the master or for a barrier
  over all islands (``_ring_epochs``). The master only collects reports. The worker ends its
  run by itself once the ring knows that every island is exhausted (a counter travels with the
  migrants), so an island may run a few cheap epochs (receive a migrant, nothing to evaluate)
  past the last one the master uses: results are those of ``LocalExecutor``'s lock step.
* A report is small: the number of evaluations, the island's new local bests only (the global
  best dominates every other row, so the master's history is the one of merging every
  evaluation), its best individual and, every ``diversity_every`` generations, the population's
  G and per-record S counts. Reports travel in batches, sent while the island waits for its
  predecessor. The pairwise G distances of the diversity are computed once, at the end.
* Workers load the Numba kernels before reporting ready, so start-up (``startup_seconds``) is
  apart from the algorithm's run time (``algorithm_seconds``). Before starting fresh workers the
  master loads (on a first run: compiles) the same kernels, so that the workers find them in
  Numba's on-disk cache (the master's NUMBA_CACHE_DIR is passed on) instead of each compiling
  them at once (issue #17: 133 s for a run of 3.5 s). Workers stay alive across runs in the
  process's ``shared_pool`` (stopped at exit); ``worker_pool()`` gives a block a pool of its own
  (a benchmark starts them once), ``fresh_workers()`` none.

Reproducibility: island i draws from ``np.random.SeedSequence(seed).spawn(islands)[i]`` only,
so a seed gives the same result with either executor and any scheduling.

The budget is split over the islands (the first ``budget % islands`` get one more); so is the
population (``pop_size`` is the whole population, ID-DGA §5.2: N = 40 over NSP = 4 islands).
"""

from __future__ import annotations

import atexit
import math
import multiprocessing as mp
import os
import queue
import struct
import threading
import time
import traceback
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from multiprocessing.connection import wait
from typing import Any, ClassVar, Protocol

import numpy as np

from ppdp.engine.errors import SpecError
from ppdp.engine.evaluator import Evaluation
from ppdp.engine.optimizers import OptimizerResult, ProgressFn, Tracker
from ppdp.engine.optimizers.operators import (
    diversity_g_many,
    diversity_s_from_counts,
    sel_two_dimension,
)
from ppdp.engine.problem import Problem, fitness_key

# ---------------------------------------------------------------------------------------
# Parameters
# ---------------------------------------------------------------------------------------

EXECUTORS = ("auto", "local", "process", "ray")

# Options every population-based optimizer takes (ours, not the papers', except islands/MI).
COMMON_DEFAULTS: dict[str, Any] = {
    "islands": 1,  # NSP; 4 for id-dga (ID-DGA §5.2)
    "migration_interval": 5,  # MI (ID-DGA §5.2)
    # Ours: the migrant an island takes before epoch e + 1 left its predecessor after epoch
    # e - lag. 0 = the paper's synchronous migration; lag >= 1 lets an island run up to ``lag``
    # epochs ahead of its predecessor instead of waiting for it. Reproducible either way.
    "migration_lag": 0,
    # "auto" (islands in processes only when the estimate says it pays, see ``choose_executor``),
    # "process" (one process per island) or "local" (all islands in this process). Same results.
    "executor": "auto",
    "ray_address": "",  # executor = "ray": the cluster ("" = RAY_ADDRESS, a running one, or a new local one)
    "start_method": "spawn",  # multiprocessing start method of the worker processes
    "oracle": False,  # memetic repair S := S*(G) on every evaluated solution (PAPER_NOTES §3)
    # Record the population diversity every n generations for HAEF Fig. 9 (0 = never). Off by
    # default: a release does not need it, and its snapshots are most of the islands' messages.
    "diversity_every": 0,
}


def parse_params(name: str, params: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """``defaults`` updated with ``params``; SpecError for unknown names or wrong types."""
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        raise SpecError(f"{name} optimizer: unknown parameter(s) {unknown}. Known: {', '.join(sorted(defaults))}.")
    out = dict(defaults)
    for key, value in params.items():
        d = defaults[key]
        ok = (isinstance(value, bool) if isinstance(d, bool)
              else isinstance(value, int) and not isinstance(value, bool) if isinstance(d, int)
              else isinstance(value, int | float) and not isinstance(value, bool) if isinstance(d, float)
              else isinstance(value, str) if isinstance(d, str) else True)
        if not ok:
            raise SpecError(f"{name} optimizer: parameter {key!r} must be a {type(d).__name__}, got {value!r}. "
                            f"Hint: {key} = {d!r}.")
        out[key] = float(value) if isinstance(d, float) else value
    for key in ("islands", "migration_interval", "pop_size"):
        if key in out and out[key] < 1:
            raise SpecError(f"{name} optimizer: {key} must be at least 1, got {out[key]}.")
    if out.get("migration_lag", 0) < 0:
        raise SpecError(f"{name} optimizer: migration_lag must be >= 0 (0 = synchronous migration).")
    if out.get("diversity_every", 0) < 0:
        raise SpecError(f"{name} optimizer: diversity_every must be >= 0 (0 = off).")
    for key in ("mr", "cr", "cr_ga", "mr_ga", "cr_de"):
        if key in out and not 0.0 <= out[key] <= 1.0:
            raise SpecError(f"{name} optimizer: {key} must be in [0, 1], got {out[key]}.")
    if "f" in out and not 0.0 < out["f"] <= 2.0:
        raise SpecError(f"{name} optimizer: F must be in (0, 2] (HAEF §4.3.2), got {out['f']}.")
    if out.get("executor") not in (None, *EXECUTORS):
        raise SpecError(f"{name} optimizer: executor must be one of {', '.join(map(repr, EXECUTORS))}, "
                        f"not {out['executor']!r}. Hint: executor = \"auto\".")
    if "start_method" in out and out["start_method"] not in mp.get_all_start_methods():
        raise SpecError(f"{name} optimizer: start_method must be one of {mp.get_all_start_methods()}, "
                        f"not {out['start_method']!r}. Hint: \"spawn\".")
    return out


def split(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` near-equal integers, larger ones first."""
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


# ---------------------------------------------------------------------------------------
# One sub-population
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Individual:
    """One solution with its fitness, as it travels between islands."""

    g: np.ndarray
    s: np.ndarray
    feasible: bool
    violation: float
    td: float
    ad: np.ndarray
    suppressed: int


@dataclass(eq=False)
class EpochReport:
    """What an island sends to the master after an epoch (MI generations)."""

    index: int
    evaluated: int  # evaluations of the epoch
    # The new local bests, in order: (position in the epoch (k,), G (k, nQ), retained (k, H),
    # their evaluation (k rows)); None when there is none.
    improvements: tuple[np.ndarray, np.ndarray, np.ndarray, Evaluation] | None
    best: Individual | None  # the migrant of the ring (not sent to the master by worker processes)
    # Snapshots every ``diversity_every`` generations: (island evaluations (d,), G (d, P, nQ),
    # S ones per record (d, nR)), in small integer types; None when there is none.
    diversity: tuple[np.ndarray, np.ndarray, np.ndarray] | None
    pop_size: int
    used: int
    generations: int
    exhausted: bool
    compute_seconds: float
    extras: dict[str, Any] = field(default_factory=dict)  # the island's extras, sent once it is exhausted
    started: float = 0.0  # time.perf_counter() at the start and end of the epoch (a system-wide
    finished: float = 0.0  # monotonic clock on Linux: comparable between the processes)


def _small(a: np.ndarray) -> np.ndarray:
    """Non-negative integers in the smallest of uint8 / uint16 that holds them (fewer bytes to
    pickle), else unchanged."""
    top = int(a.max()) if a.size else 0
    if a.size and int(a.min()) < 0:
        return a
    return a.astype(np.uint8) if top < 256 else a.astype(np.uint16) if top < 65536 else a


def _beats(fa: bool, va: float, ta: float, fb: bool, vb: float, tb: float) -> bool:
    """``operators.sel_two_dimension`` on Python scalars: does a beat b? (strictly; ties keep b)"""
    if fa:
        return (not fb) or ta > tb
    return (not fb) and va < vb


class Island:
    """A sub-population (G: (P, nQ) levels, S: (P, nR) keep flags) with its fitness arrays.

    Subclasses set ``MIN_POP`` and write ``generation()``. ``evaluate`` is the only way to
    spend budget: it evaluates at most the remaining budget (a batch may be cut short), counts
    every evaluation and logs the new local bests for the master, and applies the oracle repair
    when ``oracle`` is on.
    """

    MIN_POP: ClassVar[int] = 2

    def __init__(self, problem: Problem, config: dict[str, Any], *, budget: int,
                 seed: np.random.SeedSequence, index: int, pop_size: int) -> None:
        self.problem = problem
        self.config = config
        self.budget = int(budget)
        self.rng = np.random.default_rng(seed)
        self.index = index
        self.pop_size = int(pop_size)
        self.heights = np.asarray(problem.heights, dtype=np.int64)
        self.n_records = problem.n_records
        self.oracle = bool(config.get("oracle", False))
        self.diversity_every = int(config.get("diversity_every", 1))
        self.used = 0
        self.generations = 0
        self.initialized = False
        self.G = np.zeros((0, problem.n_qids), dtype=np.int64)
        self.S = np.zeros((0, self.n_records), dtype=bool)
        self.feas = np.zeros(0, dtype=bool)
        self.viol = np.zeros(0)
        self.td = np.zeros(0)
        self.ad = np.zeros((0, len(problem.models)))
        self.sup = np.zeros(0, dtype=np.int64)
        self.extras: dict[str, Any] = {}
        self._log_best: tuple[int, float] | None = None
        self._reset_epoch()

    # -- budget and evaluation --------------------------------------------------------
    @property
    def remaining(self) -> int:
        return max(self.budget - self.used, 0)

    @property
    def exhausted(self) -> bool:
        return self.used >= self.budget

    @property
    def progress(self) -> float:
        """Fraction of the island's evaluation budget spent (g / gamma of HAEF, PAPER_NOTES §5)."""
        return min(self.used / self.budget, 1.0) if self.budget else 1.0

    def evaluate(self, G: np.ndarray, S: np.ndarray) -> tuple[Evaluation, np.ndarray] | None:
        """Evaluate up to ``remaining`` rows of (G, S); returns (evaluation, S) for the rows
        evaluated (S replaced by S*(G) under the oracle repair), None when the budget is spent."""
        m = min(len(G), self.remaining)
        if m == 0:
            return None
        G = np.asarray(G[:m], dtype=np.int64)
        S = np.asarray(S[:m], dtype=bool)
        if self.oracle:
            retained, ev = self.problem.evaluate_optimal(G)
            S = self.problem.s_from_retained(retained)
        else:
            retained = self.problem.retained_from_s(S)
            ev = self.problem.evaluate(G, retained=retained)
        self.record_evaluations(G, retained, ev)
        return ev, S

    def record_evaluations(self, G: np.ndarray, retained: np.ndarray, ev: Evaluation,
                           best_rows: np.ndarray | None = None) -> None:
        """Count evaluated rows against the budget and log the new local bests for the master
        (for an algorithm that evaluates by itself, e.g. in a fused kernel, which may pass the
        rows that are new local bests, ``best_rows``, already found)."""
        m = len(ev)
        if best_rows is None:
            feas, viol, td = ev.feasible.tolist(), ev.violation.tolist(), ev.td.tolist()
            best_rows = []
            for i in range(m):
                key = fitness_key(feas[i], viol[i], td[i])
                if self._log_best is None or key > self._log_best:
                    self._log_best = key
                    best_rows.append(i)
        else:
            best_rows = best_rows.tolist()
            if best_rows:
                i = best_rows[-1]
                self._log_best = fitness_key(bool(ev.feasible[i]), float(ev.violation[i]), float(ev.td[i]))
        for i in best_rows:
            self._improvements.append((self._logged + i, G[i].copy(), np.array(retained[i]), ev.row(i)))
        self._logged += m
        self.used += m

    # -- population -------------------------------------------------------------------
    @property
    def size(self) -> int:
        return int(self.G.shape[0])

    def initialize(self) -> None:
        """Random population (HAEF eq. 7-8, PAPER_NOTES §4): G uniform in [0, height], S uniform
        in {0, 1}; evaluated (cut short if the budget is smaller than the population)."""
        P = self.pop_size
        G = self.rng.integers(0, self.heights + 1, size=(P, len(self.heights)))
        S = self.rng.random((P, self.n_records)) < 0.5
        out = self.evaluate(G, S)
        if out is None:
            return
        ev, S = out
        m = len(ev)
        self.G, self.S = G[:m].astype(np.int64), S
        self.feas, self.viol, self.td = ev.feasible.copy(), ev.violation.copy(), ev.td.copy()
        self.ad, self.sup = ev.ad.copy(), ev.suppressed.copy()

    def put(self, i: int, g: np.ndarray, s: np.ndarray, ev: Evaluation, j: int) -> None:
        """Individual i := row j of an evaluated batch."""
        self.G[i] = g
        self.S[i] = s
        self.feas[i], self.viol[i], self.td[i] = ev.feasible[j], ev.violation[j], ev.td[j]
        self.ad[i], self.sup[i] = ev.ad[j], ev.suppressed[j]

    def beats(self, ev: Evaluation, j: int, i: int) -> bool:
        """Does row j of ``ev`` beat individual i under the two-dimension rule?"""
        return _beats(bool(ev.feasible[j]), float(ev.violation[j]), float(ev.td[j]),
                      bool(self.feas[i]), float(self.viol[i]), float(self.td[i]))

    def replace_if_better(self, targets: np.ndarray, G: np.ndarray, S: np.ndarray, ev: Evaluation) -> np.ndarray:
        """Row j of the evaluated batch replaces individual ``targets[j]`` if it beats it
        (two-dimension rule, ID-DGA §4.6 / HAEF eq. 21); targets are distinct -> kept (bool)."""
        t = np.asarray(targets[: len(ev)], dtype=np.int64)
        kept = sel_two_dimension(ev.feasible, ev.violation, ev.td, self.feas[t], self.viol[t], self.td[t])
        j = np.flatnonzero(kept)
        i = t[j]
        self.G[i], self.S[i] = G[j], S[j]
        self.feas[i], self.viol[i], self.td[i] = ev.feasible[j], ev.violation[j], ev.td[j]
        self.ad[i], self.sup[i] = ev.ad[j], ev.suppressed[j]
        return kept

    def worse_of_pairs(self, pairs: np.ndarray) -> np.ndarray:
        """The worse individual of each pair (the second on a tie), as ``worse_of``."""
        a, b = pairs[:, 0], pairs[:, 1]
        b_beats_a = sel_two_dimension(self.feas[b], self.viol[b], self.td[b], self.feas[a], self.viol[a], self.td[a])
        return np.where(b_beats_a, a, b)

    def worse_of(self, a: int, b: int) -> int:
        """The worse of two individuals (b on a tie)."""
        return a if _beats(bool(self.feas[b]), float(self.viol[b]), float(self.td[b]),
                           bool(self.feas[a]), float(self.viol[a]), float(self.td[a])) else b

    def best_index(self) -> int:
        """Index of the best individual (the first one on a tie)."""
        # A loop over Python floats: called twice an epoch on a few dozen individuals, where
        # four NumPy calls on tiny arrays cost more than the whole comparison.
        best, best_key = 0, None
        for i, (feasible, td, violation) in enumerate(zip(self.feas.tolist(), self.td.tolist(), self.viol.tolist(),
                                                          strict=True)):
            k = (1, td) if feasible else (0, -violation)
            if best_key is None or k > best_key:
                best, best_key = i, k
        return best

    def individual(self, i: int) -> Individual:
        return Individual(self.G[i].copy(), self.S[i].copy(), bool(self.feas[i]), float(self.viol[i]),
                          float(self.td[i]), self.ad[i].copy(), int(self.sup[i]))

    def receive(self, migrant: Individual) -> None:
        """Migration (ID-DGA §4.7): the migrant replaces a random individual that is not the best."""
        if self.size < 2:
            return
        best = self.best_index()
        # Uniform over the others: the j-th index that is not ``best`` (the same draw as
        # indexing np.delete(arange(size), best), without building it every epoch).
        j = int(self.rng.integers(self.size - 1))
        i = j if j < best else j + 1
        self.G[i], self.S[i] = migrant.g, migrant.s
        self.feas[i], self.viol[i], self.td[i] = migrant.feasible, migrant.violation, migrant.td
        self.ad[i], self.sup[i] = migrant.ad, migrant.suppressed

    # -- the algorithm ----------------------------------------------------------------
    def generation(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def warm_up(self) -> None:
        """Load what ``generation`` compiles (a worker does it before reporting ready, so that
        it is not timed as the algorithm's run). Must not touch the population or its draws."""

    def can_evolve(self) -> bool:
        return self.size >= self.MIN_POP and not self.exhausted

    # -- one epoch ----------------------------------------------------------------------
    def _reset_epoch(self) -> None:
        self._improvements: list[tuple[int, np.ndarray, np.ndarray, Evaluation]] = []
        self._diversity: list[tuple[int, np.ndarray, np.ndarray]] = []
        self._logged = 0

    def _record_diversity(self) -> None:
        if self.diversity_every and self.generations % self.diversity_every == 0 and self.size:
            self._diversity.append((self.used, self.G.copy(), np.add.reduce(self.S, axis=0, dtype=np.int32)))

    def _packed_improvements(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, Evaluation] | None:
        imp = self._improvements
        if not imp:
            return None
        return (np.array([x[0] for x in imp], dtype=np.int64), _small(np.stack([x[1] for x in imp])),
                _small(np.stack([x[2] for x in imp])), Evaluation.concat([x[3] for x in imp]))

    def _packed_diversity(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        div = self._diversity
        if not div:
            return None
        return (np.array([x[0] for x in div], dtype=np.int64), _small(np.stack([x[1] for x in div])),
                _small(np.stack([x[2] for x in div])))

    def evolve(self, generations: int) -> None:
        """Up to ``generations`` generations, fewer when the budget runs out."""
        done = 0
        while done < generations and self.can_evolve():
            before = self.used
            self.generation()
            self.generations += 1
            done += 1
            self._record_diversity()
            if self.used == before and not self.exhausted:
                raise RuntimeError(f"{type(self).__name__}: a generation evaluated nothing")

    def run(self, generations: int, migrant: Individual | None) -> EpochReport:
        """Receive a migrant, then evolve up to ``generations`` generations (initializing the
        population first on the first call)."""
        t0 = time.perf_counter()
        self._reset_epoch()
        if migrant is not None and self.initialized:
            self.receive(migrant)
        if not self.initialized:
            self.initialized = True
            self.initialize()
            self._record_diversity()
        self.evolve(generations)
        exhausted = not self.can_evolve()
        t1 = time.perf_counter()
        return EpochReport(
            index=self.index, evaluated=self._logged, improvements=self._packed_improvements(),
            best=self.individual(self.best_index()) if self.size else None,
            diversity=self._packed_diversity(), pop_size=self.size, used=self.used, generations=self.generations,
            exhausted=exhausted, compute_seconds=t1 - t0,
            extras=dict(self.extras) if exhausted else {}, started=t0, finished=t1,
        )


@dataclass(frozen=True)
class IslandSpec:
    """Everything needed to build one island (picklable: the class travels by reference)."""

    factory: type[Island]
    config: dict[str, Any]
    budget: int
    seed: np.random.SeedSequence
    index: int
    pop_size: int

    def build(self, problem: Problem) -> Island:
        return self.factory(problem, self.config, budget=self.budget, seed=self.seed, index=self.index,
                            pop_size=self.pop_size)


# ---------------------------------------------------------------------------------------
# Executors
# ---------------------------------------------------------------------------------------


class IslandExecutor(Protocol):
    """Runs the islands. ``parallel`` says whether islands' compute overlaps in time.

    ``epochs(generations, lag)`` yields one list of reports (one per island, in island order)
    per epoch: every island evolves ``generations`` generations, then island i + 1 receives
    island i's best (ring migration, ID-DGA §4.1) before its next epoch; with ``lag`` > 0 the
    best island i had ``lag`` epochs earlier (none before epoch lag + 2). The caller stops
    iterating when it is done (it closes the generator), then calls ``close``.
    """

    parallel: bool

    def start(self, specs: list[IslandSpec]) -> None: ...
    def epochs(self, generations: int, lag: int = 0) -> Iterator[list[EpochReport]]: ...
    def close(self) -> None: ...


class LocalExecutor:
    """All islands in this process, one after the other, in lock step."""

    parallel = False

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.islands: list[Island] = []

    def start(self, specs: list[IslandSpec]) -> None:
        self.islands = [spec.build(self.problem) for spec in specs]

    def epochs(self, generations: int, lag: int = 0) -> Iterator[list[EpochReport]]:
        n = len(self.islands)
        migrants: list[Individual | None] = [None] * n
        bests: deque[list[Individual | None]] = deque(maxlen=lag + 1)  # the last lag + 1 epochs
        while True:
            reports = [isl.run(generations, m) for isl, m in zip(self.islands, migrants, strict=True)]
            yield reports
            bests.append([r.best for r in reports])
            migrants = mig_ring(bests[0]) if len(bests) == lag + 1 else [None] * n

    def close(self) -> None:
        self.islands = []


@dataclass(frozen=True)
class ProblemSpec:
    """The Problem as data for a worker process: the encoded table (without its text values,
    which the evaluator does not need), the privacy models and the backend's name."""

    table: Any
    models: list[Any]
    backend: str

    @classmethod
    def of(cls, problem: Problem) -> ProblemSpec:
        table = replace(problem.table, values=problem.table.values.clear())
        return cls(table, list(problem.models), problem.evaluator.name)

    def build(self) -> Problem:
        return Problem(self.table, self.models, backend=self.backend)


def warm_up(problem: Problem, oracle: bool = True) -> None:
    """Call once every kernel an island uses, so that a fresh process loads them from Numba's
    on-disk cache now (tens to hundreds of ms) and not inside the first epoch. Touches neither
    an island nor the problem's evaluation counter. ``oracle`` False skips the kernels of the
    oracle repair (each kernel loaded is start-up time, and compile time on a first run)."""
    g = np.zeros(problem.n_qids, dtype=np.int64)
    s = np.ones(problem.n_records, dtype=bool)
    retained = problem.retained_from_s(s[None])
    problem.evaluator.evaluate(g[None], retained)
    problem.record_class_sizes(g, s)
    if oracle:
        problem.optimal_retained(g)  # class statistics (and pairs) of the general path, oracle kernels


def warm_up_island(problem: Problem, spec: IslandSpec) -> None:
    """Everything a worker loads before reporting ready for ``spec``'s island (``warm_up`` and the
    island's own kernels). The master calls it before starting fresh workers, so that on a first
    run it compiles the kernels once into Numba's on-disk cache and the workers only load them,
    instead of every worker compiling the same kernels at once."""
    warm_up(problem, oracle=bool(spec.config.get("oracle", False)))
    spec.build(problem).warm_up()


# Largest pickled migrant written straight into the ring pipe (Linux pipes buffer 64 KiB). An
# island runs at most lag epochs ahead of its predecessor, so at most (n - 1) * lag of them
# ahead of its successor: a pipe holds at most n * lag + 2 unread migrants. With every message
# below half the buffer divided by that, islands blocked writing to their successor cannot close
# a cycle; a larger migrant (S of a very large table) goes through a sender thread so that the
# island keeps reading its predecessor.
_PIPE_BYTES = 64 * 1024


def _direct_send_bytes(n: int, lag: int) -> int:
    return _PIPE_BYTES // (2 * (n * lag + 2))


class _RingSender:
    """The writing end of an island's ring pipe: migrants to the successor, in order."""

    def __init__(self, conn: Any, direct_bytes: int) -> None:
        self.conn = conn
        self.direct_bytes = direct_bytes
        self.queue: queue.SimpleQueue | None = None
        self.thread: threading.Thread | None = None
        # The successor closed its end: it stopped (aborted, or failed and reports that itself
        # to the master). Not this island's error: it stops too, without a second report.
        self.broken = False

    def send(self, data: bytes) -> None:
        if self.broken:
            return
        if self.thread is None and len(data) <= self.direct_bytes:
            self._write(data)
            return
        if self.thread is None:
            self.queue = queue.SimpleQueue()
            self.thread = threading.Thread(target=self._loop, name="ppdp-ring-sender", daemon=True)
            self.thread.start()
        self.queue.put(data)

    def _write(self, data: bytes) -> bool:
        try:
            self.conn.send_bytes(data)
            return True
        except OSError:  # BrokenPipeError, ConnectionResetError: the successor stopped
            self.broken = True
            return False

    def _loop(self) -> None:
        while (data := self.queue.get()) is not None:
            if not self._write(data):
                return

    def close(self) -> None:
        """Send what is queued, then close: the successor reads end-of-file after the last migrant."""
        if self.thread is not None:
            self.queue.put(None)
            self.thread.join()
        self.conn.close()


# Reports travel to the master in batches, sent while the island waits for its predecessor
# (never between an epoch and the migrant it owes its successor) once this many seconds have
# passed since the last batch, and at once when the island is exhausted. Every batch wakes the
# master, which then takes a core from the islands; on the ID-DGA instances 5 ms and 50 ms
# give the same run times within the noise, 50 ms the steadier hops.
_REPORT_SECONDS = 0.05
# How long an island polls for its predecessor's migrant before blocking in the kernel, when the
# islands have a core each (waking a blocked process costs more than an epoch's messages).
_SPIN_SECONDS = 0.0005


# -- wire formats ------------------------------------------------------------------------
# Messages on the critical path are packed by hand: a migrant every epoch (tens of them in a
# 50 ms run) and the islands' reports. Pickling dataclasses of small arrays cost more than the
# epochs' compute on the ID-DGA instances (benchmarks/islands.py).

# kind: b"I" a migrant follows, b"S" the same migrant as last time, b"N" none (empty island);
# chain; then for b"I": feasible, violation, td, suppressed, len(g), len(s), len(ad).
_MIGRANT = struct.Struct("<cq?ddqIII")


def _encode_migrant(best: Individual | None, last: Individual | None, chain: int) -> bytes:
    if best is None:
        return _MIGRANT.pack(b"N", chain, False, 0.0, 0.0, 0, 0, 0, 0)
    if last is not None and _same_individual(best, last):
        return _MIGRANT.pack(b"S", chain, False, 0.0, 0.0, 0, 0, 0, 0)
    g = np.ascontiguousarray(best.g, dtype=np.int64)
    ad = np.ascontiguousarray(best.ad, dtype=np.float64)
    head = _MIGRANT.pack(b"I", chain, bool(best.feasible), float(best.violation), float(best.td),
                         int(best.suppressed), len(g), len(best.s), len(ad))
    return b"".join((head, g.tobytes(), np.packbits(best.s).tobytes(), ad.tobytes()))


def _decode_migrant(data: bytes, last: Individual | None) -> tuple[Individual | None, int]:
    kind, chain, feasible, violation, td, suppressed, nq, ns, nad = _MIGRANT.unpack_from(data)
    if kind == b"N":
        return None, chain
    if kind == b"S":
        return last, chain
    o = _MIGRANT.size
    g = np.frombuffer(data, np.int64, nq, o).copy()
    o += 8 * nq
    nbytes = (ns + 7) // 8
    s = np.unpackbits(np.frombuffer(data, np.uint8, nbytes, o), count=ns).astype(bool)
    ad = np.frombuffer(data, np.float64, nad, o + nbytes).copy()
    return Individual(g, s, feasible, violation, td, ad, suppressed), chain


def _same_individual(a: Individual, b: Individual) -> bool:
    # Bytes of equal dtypes and shapes (both come from one island's arrays): cheaper than
    # np.array_equal on every epoch's migrant.
    return (a.td == b.td and a.feasible == b.feasible and a.violation == b.violation
            and a.g.shape == b.g.shape and a.s.shape == b.s.shape and a.g.dtype == b.g.dtype
            and a.s.dtype == b.s.dtype and a.g.tobytes() == b.g.tobytes() and a.s.tobytes() == b.s.tobytes())


_REPORT_SCALARS = ("evaluated", "pop_size", "used", "generations", "exhausted", "compute_seconds", "started",
                   "finished")


def _pack_reports(reports: list[EpochReport]) -> dict[str, Any]:
    """A batch of one island's reports as a few concatenated arrays (``_unpack_reports``)."""
    out: dict[str, Any] = {"index": reports[0].index, "extras": [r.extras for r in reports]}
    for name in _REPORT_SCALARS:
        out[name] = np.array([getattr(r, name) for r in reports])
    imp = [r.improvements for r in reports]
    out["n_imp"] = np.array([0 if x is None else len(x[0]) for x in imp], dtype=np.int64)
    have = [x for x in imp if x is not None]
    out["imp"] = None if not have else (np.concatenate([x[0] for x in have]), np.concatenate([x[1] for x in have]),
                                        np.concatenate([x[2] for x in have]), Evaluation.concat([x[3] for x in have]))
    div = [r.diversity for r in reports]
    have_d = [d for d in div if d is not None]
    if len({d[1].shape[1:] for d in have_d} | {d[2].shape[1:] for d in have_d}) <= 2:
        out["n_div"] = np.array([0 if d is None else len(d[0]) for d in div], dtype=np.int64)
        out["div"] = None if not have_d else tuple(np.concatenate([d[j] for d in have_d]) for j in range(3))
    else:  # the population size changed within the batch (rare): as they are
        out["n_div"], out["div"] = None, div
    return out


def _unpack_reports(p: dict[str, Any]) -> list[EpochReport]:
    k = len(p["evaluated"])
    ends_i = np.cumsum(p["n_imp"]).tolist()
    ends_d = np.cumsum(p["n_div"]).tolist() if p["n_div"] is not None else None
    cols = {name: p[name].tolist() for name in _REPORT_SCALARS}
    out = []
    for j in range(k):
        a, b = (ends_i[j - 1] if j else 0), ends_i[j]
        imp = None
        if b > a:
            pos, G, R, ev = p["imp"]
            imp = (pos[a:b], G[a:b], R[a:b], Evaluation(*(getattr(ev, f)[a:b] for f in
                                                             ("ad", "td", "feasible", "violation", "suppressed"))))
        if ends_d is None:
            div = p["div"][j]
        else:
            c, d = (ends_d[j - 1] if j else 0), ends_d[j]
            div = tuple(x[c:d] for x in p["div"]) if d > c else None
        out.append(EpochReport(index=p["index"], improvements=imp, best=None, diversity=div, extras=p["extras"][j],
                               **{name: cols[name][j] for name in _REPORT_SCALARS}))
    return out


def _ring_epochs(conn: Any, island: Island, pred: Any, succ: Any, n: int, generations: int, lag: int = 0) -> None:
    """One run of an island in its worker: epochs until the ring is done, without the master.

    After each epoch the island sends its best to the next island, then waits for its
    predecessor's best; its reports go to the master in batches while it waits (``_REPORT_SECONDS``).
    Each migrant carries ``chain``: how many islands in a row along the ring, ending with the
    sender, were exhausted at their epochs (the island's own epoch, its predecessor's previous
    one, ...). Exhaustion is permanent, so ``chain >= n`` means that every island is exhausted:
    the master, which stops at the first epoch where all are, has every report it needs, and
    the island stops (at most n cheap epochs after that one). A message from the master during
    the run asks it to stop early (``abort``). With ``lag`` > 0 the island reads, after epoch e,
    the migrant its predecessor sent after epoch e - lag (none for the first ``lag`` epochs), so
    it waits only when it is ``lag`` epochs ahead.
    """
    sender = _RingSender(succ, _direct_send_bytes(n, lag)) if succ is not None else None
    epoch = 0
    spin = _SPIN_SECONDS if n <= _usable_cores() else 0.0
    migrant: Individual | None = None
    sent: Individual | None = None  # the last migrant sent, and received: an unchanged best
    received: Individual | None = None  # travels as b"S" (no copy of S every epoch)
    chain = 0
    reports: list[EpochReport] = []
    flushed = time.perf_counter()
    ok = False
    try:
        while True:
            report = island.run(generations, migrant)
            epoch += 1
            chain = chain + 1 if report.exhausted else 0
            if sender is not None:
                sender.send(_encode_migrant(report.best, sent, chain))
                sent = report.best
            report.best = None  # the master does not need it
            reports.append(report)
            if chain >= n or conn.poll() or (sender is not None and sender.broken):  # done, aborted, or the successor stopped
                break
            ready = pred is not None and pred.poll()
            # An exhausted island's reports go at once: the master may be waiting for them.
            if report.exhausted or (not ready and time.perf_counter() - flushed >= _REPORT_SECONDS):
                conn.send(("ok", _pack_reports(reports)))
                reports, flushed = [], time.perf_counter()
            if pred is None or epoch <= lag:  # one island, or no migrant due yet (lag)
                migrant, chain = None, 0
                continue
            ready = ready or pred.poll()
            if not ready and spin:
                deadline = time.perf_counter() + spin
                while not ready and time.perf_counter() < deadline:
                    ready = pred.poll()
            if not ready and conn in wait([pred, conn]):
                break  # aborted
            try:
                migrant, chain = _decode_migrant(pred.recv_bytes(), received)
                received = migrant
            except EOFError:  # the predecessor stopped: it was aborted, or the ring is done
                break
        ok = True
    finally:
        if sender is not None:
            sender.close()
        if pred is not None:
            if ok:  # read the predecessor's last migrants until it closes its end
                try:
                    while True:
                        pred.recv_bytes()
                except (EOFError, OSError):
                    pass
            pred.close()
    if conn.poll():
        conn.recv()  # the abort, if any
    if reports:
        conn.send(("ok", _pack_reports(reports)))
    conn.send(("done", None))


def _usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _worker(conn: Any) -> None:
    """Worker process: serve ``setup`` (build the problem and an island, receive the ring pipe
    ends) and ``run`` (the island's epochs, see ``_ring_epochs``) until told to stop (None).
    The process outlives a run, so a ``worker_pool`` reuses it."""
    island: Island | None = None
    pred = succ = None
    n = 1
    try:
        while True:
            msg = conn.recv()
            if msg is None:
                break
            kind = msg[0]
            if kind == "warm":  # load the kernels of ``spec``'s island only (``measure_worker_start``)
                _, pspec, spec = msg
                warm_up_island(pspec.build(), spec)
                conn.send(("ready", None))
            elif kind == "setup":
                _, pspec, spec, pred, succ, n = msg
                problem = pspec.build()
                warm_up_island(problem, spec)
                island = spec.build(problem)
                conn.send(("ready", None))
                # The master sends "run" as soon as every island is ready: wait for it awake
                # (a blocked process takes a while to wake; the run's clock is already going).
                deadline = time.perf_counter() + _SPIN_SECONDS * 4
                while not conn.poll() and time.perf_counter() < deadline:
                    pass
            elif kind == "run":
                _ring_epochs(conn, island, pred, succ, n, msg[1], msg[2])
                island, pred, succ = None, None, None
            # anything else (an ``abort`` that arrived after the run ended) is ignored
    except (EOFError, KeyboardInterrupt):
        pass
    except BaseException:  # noqa: BLE001 - report everything to the master
        try:
            conn.send(("error", traceback.format_exc()))
        except (OSError, EOFError):
            pass
    finally:
        conn.close()


class _Worker:
    """One worker process and the master's end of its pipe."""

    def __init__(self, ctx: Any, name: str) -> None:
        parent, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child,), daemon=True, name=name)
        with _numba_cache_env():
            self.proc.start()
        child.close()
        self.conn = parent

    def stop(self) -> None:
        """Ask the process to exit and wait for it (terminate it if it does not)."""
        try:
            self.conn.send(None)
        except (OSError, ValueError):
            pass
        self.proc.join(timeout=5)
        self.kill()

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.terminate()
            self.proc.join(timeout=5)
        self.conn.close()


class WorkerPool:
    """Island worker processes kept alive across runs (see ``worker_pool`` and ``shared_pool``).

    A run takes as many idle workers as it has islands (starting new ones when needed) and
    gives them back at the end; a worker whose run failed is stopped, not reused. At most
    ``max_idle`` workers wait idle (the others are stopped when given back).
    """

    def __init__(self, start_method: str = "spawn", max_idle: int = 8) -> None:
        self.start_method = start_method
        self.ctx = mp.get_context(start_method)
        self.idle: list[_Worker] = []
        self.started = 0
        self.max_idle = max_idle
        self.pid = os.getpid()  # a forked child must not use its parent's workers
        self._lock = threading.Lock()

    def acquire(self, n: int) -> list[_Worker]:
        out: list[_Worker] = []
        with self._lock:
            while self.idle and len(out) < n:
                w = self.idle.pop(0)
                if w.proc.is_alive():
                    out.append(w)
                else:
                    w.kill()
            fresh = n - len(out)
            first = self.started
            self.started += fresh
        out.extend(_Worker(self.ctx, f"ppdp-island-pool-{first + i}") for i in range(fresh))
        return out

    def idle_count(self) -> int:
        """Idle workers still alive (what the next run can take without starting processes)."""
        with self._lock:
            return sum(1 for w in self.idle if w.proc.is_alive())

    def release(self, workers: list[_Worker]) -> None:
        with self._lock:
            keep = max(self.max_idle - len(self.idle), 0)
            self.idle.extend(workers[:keep])
            extra = workers[keep:]
        for w in extra:
            w.stop()

    def close(self) -> None:
        with self._lock:
            idle, self.idle = self.idle, []
        for w in idle:
            w.stop()


# Start method -> the pool of a ``worker_pool`` block, or None inside ``fresh_workers``; outside
# both, ``shared_pool``.
_POOLS: dict[str, WorkerPool | None] = {}
_SHARED: dict[str, WorkerPool] = {}
_UNSET = object()


def shared_pool(start_method: str = "spawn") -> WorkerPool:
    """The warm pool of this Python process for ``start_method``: created on first use, reused by
    every run with islands in processes outside ``worker_pool`` / ``fresh_workers`` blocks (so
    only the first such run pays for starting workers), its workers stopped at exit."""
    pool = _SHARED.get(start_method)
    if pool is None or pool.pid != os.getpid():
        pool = _SHARED[start_method] = WorkerPool(start_method)
    return pool


def _close_shared_pools() -> None:
    for pool in list(_SHARED.values()):
        if pool.pid == os.getpid():
            pool.close()
    _SHARED.clear()


atexit.register(_close_shared_pools)


def active_pool(start_method: str = "spawn") -> WorkerPool | None:
    """The pool a run with this start method takes its workers from (None: fresh workers)."""
    pool = _POOLS.get(start_method, _UNSET)
    return shared_pool(start_method) if pool is _UNSET else pool


@contextmanager
def _pool_override(start_method: str, pool: WorkerPool | None) -> Iterator[None]:
    previous = _POOLS.get(start_method, _UNSET)
    _POOLS[start_method] = pool
    try:
        yield
    finally:
        if previous is _UNSET:
            _POOLS.pop(start_method, None)
        else:
            _POOLS[start_method] = previous


@contextmanager
def worker_pool(start_method: str = "spawn") -> Iterator[WorkerPool]:
    """Within the ``with`` block, ``ProcessExecutor`` (any optimizer with islands in worker
    processes and this start method) reuses the long-lived workers of a pool of its own, stopped
    at the end of the block (instead of the process's ``shared_pool``). Results do not change;
    only the start-up does."""
    pool = WorkerPool(start_method)
    try:
        with _pool_override(start_method, pool):
            yield pool
    finally:
        pool.close()


@contextmanager
def fresh_workers(start_method: str = "spawn") -> Iterator[None]:
    """Within the ``with`` block, runs with islands in processes start their own workers and stop
    them at the end (no pool): what a run costs in a process that has no warm workers."""
    with _pool_override(start_method, None):
        yield


@contextmanager
def _numba_cache_env() -> Iterator[None]:
    """Let a new worker process use this process's Numba cache directory (NUMBA_CACHE_DIR): a
    spawned interpreter reads it from its environment when Numba is imported, so a directory set
    here only in ``numba.config`` (not in the environment) would otherwise send the worker to
    another cache, where it compiles every kernel again."""
    from numba.core import config as numba_config

    cache_dir = numba_config.CACHE_DIR
    previous = os.environ.get("NUMBA_CACHE_DIR")
    if not cache_dir or previous == cache_dir:
        yield
        return
    os.environ["NUMBA_CACHE_DIR"] = cache_dir
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("NUMBA_CACHE_DIR", None)
        else:
            os.environ["NUMBA_CACHE_DIR"] = previous


class ProcessExecutor:
    """One worker process per island (ID-DGA's master/slave model), the islands joined in a ring
    of pipes: island i sends its best straight to island i + 1 after each epoch, and its report
    to the master, which only collects (see ``_ring_epochs``).

    Workers come from ``active_pool(start_method)`` (the process's warm ``shared_pool`` unless a
    ``worker_pool`` or ``fresh_workers`` block says otherwise); with no pool they are started for
    the run and stopped at ``close``. Fresh workers load the kernels the master compiled first
    (``warm_up_island``); their start-up time is remembered for ``choose_executor``.
    """

    parallel = True

    def __init__(self, problem: Problem, *, start_method: str = "spawn", pool: WorkerPool | None | object = _UNSET) -> None:
        self.problem = problem
        self.start_method = start_method
        self.ctx = mp.get_context(start_method)
        self.pool = active_pool(start_method) if pool is _UNSET else pool
        self.fresh = 0  # workers started for this run (not taken idle from a pool)
        self.workers: list[_Worker] = []
        self.running: list[bool] = []  # ``run`` sent and ``done`` not yet received, per island
        self.failed = False

    def _recv(self, i: int) -> tuple[str, Any]:
        w = self.workers[i]
        try:
            kind, payload = w.conn.recv()
        except (EOFError, OSError):
            raise RuntimeError(f"island {i}: worker process died (exit code {w.proc.exitcode})") from None
        if kind == "error":
            raise RuntimeError(f"island {i} failed in its worker process:\n{payload}")
        if kind == "done":
            self.running[i] = False
        return kind, payload

    def start(self, specs: list[IslandSpec]) -> None:
        n = len(specs)
        self.running = [False] * n
        ring: list[tuple[Any, Any]] = []
        try:
            self.fresh = n - min(self.pool.idle_count(), n) if self.pool is not None else n
            if self.fresh:  # compile (first run) or load the kernels here once, before the workers load them
                warm_up_island(self.problem, specs[0])
            t0 = time.perf_counter()
            self.workers = (self.pool.acquire(n) if self.pool is not None
                            else [_Worker(self.ctx, f"ppdp-island-{spec.index}") for spec in specs])
            # (reader, writer) of the pipe i -> i + 1; made after the workers exist, so that a
            # forked worker does not inherit (and keep open) the ends of the other islands' pipes.
            ring = [self.ctx.Pipe(duplex=False) for _ in range(n)] if n > 1 else []
            pspec = ProblemSpec.of(self.problem)
            for i, spec in enumerate(specs):
                pred, succ = (ring[i - 1][0], ring[i][1]) if n > 1 else (None, None)
                self.workers[i].conn.send(("setup", pspec, spec, pred, succ, n))
            for i in range(n):
                self._recv(i)
            if self.fresh:
                rounds = -(-self.fresh // _usable_cores())
                _WORKER_START_SECONDS[self.start_method] = (time.perf_counter() - t0) / rounds
        except BaseException:
            self.failed = True
            raise
        finally:
            for reader, writer in ring:  # the workers hold their own copies now
                reader.close()
                writer.close()

    def epochs(self, generations: int, lag: int = 0) -> Iterator[list[EpochReport]]:
        n = len(self.workers)
        index = {w.conn: i for i, w in enumerate(self.workers)}
        pending: list[deque[EpochReport]] = [deque() for _ in range(n)]
        try:
            for i, w in enumerate(self.workers):
                w.conn.send(("run", generations, lag))
                self.running[i] = True
            while True:
                live = [w.conn for i, w in enumerate(self.workers) if self.running[i]]
                if not live:
                    raise RuntimeError("the islands stopped before every island was exhausted")
                for conn in wait(live):
                    i = index[conn]
                    kind, payload = self._recv(i)
                    if kind == "ok":
                        pending[i].extend(_unpack_reports(payload))
                while all(pending):
                    yield [q.popleft() for q in pending]
        except GeneratorExit:
            raise
        except BaseException:
            self.failed = True
            raise

    def _finish_runs(self, timeout: float = 30.0) -> bool:
        """Stop the islands' loops (they may be a few cheap epochs past the master's last one)
        and read until each says ``done``. False when a worker does not answer or fails."""
        try:
            for i, w in enumerate(self.workers):
                if self.running[i]:
                    w.conn.send(("abort",))
            for i, w in enumerate(self.workers):
                while self.running[i]:
                    if not w.conn.poll(timeout):
                        return False
                    self._recv(i)
        except (RuntimeError, OSError, EOFError):
            return False
        return True

    def close(self) -> None:
        if not self.workers:
            return
        healthy = not self.failed and self._finish_runs()
        workers, self.workers = self.workers, []
        if self.pool is not None and healthy:
            self.pool.release(workers)
            return
        for w in workers:
            if healthy:
                w.stop()
            else:
                w.kill()


# ---------------------------------------------------------------------------------------
# Which executor runs the islands
# ---------------------------------------------------------------------------------------

# Figures of ``executor = "auto"``'s estimate. Priors from benchmarks/results/islands.json (2-core
# machine, spawn): starting fresh workers (spawn, imports, Numba kernels from the cache) took
# about 1.3 s per round of as many workers as cores; a warm worker's setup (the problem pickled
# and rebuilt) ~5 ms; the ring's messages ~0.3 ms per island and epoch; two islands ran their
# halves at most ~1.7 times as fast as one ran the whole ("split ceiling"), hence the efficiency.
AUTO_MARGIN = 1.5  # islands in processes only when estimated at least this many times faster
_WORKER_START_PRIOR = 1.3
_WARM_SETUP_SECONDS = 0.005
_COMM_SECONDS_PER_ISLAND_EPOCH = 0.0003
_SPLIT_EFFICIENCY = 0.85
_PROBE_SECONDS = 0.03  # how long the probe island runs (after its first, untimed epoch)
_PROBE_BUDGET_SHARE = 20  # and at most 1/20 of the budget
# Start method -> seconds for a round of fresh workers to get ready, measured in this process
# (``ProcessExecutor.start``, ``measure_worker_start``); the prior until then.
_WORKER_START_SECONDS: dict[str, float] = {}
# Run time over the probe's estimate of the last local runs chosen by "auto" in this process: the
# probe sees a run's first epochs only, which cost less per evaluation on the instances measured
# (a random population; later ones are finer and slower to evaluate, ~3x on 1,000 SPARCS
# records), so an estimate leans towards "local" until a run has corrected it.
_SERIAL_CORRECTION: deque[float] = deque(maxlen=5)


@dataclass(frozen=True)
class ExecutorChoice:
    """The executor a run uses, why, and the figures of the estimate (seconds; empty when the
    choice needed none)."""

    executor: str  # "local" or "process"
    why: str
    estimate: dict[str, float] = field(default_factory=dict)


def choose_executor(problem: Problem, specs: list[IslandSpec], config: dict[str, Any], budget: int) -> ExecutorChoice:
    """The executor of a run: the one requested, or for ``"auto"`` islands in processes only when
    the estimated run time with them beats this process alone by ``AUTO_MARGIN``.

    Estimate: the serial run = seconds per evaluation of a probe island (``_probe``: the run's
    own island code on the problem, another seed) times the budget; in processes = start-up
    (workers to start, by rounds of as many as cores, at the measured or prior cost; idle workers
    of the warm pool nearly free) + the serial run spread over min(islands, free cores) at the
    split efficiency + the ring's messages. A new executor (e.g. a distributed one) gets its
    branch here.
    """
    requested = config.get("executor", "auto")
    n = len(specs)
    if n == 1:
        return ExecutorChoice("local", "one island: nothing to run in parallel")
    if requested != "auto":
        return ExecutorChoice(requested, f"executor = {requested!r} requested")
    cores = _usable_cores()
    if cores < 2:
        return ExecutorChoice("local", f"{cores} usable core: islands in processes would share it")
    # Other load on the machine is left out: it slows both ways (and n processes get a larger
    # share of a busy machine than one), and the worker start-up it slows is measured.
    par = float(min(n, cores))
    probe = _probe(problem, specs[0], int(config["migration_interval"]), budget)
    if probe is None:
        return ExecutorChoice("local", f"budget {budget} too small to measure, let alone to split over {n} processes")
    per_eval, evals_per_epoch = probe
    correction = float(np.clip(np.median(_SERIAL_CORRECTION), 1 / 3, 3)) if _SERIAL_CORRECTION else 1.0
    serial = per_eval * budget * correction
    sm = config.get("start_method", "spawn")
    pool = active_pool(sm)
    fresh = n - (min(pool.idle_count(), n) if pool is not None else 0)
    start_round = _WORKER_START_SECONDS.get(sm)

    def estimate(start_round: float) -> dict[str, float]:
        startup = math.ceil(fresh / cores) * start_round + n * _WARM_SETUP_SECONDS
        epochs = budget / max(evals_per_epoch * n, 1.0)
        comm = epochs * n * _COMM_SECONDS_PER_ISLAND_EPOCH
        parallel = startup + serial / (par * _SPLIT_EFFICIENCY) + comm
        return {"seconds_per_evaluation": per_eval, "correction": correction, "serial_seconds": serial, "process_seconds": parallel,
                "startup_seconds": startup, "comm_seconds": comm, "cores_worth": par, "fresh_workers": fresh,
                "worker_start_seconds": start_round}

    est = estimate(start_round if start_round is not None else _WORKER_START_PRIOR)
    if fresh and start_round is None and serial >= AUTO_MARGIN * est["process_seconds"]:
        # The prior says processes pay: measure what starting a worker costs here before
        # committing (once per process; the worker waits in the pool for this run).
        start_round = measure_worker_start(problem, specs[0], sm)
        fresh = n - (min(pool.idle_count(), n) if pool is not None else 0)
        est = estimate(start_round)
    measured = "measured" if start_round is not None else "prior"
    corrected = f" x {correction:.2f} (past runs)" if correction != 1.0 else ""
    how = (f"serial {serial:.2f} s ({1e6 * per_eval:.1f} us/evaluation x {budget}{corrected}) vs {n} islands in processes "
           f"{est['process_seconds']:.2f} s ({est['startup_seconds']:.2f} s start-up of {fresh} new worker(s), "
           f"{measured}; {par:.1f} cores' worth)")
    if serial >= AUTO_MARGIN * est["process_seconds"]:
        return ExecutorChoice("process", f"auto: {how}: processes at least {AUTO_MARGIN}x faster", est)
    return ExecutorChoice("local", f"auto: {how}: processes not {AUTO_MARGIN}x faster", est)


def _probe(problem: Problem, spec: IslandSpec, mi: int, budget: int) -> tuple[float, float] | None:
    """(seconds per evaluation, evaluations per epoch) of an island like ``spec``'s, measured on
    a throwaway copy with another seed (the run's own draws are untouched): one untimed epoch
    (which loads or, on a first run, compiles the kernels this process needs anyway), then epochs
    for about ``_PROBE_SECONDS``, within 1/``_PROBE_BUDGET_SHARE`` of the budget. None when that
    leaves no timed epoch."""
    cap = max(budget // _PROBE_BUDGET_SHARE, 1)
    island = replace(spec, budget=min(spec.budget, cap), seed=np.random.SeedSequence(0x5EED)).build(problem)
    counted = problem.evaluations  # the probe's evaluations are not the run's
    try:
        island.warm_up()
        island.run(mi, None)
        epochs: list[tuple[float, int]] = []  # (seconds, evaluations) of each timed epoch
        t_end = time.perf_counter() + _PROBE_SECONDS
        while island.can_evolve() and time.perf_counter() < t_end:
            used, t0 = island.used, time.perf_counter()
            island.run(mi, None)
            if island.used > used:
                epochs.append((time.perf_counter() - t0, island.used - used))
    finally:
        problem.evaluations = counted
    if not epochs:
        return None
    # Time over evaluations (epochs differ a lot: the improvement step's evaluations), leaving
    # out an epoch 10 times slower than the median one: on a first run, an epoch that compiles a
    # kernel (a path the first epoch did not take) must not pass for the problem's cost.
    seconds = np.array([e[0] for e in epochs])
    evals = np.array([e[1] for e in epochs], dtype=np.float64)
    keep = seconds / evals <= 10 * np.median(seconds / evals)
    return float(seconds[keep].sum() / evals[keep].sum()), float(evals.mean())


def measure_worker_start(problem: Problem, spec: IslandSpec, start_method: str = "spawn") -> float:
    """Seconds a fresh worker takes to start and load ``spec``'s kernels (spawn, imports, Numba
    cache), remembered for this process. The worker then waits in ``active_pool``, if any."""
    warm_up_island(problem, spec)  # the cache holds the kernels before the worker looks
    pool = active_pool(start_method)
    t0 = time.perf_counter()
    w = _Worker(mp.get_context(start_method), "ppdp-island-start-probe")  # a new one, not an idle one
    healthy = False
    try:
        w.conn.send(("warm", ProblemSpec.of(problem), spec))
        kind, payload = w.conn.recv()
        if kind == "error":
            raise RuntimeError(f"island worker failed to start:\n{payload}")
        healthy = True
    finally:
        if pool is not None and healthy:
            pool.release([w])
        else:
            w.stop()
    seconds = time.perf_counter() - t0
    _WORKER_START_SECONDS[start_method] = seconds
    return seconds


# ---------------------------------------------------------------------------------------
# The master
# ---------------------------------------------------------------------------------------


def mig_ring(bests: list[Individual | None]) -> list[Individual | None]:
    """Ring topology (ID-DGA §4.1): island i receives the best of island i - 1."""
    n = len(bests)
    return [None] * n if n < 2 else [bests[(i - 1) % n] for i in range(n)]


def _merge(tracker: Tracker, r: EpochReport) -> None:
    """Feed one island's epoch into the master's Tracker.

    Only the island's own improvements can become the global best (the global best is at least
    as good as every island's), so the other rows are only counted: the history is exactly the
    one of offering every evaluation in order.
    """
    done = 0
    if r.improvements is not None:
        pos, G, R, ev = r.improvements
        feas, viol, td = ev.feasible.tolist(), ev.violation.tolist(), ev.td.tolist()
        for j, p in enumerate(pos.tolist()):
            # offer() would keep only a row that beats the global best: skip the others here
            # (counted with the rest), which spares the master most of the work at the end of a run.
            if tracker.best_key is not None and fitness_key(feas[j], viol[j], td[j]) <= tracker.best_key:
                continue
            tracker.count(p - done)
            tracker.offer(G[j : j + 1], R[j : j + 1], ev.row(j))
            done = p + 1
    tracker.count(r.evaluated - done)


def run_islands(problem: Problem, factory: type[Island], config: dict[str, Any], *, name: str, budget: int,
                seed: int, progress: ProgressFn | None = None) -> OptimizerResult:
    """Run ``factory`` islands under Algorithm 1 of ID-DGA and return the master's result.

    ``config`` holds the parsed parameters (``pop_size``, ``islands``, ``migration_interval``,
    ``executor``, ``start_method`` and the algorithm's own). Timing in ``info`` (ID-DGA Table 5):
    ``run_seconds`` (everything), ``startup_seconds`` (starting the workers, building the
    problem and islands, loading the kernels), ``shutdown_seconds`` (stopping or returning the
    workers), ``algorithm_seconds`` = run - start-up - shut-down (the paper's RT),
    ``comm_seconds`` (CT) and ``comm_ratio`` = CT / algorithm_seconds (CR). With worker
    processes CT is the islands phase's wall time minus the compute time of the busiest island
    (messages, waiting for the ring predecessor, the master's bookkeeping on the islands' path);
    in one process it is the epochs' wall time minus the islands' compute (about 0).
    """
    t_start = time.perf_counter()
    n = int(config["islands"])
    budget = int(budget)
    if budget < n:
        raise SpecError(f"{name}: budget {budget} is smaller than the number of islands {n}. Hint: islands = 1.")
    pops = split(int(config["pop_size"]), n)
    if min(pops) < factory.MIN_POP:
        raise SpecError(f"{name}: {config['pop_size']} individuals over {n} islands leaves {min(pops)} per island; "
                        f"{factory.__name__} needs at least {factory.MIN_POP}. Hint: fewer islands or a larger pop_size.")
    seeds = np.random.SeedSequence(seed).spawn(n)
    specs = [IslandSpec(factory, dict(config), b, s, i, p)
             for i, (b, s, p) in enumerate(zip(split(budget, n), seeds, pops, strict=True))]
    choice = choose_executor(problem, specs, config, budget)
    choice_seconds = time.perf_counter() - t_start
    use_processes = choice.executor == "process"
    executor: IslandExecutor = (ProcessExecutor(problem, start_method=config.get("start_method", "spawn"))
                                if use_processes else LocalExecutor(problem))
    if n > 1 and config.get("executor") == "ray":  # islands as Ray actors (ray_executor.py)
        from ppdp.engine.optimizers.ray_executor import RayExecutor
        executor = RayExecutor(problem, address=config.get("ray_address") or None)
    pooled = use_processes and executor.pool is not None
    tracker = Tracker(problem, budget, name=name, progress=progress)
    mi = int(config["migration_interval"]) if n > 1 else max(int(config["migration_interval"]), 50)
    serial_comm = 0.0
    compute = [0.0] * n
    epochs = 0
    snapshots: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    last_div: list[tuple[int, np.ndarray, np.ndarray] | None] = [None] * n
    reports: list[EpochReport] = []
    startup = shutdown = 0.0
    t_ready = t_end = t_start
    try:
        executor.start(specs)
        t_ready = time.perf_counter()
        startup = t_ready - t_start
        stream = executor.epochs(mi, int(config.get("migration_lag", 0)))
        try:
            while True:
                t0 = time.perf_counter()
                reports = next(stream)
                t_end = time.perf_counter()
                epochs += 1
                for r in reports:
                    compute[r.index] += r.compute_seconds
                if not executor.parallel:
                    serial_comm += max(t_end - t0 - sum(r.compute_seconds for r in reports), 0.0)
                for r in reports:
                    _merge(tracker, r)
                _merge_diversity(reports, last_div, snapshots)
                if all(r.exhausted for r in reports):
                    break
                if not any(r.evaluated for r in reports):
                    raise RuntimeError(f"{name}: no island could evaluate anything although budget remains")
        finally:
            stream.close()
        div = diversity(snapshots)
    finally:
        t_close = time.perf_counter()
        executor.close()
        shutdown = time.perf_counter() - t_close
    run_seconds = time.perf_counter() - t_start
    if choice.executor == "local" and choice.estimate.get("serial_seconds"):
        # What the estimate would have needed to be right (uncorrected), for the next runs.
        est = choice.estimate
        _SERIAL_CORRECTION.append((t_end - t_ready) / (est["serial_seconds"] / est["correction"]))
    algorithm = max(run_seconds - startup - shutdown, 0.0)
    comm = max(t_end - t_ready - max(compute), 0.0) if executor.parallel else serial_comm
    info: dict[str, Any] = {
        "islands": n,
        "executor": getattr(executor, "name", choice.executor),
        "executor_why": choice.why,  # the request, or the estimate of executor = "auto"
        "executor_estimate": choice.estimate,
        "executor_choice_seconds": choice_seconds,  # part of startup_seconds (the probe of "auto")
        "fresh_workers": getattr(executor, "fresh", 0),
        "worker_pool": pooled,
        "migration_interval": int(config["migration_interval"]),
        "migration_lag": int(config.get("migration_lag", 0)),
        "pop_sizes": pops,
        "epochs": epochs,
        "run_seconds": run_seconds,  # everything, start-up and shut-down included
        "startup_seconds": startup,
        "shutdown_seconds": shutdown,
        "algorithm_seconds": algorithm,  # RT of ID-DGA Table 5
        "islands_seconds": t_end - t_ready,  # from the first epoch to the last report the master needed
        "compute_seconds_per_island": compute,
        "comm_seconds": comm,  # CT
        "comm_ratio": comm / algorithm if algorithm > 0 else 0.0,  # CR = CT / RT
        "evaluations_per_island": [r.used for r in reports],
        "generations_per_island": [r.generations for r in reports],
        "diversity": div,
        "params": {k: v for k, v in config.items()},
    }
    extras = [r.extras for r in reports if r.extras]
    if extras:
        info["island_extras"] = extras
    return tracker.result(info=info)


def _merge_diversity(reports: list[EpochReport], last: list, out: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> None:
    """The whole population (all islands) after each generation of the epoch, for the diversity
    of HAEF Fig. 9, as a block (evaluations (d,), G of every island (d, P, nQ), sum of pairwise
    Hamming distances of S (d,)). The evaluation count is the total over islands at that
    generation; an island without a snapshot at that generation contributes its latest one. The
    G distances wait for ``diversity``."""
    divs = [r.diversity for r in reports]
    steps = max((len(d[0]) for d in divs if d is not None), default=0)
    if steps and all(d is not None and len(d[0]) == steps for d in divs):  # the usual case, at once
        used = np.sum([d[0] for d in divs], axis=0)
        G = np.concatenate([d[1] for d in divs], axis=1)
        ones = np.sum([d[2] for d in divs], axis=0, dtype=np.int64)
        out.append((used, G, (ones * (G.shape[1] - ones)).sum(1).astype(np.float64)))
    else:
        for j in range(steps):
            cur = []
            for i, d in enumerate(divs):
                if d is not None:
                    k = min(j, len(d[0]) - 1)
                    cur.append((int(d[0][k]), d[1][k], d[2][k]))
                elif last[i] is not None:
                    cur.append(last[i])
            if not cur:
                continue
            G = np.concatenate([c[1] for c in cur])
            ones = np.sum([c[2] for c in cur], axis=0, dtype=np.int64)
            out.append((np.array([sum(c[0] for c in cur)]), G[None],
                        np.array([diversity_s_from_counts(ones, G.shape[0])])))
    for i, d in enumerate(divs):
        if d is not None:
            last[i] = (int(d[0][-1]), d[1][-1], d[2][-1])


def diversity(blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> list[tuple[int, float, float]]:
    """(evaluations, sum of pairwise Euclidean distances of G, sum of pairwise Hamming distances
    of S) of each snapshot (HAEF Fig. 9). The G part is computed once at the end of a run, in
    batches of populations of the same size (``diversity_g_many``: the numbers of ``diversity_g``)."""
    if not blocks:
        return []
    used = np.concatenate([b[0] for b in blocks])
    s_div = np.concatenate([b[2] for b in blocks])
    g_div = np.zeros(len(used))
    by_size: dict[tuple[int, ...], list[int]] = {}
    for k, b in enumerate(blocks):
        by_size.setdefault(b[1].shape[1:], []).append(k)
    starts = np.cumsum([0] + [len(b[0]) for b in blocks])
    for ks in by_size.values():
        rows = np.concatenate([np.arange(starts[k], starts[k + 1]) for k in ks])
        g_div[rows] = diversity_g_many(np.concatenate([blocks[k][1] for k in ks]))
    return [(int(u), float(g), float(sd)) for u, g, sd in zip(used.tolist(), g_div.tolist(), s_div.tolist(), strict=True)]
