"""Ray executors (issue #17 item 2): islands as Ray actors, lattice node batches on Ray workers.

Optional dependency: ``pip install ppdp[ray]``. ``connect(address)`` joins the cluster at
``address`` (``"ray://..."`` or ``"host:port"``), else the one ``RAY_ADDRESS`` names or one
already running on this machine (``ray start --head``), else starts a local cluster that lives
as long as this process. Nothing here starts a cluster when the driver already called
``ray.init``. The workers import ``engine`` as installed on their node (a local cluster's
workers see the driver's working directory first, as the driver does).

* ``RayExecutor``: the ``IslandExecutor`` of ``islands.py`` with one actor per island. The
  Problem travels once, as a ``ProblemSpec`` (encoded arrays, models, backend) put in the
  object store; each actor builds its Problem and island from it and loads the Numba kernels
  before reporting ready (start-up, apart from the run). Epoch e of island i is an actor call
  whose migrant argument is the object ref of island i - 1's best after epoch e - 1 - lag: Ray
  hands the best from actor to actor (the master never reads it) and runs an actor's calls in
  the order they were submitted, so the islands receive exactly the migrants of
  ``LocalExecutor``'s lock step, whatever the scheduling: a seed gives the same result as
  "local" and "process". The master submits up to ``window`` epochs ahead of the reports it
  has read, so an island waits only for its predecessor's best, as with the ring of pipes.
* ``RayNodeEvaluator`` / ``evaluate_batches``: batches of lattice nodes evaluated (S*(G), then
  the evaluation of (G, S*(G)), cut to nothing suppressed beyond the suppression limit) by
  actors holding the histogram from the object store. The same numbers as the in-process
  lattice search, so the search stays certified (``lattice_search(executor="ray")``).

Both run on host actors (one worker process each) that load the Numba kernels once: a few
seconds per actor on a small machine. Within ``ray_actor_pool()`` they are kept for the next
run (islands and lattice workers alike), as ``islands.worker_pool`` keeps worker processes.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from ppdp.engine.errors import SpecError
from ppdp.engine.evaluator import Evaluation
from ppdp.engine.optimizers.islands import Individual, Island, IslandSpec, ProblemSpec, warm_up
from ppdp.engine.optimizers.lattice import evaluate_nodes
from ppdp.engine.problem import Problem

# Epochs the master submits ahead of the reports it has read. Every submitted epoch runs (an
# island past the master's last epoch only receives migrants), so a few suffice to keep the
# actors busy without wasting much at the end of a run.
WINDOW_EPOCHS = 8


def require_ray() -> Any:
    """The ``ray`` module, or SpecError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise SpecError('executor = "ray" needs Ray, which is not installed. Hint: pip install \'ppdp[ray]\' '
                        '(or executor = "process").') from None
    return ray


def connect(address: str | None = None) -> Any:
    """Join (or start) a Ray cluster unless this process already did; returns ``ray``."""
    ray = require_ray()
    if not ray.is_initialized():
        # address=None: RAY_ADDRESS, else a cluster running on this machine, else a new local one.
        ray.init(address=address or None, include_dashboard=False, log_to_driver=False)
    return ray


def _actor_error(ray: Any, err: Exception, what: str) -> RuntimeError:
    cause = err.cause if isinstance(err, ray.exceptions.RayTaskError) and err.cause is not None else err
    return RuntimeError(f"{what} failed on Ray: {type(cause).__name__}: {cause}")


class _Host:
    """A Ray actor (a worker process) that hosts one island or one lattice node evaluator at a
    time, each with its own Problem built from the ``ProblemSpec`` in the object store. Made a
    Ray actor class on first use, so that importing this module does not need Ray."""

    def __init__(self) -> None:
        self.island: Island | None = None
        self.problem: Problem | None = None

    def setup_island(self, pspec: ProblemSpec, spec: IslandSpec) -> int:
        """A fresh Problem and island, kernels loaded (start-up, not the run); returns the pid."""
        self.problem = pspec.build()
        warm_up(self.problem)
        self.island = spec.build(self.problem)
        self.island.warm_up()
        return os.getpid()

    def run(self, generations: int, migrant: Individual | None) -> tuple[Any, Individual | None]:
        """One epoch: (the report without its best, for the master; the best, for the ring)."""
        report = self.island.run(generations, migrant)
        best, report.best = report.best, None
        return report, best

    def setup_nodes(self, pspec: ProblemSpec) -> int:
        self.island = None
        self.problem = pspec.build()
        warm_up(self.problem)
        return os.getpid()

    def evaluate(self, G: np.ndarray, max_suppressed: int) -> tuple[np.ndarray, Evaluation]:
        return evaluate_nodes(self.problem, G, max_suppressed)


