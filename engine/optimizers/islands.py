"""Island model shared by every population-based optimizer (ID-DGA §4.1, Algorithm 1).

The whole population is divided into ``islands`` sub-populations that evolve independently.
Every ``migration_interval`` (MI) generations each island sends its best individual to the next
island on a ring; the receiver replaces a random individual that is not its own best
(PAPER_NOTES §4). One island is the ordinary single-population algorithm.

Pieces:

* ``Island``: one sub-population and its budgeted evaluation. An algorithm subclasses it and
  writes ``generation()`` (one generation of GA, DE, ID-DGA, HAEF ...).
* Executors run the islands behind a three-method interface (``start``, ``step``, ``close``):
  ``LocalExecutor`` in this process, one after the other; ``ProcessExecutor`` one process per
  island with a pipe each (``multiprocessing``, spawn context by default: Polars warns when a
  process that started threads forks, so the workers are fresh interpreters that rebuild the
  Problem from NumPy arrays). A distributed engine would be one more executor. Processes and
  pipes live in this module only (STYLE.md).
* ``run_islands``: the master of Algorithm 1. It steps every island MI generations, merges the
  islands' evaluations into one ``Tracker`` (island by island within each epoch, so the
  best-so-far history is per evaluation), performs the ring migration, records run time,
  communication time and evaluations per island (ID-DGA Table 5) and the population diversity
  of the whole population per generation (HAEF §6.1.4, Fig. 9).

Reproducibility: island i draws from ``np.random.SeedSequence(seed).spawn(islands)[i]`` only,
so a seed gives the same result with either executor and any scheduling.

The budget is split over the islands (the first ``budget % islands`` get one more); so is the
population (``pop_size`` is the whole population, ID-DGA §5.2: N = 40 over NSP = 4 islands).
"""

from __future__ import annotations

import multiprocessing as mp
import time
import traceback
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Protocol

import numpy as np

from engine.errors import SpecError
from engine.evaluator import Evaluation
from engine.optimizers import OptimizerResult, ProgressFn, Tracker
from engine.optimizers.operators import diversity_g, diversity_s_from_counts, sel_two_dimension
from engine.problem import Problem, fitness_key

# ---------------------------------------------------------------------------------------
# Parameters
# ---------------------------------------------------------------------------------------

