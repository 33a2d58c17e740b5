"""One sub-population of the island model (ID-DGA §4.1): ``Island``, what it sends after an
epoch (``EpochReport``), its migrant (``Individual``) and how to build it elsewhere (``IslandSpec``).

An algorithm subclasses ``Island`` and writes ``generation()`` (one generation of GA, DE,
ID-DGA, HAEF ...). ``evaluate`` is the only way to spend budget. Island i draws from
``np.random.SeedSequence(seed).spawn(islands)[i]`` only, so a seed gives the same result with
every executor and any scheduling.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ppdp.engine.methods.generalization.evaluators import Evaluation
from ppdp.engine.methods.generalization.optimizers.operators import sel_two_dimension
from ppdp.engine.methods.generalization.optimizers.remote import warm_up
from ppdp.engine.methods.generalization.problem import Problem, fitness_key


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
        """Fraction of the island's evaluation budget spent (g / gamma of HAEF, docs/design/paper_notes.md §5)."""
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
        rows: list[int]
        if best_rows is None:
            feas, viol, td = ev.feasible.tolist(), ev.violation.tolist(), ev.td.tolist()
            rows = []
            for i in range(m):
                key = fitness_key(feas[i], viol[i], td[i])
                if self._log_best is None or key > self._log_best:
                    self._log_best = key
                    rows.append(i)
        else:
            rows = best_rows.tolist()
            if rows:
                i = rows[-1]
                self._log_best = fitness_key(bool(ev.feasible[i]), float(ev.violation[i]), float(ev.td[i]))
        for i in rows:
            self._improvements.append((self._logged + i, G[i].copy(), np.array(retained[i]), ev.row(i)))
        self._logged += m
        self.used += m

    # -- population -------------------------------------------------------------------
    @property
    def size(self) -> int:
        return int(self.G.shape[0])

    def initialize(self) -> None:
        """Random population (HAEF eq. 7-8, docs/design/paper_notes.md §4): G uniform in [0, height], S uniform
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


def warm_up_island(problem: Problem, spec: IslandSpec) -> None:
    """Everything a worker loads before reporting ready for ``spec``'s island (``warm_up`` and the
    island's own kernels). The master calls it before starting fresh workers, so that on a first
    run it compiles the kernels once into Numba's on-disk cache and the workers only load them,
    instead of every worker compiling the same kernels at once."""
    warm_up(problem, oracle=bool(spec.config.get("oracle", False)))
    spec.build(problem).warm_up()