_REMOTE_HOST: list[Any] = []


def _new_hosts(ray: Any, k: int) -> list[Any]:
    """``k`` new host actors, asking for a core each when the cluster has that many free, else
    an equal share of what is free (none when nothing is): actors that asked for more cores than
    the cluster has free would wait forever, and a run needs all of its actors at once."""
    if not _REMOTE_HOST:
        _REMOTE_HOST.append(ray.remote(_Host))
    free = float(ray.available_resources().get("CPU", 0.0))
    share = min(1.0, free / max(k, 1))
    cpus = share if share >= 0.01 else 0
    return [_REMOTE_HOST[0].options(num_cpus=cpus).remote() for _ in range(k)]


class RayActorPool:
    """Host actors kept alive across runs (see ``ray_actor_pool``)."""

    def __init__(self) -> None:
        self.idle: list[Any] = []
        self.started = 0

    def acquire(self, ray: Any, n: int) -> list[Any]:
        out, self.idle = self.idle[:n], self.idle[n:]
        missing = n - len(out)
        if missing:
            out += _new_hosts(ray, missing)
            self.started += missing
        return out

    def release(self, hosts: list[Any]) -> None:
        self.idle.extend(hosts)

    def close(self, ray: Any) -> None:
        for h in self.idle:
            ray.kill(h)
        self.idle = []


_POOL: list[RayActorPool] = []  # the active pool, if any (innermost last)


@contextmanager
def ray_actor_pool() -> Iterator[RayActorPool]:
    """Within the ``with`` block, ``RayExecutor`` and ``RayNodeEvaluator`` reuse long-lived Ray
    actors instead of starting a worker process per island or per node worker for every run
    (seconds each). Results do not change; only the start-up does. The actors are stopped at
    the end of the block."""
    pool = RayActorPool()
    _POOL.append(pool)
    try:
        yield pool
    finally:
        _POOL.remove(pool)
        ray = require_ray()
        if ray.is_initialized():
            pool.close(ray)


def _acquire(ray: Any, n: int) -> tuple[list[Any], RayActorPool | None]:
    pool = _POOL[-1] if _POOL else None
    return (pool.acquire(ray, n) if pool is not None else _new_hosts(ray, n)), pool


def _give_back(ray: Any, hosts: list[Any], pool: RayActorPool | None, healthy: bool) -> None:
    """Hosts back to the pool, else stopped (an actor also stops when its last handle goes)."""
    if pool is not None and healthy and pool in _POOL:
        pool.release(hosts)
    elif ray.is_initialized():
        for h in hosts:
            ray.kill(h)


class RayExecutor:
    """One Ray actor per island; see the module docstring. The cluster outlives the run (a local
    one lives as long as this process); the actors go back to the active ``ray_actor_pool`` at
    ``close``, else are stopped."""

    name = "ray"
    parallel = True
    pool = None  # not islands.worker_pool (that one holds processes); see ray_actor_pool

    def __init__(self, problem: Problem, *, address: str | None = None, window: int = WINDOW_EPOCHS) -> None:
        self.problem = problem
        self.ray = connect(address)
        self.window = max(int(window), 1)
        self.actors: list[Any] = []
        self.pids: list[int] = []
        self.failed = False
        self._pool: RayActorPool | None = None

    def start(self, specs: list[IslandSpec]) -> None:
        ray = self.ray
        self.actors, self._pool = _acquire(ray, len(specs))
        problem_ref = ray.put(ProblemSpec.of(self.problem))  # once, shared by every actor
        try:
            self.pids = ray.get([a.setup_island.remote(problem_ref, spec)
                                 for a, spec in zip(self.actors, specs, strict=True)])
        except ray.exceptions.RayError as err:
            self.failed = True
            raise _actor_error(ray, err, "starting the islands") from None

    def epochs(self, generations: int, lag: int = 0) -> Iterator[list[Any]]:
        ray = self.ray
        n = len(self.actors)
        reports: list[list[Any]] = []  # object refs per submitted epoch, per island
        bests: list[list[Any]] = []

        def submit() -> None:
            e = len(reports)
            # Epoch e receives the bests of epoch e - 1 - lag (LocalExecutor's lock step): island
            # i that of island i - 1, handed over by Ray from actor to actor.
            source = e - 1 - lag
            migrants = ([bests[source][(i - 1) % n] for i in range(n)] if n > 1 and source >= 0 else [None] * n)
            # Two returns: the report goes to the master, the best to the next island only.
            refs = [a.run.options(num_returns=2).remote(generations, m)
                    for a, m in zip(self.actors, migrants, strict=True)]
            reports.append([r for r, _ in refs])
            bests.append([b for _, b in refs])
            if source >= 0:
                bests[source] = []  # no later epoch needs them: let Ray free them

        read = 0
        while True:
            while len(reports) < read + self.window:
                submit()
            try:
                out = ray.get(reports[read])
            except ray.exceptions.RayError as err:
                self.failed = True
                raise _actor_error(ray, err, f"an island (epoch {read + 1})") from None
            reports[read] = []
            read += 1
            yield out

    def close(self) -> None:
        # A pooled actor may still run the epochs submitted ahead: its next setup waits for them
        # (an actor runs its calls in order), and their results are dropped.
        actors, self.actors = self.actors, []
        _give_back(self.ray, actors, self._pool, not self.failed)