# Options every population-based optimizer takes (ours, not the papers', except islands/MI).
COMMON_DEFAULTS: dict[str, Any] = {
    "islands": 1,  # NSP; 4 for id-dga (ID-DGA §5.2)
    "migration_interval": 5,  # MI (ID-DGA §5.2)
    "executor": "process",  # "process" (one process per island) or "local" (same results, serial)
    "start_method": "spawn",  # multiprocessing start method of the worker processes
    "oracle": False,  # memetic repair S := S*(G) on every evaluated solution (PAPER_NOTES §3)
    "diversity_every": 1,  # record the population diversity every n generations (0 = never)
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
    if out.get("diversity_every", 0) < 0:
        raise SpecError(f"{name} optimizer: diversity_every must be >= 0 (0 = off).")
    for key in ("mr", "cr", "cr_ga", "mr_ga", "cr_de"):
        if key in out and not 0.0 <= out[key] <= 1.0:
            raise SpecError(f"{name} optimizer: {key} must be in [0, 1], got {out[key]}.")
    if "f" in out and not 0.0 < out["f"] <= 2.0:
        raise SpecError(f"{name} optimizer: F must be in (0, 2] (HAEF §4.3.2), got {out['f']}.")
    if out.get("executor") not in (None, "process", "local"):
        raise SpecError(f"{name} optimizer: executor must be 'process' or 'local', not {out['executor']!r}.")
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
    """What an island sends to the master after ``step``."""

    index: int
    evaluation: Evaluation | None  # every evaluation of the epoch, in order
    improvements: list[tuple[int, np.ndarray, np.ndarray]]  # (position, g, retained) of new local bests
    best: Individual | None
    diversity: list[tuple[int, np.ndarray, np.ndarray]]  # (island evaluations, G population, S ones per record)
    pop_size: int
    used: int
    generations: int
    exhausted: bool
    compute_seconds: float
    extras: dict[str, Any] = field(default_factory=dict)


class Island:
    """A sub-population (G: (P, nQ) levels, S: (P, nR) keep flags) with its fitness arrays.

    Subclasses set ``MIN_POP`` and write ``generation()``. ``evaluate`` is the only way to
    spend budget: it evaluates at most the remaining budget (a batch may be cut short), logs
    every evaluation for the master, and applies the oracle repair when ``oracle`` is on.
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
            S = np.stack([self.problem.s_from_retained(r) for r in retained])
        else:
            retained = self.problem.retained_from_s(S)
            ev = self.problem.evaluate(G, retained=retained)
        for i in range(m):
            key = fitness_key(bool(ev.feasible[i]), float(ev.violation[i]), float(ev.td[i]))
            if self._log_best is None or key > self._log_best:
                self._log_best = key
                self._improvements.append((self._logged + i, G[i].copy(), np.asarray(retained[i]).copy()))
        self._logged += m
        self._evals.append(ev)
        self.used += m
        return ev, S

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
        return bool(sel_two_dimension(ev.feasible[j], ev.violation[j], ev.td[j], self.feas[i], self.viol[i], self.td[i]))

    def worse_of(self, a: int, b: int) -> int:
        """The worse of two individuals (b on a tie)."""
        return a if sel_two_dimension(self.feas[b], self.viol[b], self.td[b], self.feas[a], self.viol[a], self.td[a]) else b

    def best_index(self) -> int:
        """Index of the best individual (the first one on a tie)."""
        sec = np.where(self.feas, self.td, -self.viol)
        top = self.feas.max()
        cand = np.flatnonzero(self.feas == top)
        return int(cand[np.argmax(sec[cand])])

    def individual(self, i: int) -> Individual:
        return Individual(self.G[i].copy(), self.S[i].copy(), bool(self.feas[i]), float(self.viol[i]),
                          float(self.td[i]), self.ad[i].copy(), int(self.sup[i]))

    def receive(self, migrant: Individual) -> None:
        """Migration (ID-DGA §4.7): the migrant replaces a random individual that is not the best."""
        if self.size < 2:
            return
        best = self.best_index()
        others = np.delete(np.arange(self.size), best)
        i = int(others[self.rng.integers(len(others))])
        self.G[i], self.S[i] = migrant.g, migrant.s
        self.feas[i], self.viol[i], self.td[i] = migrant.feasible, migrant.violation, migrant.td
        self.ad[i], self.sup[i] = migrant.ad, migrant.suppressed

    # -- the algorithm ----------------------------------------------------------------
    def generation(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def can_evolve(self) -> bool:
        return self.size >= self.MIN_POP and not self.exhausted

    # -- one epoch ----------------------------------------------------------------------
    def _reset_epoch(self) -> None:
        self._evals: list[Evaluation] = []
        self._improvements: list[tuple[int, np.ndarray, np.ndarray]] = []
        self._diversity: list[tuple[int, np.ndarray, np.ndarray]] = []
        self._logged = 0

    def _record_diversity(self) -> None:
        if self.diversity_every and self.generations % self.diversity_every == 0 and self.size:
            self._diversity.append((self.used, self.G.copy(), self.S.sum(0).astype(np.int32)))

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
        done = 0
        while done < generations and self.can_evolve():
            before = self.used
            self.generation()
            self.generations += 1
            done += 1
            self._record_diversity()
            if self.used == before and not self.exhausted:
                raise RuntimeError(f"{type(self).__name__}: a generation evaluated nothing")
        ev = Evaluation.concat(self._evals) if self._evals else None
        return EpochReport(
            index=self.index, evaluation=ev, improvements=self._improvements,
            best=self.individual(self.best_index()) if self.size else None,
            diversity=self._diversity, pop_size=self.size, used=self.used, generations=self.generations,
            exhausted=not self.can_evolve(), compute_seconds=time.perf_counter() - t0, extras=dict(self.extras),
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
    """Runs the islands. ``parallel`` says whether islands' compute overlaps in time."""

    parallel: bool

    def start(self, specs: list[IslandSpec]) -> None: ...
    def step(self, generations: int, migrants: list[Individual | None]) -> list[EpochReport]: ...
    def close(self) -> None: ...


class LocalExecutor:
    """All islands in this process, one after the other."""

    parallel = False

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.islands: list[Island] = []

    def start(self, specs: list[IslandSpec]) -> None:
        self.islands = [spec.build(self.problem) for spec in specs]

    def step(self, generations: int, migrants: list[Individual | None]) -> list[EpochReport]:
        return [isl.run(generations, m) for isl, m in zip(self.islands, migrants, strict=True)]

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


def _worker(conn: Any, pspec: ProblemSpec, spec: IslandSpec) -> None:
    """Worker process: build the problem and the island, then serve ``step`` requests."""
    try:
        island = spec.build(pspec.build())
        conn.send(("ready", None))
        while True:
            msg = conn.recv()
            if msg is None:
                break
            generations, migrant = msg
            conn.send(("ok", island.run(generations, migrant)))
    except (EOFError, KeyboardInterrupt):
        pass
    except BaseException:  # noqa: BLE001 - report everything to the master
        try:
            conn.send(("error", traceback.format_exc()))
        except (OSError, EOFError):
            pass
    finally:
        conn.close()


class ProcessExecutor:
    """One worker process per island, each with its own pipe (ID-DGA's master/slave model)."""

    parallel = True

    def __init__(self, problem: Problem, *, start_method: str = "spawn") -> None:
        self.problem = problem
        self.ctx = mp.get_context(start_method)
        self.procs: list[Any] = []
        self.conns: list[Any] = []

    def _recv(self, conn: Any, i: int) -> Any:
        try:
            kind, payload = conn.recv()
        except EOFError:
            raise RuntimeError(f"island {i}: worker process died (exit code {self.procs[i].exitcode})") from None
        if kind == "error":
            raise RuntimeError(f"island {i} failed in its worker process:\n{payload}")
        return payload

    def start(self, specs: list[IslandSpec]) -> None:
        pspec = ProblemSpec.of(self.problem)
        for spec in specs:
            parent, child = self.ctx.Pipe()
            proc = self.ctx.Process(target=_worker, args=(child, pspec, spec), daemon=True,
                                    name=f"ppdp-island-{spec.index}")
            proc.start()
            child.close()
            self.procs.append(proc)
            self.conns.append(parent)
        for i, conn in enumerate(self.conns):
            self._recv(conn, i)

    def step(self, generations: int, migrants: list[Individual | None]) -> list[EpochReport]:
        for conn, m in zip(self.conns, migrants, strict=True):
            conn.send((generations, m))
        return [self._recv(conn, i) for i, conn in enumerate(self.conns)]

    def close(self) -> None:
        for conn in self.conns:
            try:
                conn.send(None)
            except (OSError, BrokenPipeError):
                pass
        for proc in self.procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=5)
        for conn in self.conns:
            conn.close()
        self.procs, self.conns = [], []


# ---------------------------------------------------------------------------------------
# The master
# ---------------------------------------------------------------------------------------


def mig_ring(bests: list[Individual | None]) -> list[Individual | None]:
    """Ring topology (ID-DGA §4.1): island i receives the best of island i - 1."""
    n = len(bests)
    return [None] * n if n < 2 else [bests[(i - 1) % n] for i in range(n)]


class _Merger:
    """Feeds the islands' evaluations into the master's Tracker.

    Only the island's own improvements can become the global best (the global best is at least
    as good as every island's), so islands send (g, retained) for those only; the rows in
    between are offered with the island's current best as a payload that is never stored.
    """

    def __init__(self, tracker: Tracker, n: int) -> None:
        self.tracker = tracker
        self.payload: list[tuple[np.ndarray, np.ndarray] | None] = [None] * n

    def add(self, r: EpochReport) -> None:
        ev = r.evaluation
        if ev is None:
            return
        cuts = [(pos, g, ret) for pos, g, ret in r.improvements]
        bounds = [pos for pos, _, _ in cuts] + [len(ev)]
        start = 0
        payload = self.payload[r.index]
        for k in range(len(cuts) + 1):
            stop = bounds[k]
            if stop > start:
                g, ret = payload
                m = stop - start
                sl = slice(start, stop)
                self.tracker.offer(np.broadcast_to(g, (m, len(g))), np.broadcast_to(ret, (m, len(ret))),
                                   Evaluation(ev.ad[sl], ev.td[sl], ev.feasible[sl], ev.violation[sl], ev.suppressed[sl]))
            if k < len(cuts):
                payload = (cuts[k][1], cuts[k][2])
                start = stop
        self.payload[r.index] = payload