class RayNodeEvaluator:
    """Lattice nodes evaluated on ``workers`` Ray actors (default: one per CPU of the cluster)
    holding the histogram from the object store. Called with a batch G it splits G over the
    actors and returns what ``evaluate_nodes(problem, G, max_suppressed)`` returns, in order;
    it counts the evaluations on ``problem`` as in-process evaluation does. The actors go back
    to the active ``ray_actor_pool`` (else stop) at ``close`` or when the evaluator is dropped."""

    def __init__(self, problem: Problem, max_suppressed: int, *, workers: int | None = None,
                 address: str | None = None) -> None:
        ray = self.ray = connect(address)
        self.problem = problem
        self.max_suppressed = int(max_suppressed)
        n = int(workers) if workers else max(int(ray.cluster_resources().get("CPU", 1)), 1)
        self.actors, pool = _acquire(ray, n)
        self._health = [True]  # read by the finalizer
        self._finalizer = weakref.finalize(self, _give_back_later, ray, list(self.actors), pool, self._health)
        self._finalizer.atexit = False  # at exit Ray stops every actor itself
        problem_ref = ray.put(ProblemSpec.of(problem))  # once, shared by every actor
        self._get([a.setup_nodes.remote(problem_ref) for a in self.actors], "starting the lattice workers")

    def _get(self, refs: list[Any], what: str) -> list[Any]:
        try:
            return self.ray.get(refs)
        except self.ray.exceptions.RayError as err:
            self._health[0] = False
            raise _actor_error(self.ray, err, what) from None

    def evaluate_batches(self, batches: Sequence[np.ndarray]) -> list[tuple[np.ndarray, Evaluation]]:
        """(retained, evaluation) of each batch of nodes, the batches spread over the actors."""
        refs = [self.actors[j % len(self.actors)].evaluate.remote(np.asarray(G, dtype=np.int64), self.max_suppressed)
                for j, G in enumerate(batches)]
        out = self._get(refs, "a batch of lattice nodes")
        self.problem.evaluations += sum(len(G) for G in batches)
        return out

    def __call__(self, G: np.ndarray) -> tuple[np.ndarray, Evaluation]:
        parts = [p for p in np.array_split(np.asarray(G, dtype=np.int64), len(self.actors)) if len(p)]
        out = self.evaluate_batches(parts)
        return np.concatenate([r for r, _ in out]), Evaluation.concat([ev for _, ev in out])

    def close(self) -> None:
        self.actors = []
        self._finalizer()

    def __enter__(self) -> RayNodeEvaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _give_back_later(ray: Any, hosts: list[Any], pool: RayActorPool | None, health: list[bool]) -> None:
    _give_back(ray, hosts, pool, health[0])


def evaluate_batches(problem: Problem, batches: Sequence[np.ndarray], *, max_suppressed: int | None = None,
                     address: str | None = None) -> list[tuple[np.ndarray, Evaluation]]:
    """(retained, evaluation) of (G, S*(G)) for each batch of lattice nodes, evaluated on Ray
    workers (one per batch, up to the cluster's CPUs) that hold the histogram from the object
    store. ``max_suppressed``: the suppression limit in records (None = no limit). A search
    that evaluates many batches keeps a ``RayNodeEvaluator`` instead (its workers stay up)."""
    limit = problem.n_records if max_suppressed is None else int(max_suppressed)
    ray = connect(address)
    workers = max(min(len(batches), int(ray.cluster_resources().get("CPU", 1))), 1)
    with RayNodeEvaluator(problem, limit, workers=workers) as evaluator:
        return evaluator.evaluate_batches(batches)