def run_islands(problem: Problem, factory: type[Island], config: dict[str, Any], *, name: str, budget: int,
                seed: int, progress: ProgressFn | None = None) -> OptimizerResult:
    """Run ``factory`` islands under Algorithm 1 of ID-DGA and return the master's result.

    ``config`` holds the parsed parameters (``pop_size``, ``islands``, ``migration_interval``,
    ``executor``, ``start_method`` and the algorithm's own).
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
    use_processes = n > 1 and config.get("executor", "process") == "process"
    executor: IslandExecutor = (ProcessExecutor(problem, start_method=config.get("start_method", "spawn"))
                                if use_processes else LocalExecutor(problem))
    tracker = Tracker(problem, budget, name=name, progress=progress)
    merger = _Merger(tracker, n)
    mi = int(config["migration_interval"]) if n > 1 else max(int(config["migration_interval"]), 50)
    comm = 0.0
    epochs = 0
    diversity: list[tuple[int, float, float]] = []
    last_div: list[tuple[int, np.ndarray, np.ndarray] | None] = [None] * n
    reports: list[EpochReport] = []
    try:
        executor.start(specs)
        startup = time.perf_counter() - t_start
        migrants: list[Individual | None] = [None] * n
        while True:
            t0 = time.perf_counter()
            reports = executor.step(mi, migrants)
            wall = time.perf_counter() - t0
            compute = [r.compute_seconds for r in reports]
            comm += max(wall - (max(compute) if executor.parallel else sum(compute)), 0.0)
            epochs += 1
            for r in reports:
                merger.add(r)
            _merge_diversity(reports, last_div, diversity)
            if all(r.exhausted for r in reports):
                break
            if not any(r.evaluation is not None for r in reports):
                raise RuntimeError(f"{name}: no island could evaluate anything although budget remains")
            migrants = mig_ring([r.best for r in reports]) if n > 1 else [None] * n
    finally:
        executor.close()
    run_seconds = time.perf_counter() - t_start
    info: dict[str, Any] = {
        "islands": n,
        "executor": "process" if use_processes else "local",
        "migration_interval": int(config["migration_interval"]),
        "pop_sizes": pops,
        "epochs": epochs,
        "run_seconds": run_seconds,  # RT (ID-DGA Table 5), includes starting the workers
        "startup_seconds": startup,
        "comm_seconds": comm,  # CT: master's wall time per epoch minus the islands' compute
        "comm_ratio": comm / run_seconds if run_seconds > 0 else 0.0,  # CR = CT / RT
        "evaluations_per_island": [r.used for r in reports],
        "generations_per_island": [r.generations for r in reports],
        "diversity": diversity,
        "params": {k: v for k, v in config.items()},
    }
    extras = [r.extras for r in reports if r.extras]
    if extras:
        info["island_extras"] = extras
    return tracker.result(info=info)


def _merge_diversity(reports: list[EpochReport], last: list, out: list[tuple[int, float, float]]) -> None:
    """Diversity of the whole population (all islands) after each generation of the epoch:
    sum of pairwise Euclidean distances of G and of Hamming distances of S (HAEF Fig. 9).
    The evaluation count is the total over islands at that generation."""
    steps = max((len(r.diversity) for r in reports), default=0)
    for j in range(steps):
        cur = []
        for i, r in enumerate(reports):
            if r.diversity:
                cur.append(r.diversity[min(j, len(r.diversity) - 1)])
            elif last[i] is not None:
                cur.append(last[i])
        if not cur:
            continue
        G = np.concatenate([c[1] for c in cur])
        ones = np.sum([c[2] for c in cur], axis=0)
        used = sum(c[0] for c in cur)
        out.append((int(used), diversity_g(G), diversity_s_from_counts(ones, G.shape[0])))
    for i, r in enumerate(reports):
        if r.diversity:
            last[i] = r.diversity[-1]
