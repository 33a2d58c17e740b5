"""Ray for the optimizers: the cluster, host actors and their pool, and
lattice node batches evaluated on Ray workers.

Optional dependency: ``pip install ppdp[ray]``. ``connect(address)`` joins the cluster at
``address`` (``"ray://..."`` or ``"host:port"``), else the one ``RAY_ADDRESS`` names or one
already running on this machine (``ray start --head``), else starts a local cluster that lives
as long as this process. Nothing here starts a cluster when the driver already called
``ray.init``. The workers import ``engine`` as installed on their node (a local cluster's
workers see the driver's working directory first, as the driver does).

* Host actors (``_Host``), started on demand or kept by ``ray_actor_pool()``, each hosting one
  island or one lattice node evaluator at a time. Islands as Ray actors are
  ``RayExecutor`` (engine/methods/generalization/optimizers/evolutionary/executors/ray.py), built on these.
* ``RayNodeEvaluator`` / ``evaluate_batches``: batches of lattice nodes evaluated (S*(G), then
  the evaluation of (G, S*(G)), cut to nothing suppressed beyond the suppression limit) by
  actors holding the histogram from the object store. The same numbers as the in-process
  lattice search, so the search stays certified (``lattice_search(executor="ray")``).

Both run on host actors (one worker process each) that load the Numba kernels once: a few
seconds per actor on a small machine. Within ``ray_actor_pool()`` they are kept for the next
run (islands and lattice workers alike), as an ``IslandRuntime``'s pool keeps worker processes.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ppdp.engine.methods.generalization.evaluators import Evaluation
from ppdp.engine.methods.generalization.optimizers.lattice_nodes import evaluate_nodes
from ppdp.engine.methods.generalization.optimizers.remote import ProblemSpec, warm_up, writable
from ppdp.engine.methods.generalization.problem import Problem
from ppdp.errors import SpecError

if TYPE_CHECKING:  # the islands' module builds on this one (evolutionary/executors/ray.py)
    from ppdp.engine.methods.generalization.optimizers.evolutionary.island import (
        EpochReport,
        Individual,
        Island,
        IslandSpec,
    )


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


def actor_error(ray: Any, err: Exception, what: str) -> RuntimeError:
    """``err`` of a Ray call as a RuntimeError that names ``what`` failed and the cause."""
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

    def run(self, generations: int, migrant: Individual | None) -> tuple[EpochReport, Individual | None]:
        """One epoch: (the report without its best, for the master; the best, for the ring)."""
        if self.island is None:
            raise RuntimeError("Ray host: an epoch before setup_island")
        if migrant is not None:  # its arrays arrive read-only (remote.writable)
            migrant = replace(migrant, g=writable(migrant.g), s=writable(migrant.s), ad=writable(migrant.ad))
        report = self.island.run(generations, migrant)
        best, report.best = report.best, None
        return report, best

    def setup_nodes(self, pspec: ProblemSpec) -> int:
        self.island = None
        self.problem = pspec.build()
        warm_up(self.problem)
        return os.getpid()

    def evaluate(self, G: np.ndarray, max_suppressed: int) -> tuple[np.ndarray, Evaluation]:
        if self.problem is None:
            raise RuntimeError("Ray host: nodes to evaluate before setup_nodes")
        return evaluate_nodes(self.problem, writable(G), max_suppressed)


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


def acquire_hosts(ray: Any, n: int) -> tuple[list[Any], RayActorPool | None]:
    """``n`` host actors from the active ``ray_actor_pool`` (else new ones), and that pool."""
    pool = _POOL[-1] if _POOL else None
    return (pool.acquire(ray, n) if pool is not None else _new_hosts(ray, n)), pool


def give_back(ray: Any, hosts: list[Any], pool: RayActorPool | None, healthy: bool) -> None:
    """Hosts back to the pool, else stopped (an actor also stops when its last handle goes)."""
    if pool is not None and healthy and pool in _POOL:
        pool.release(hosts)
    elif ray.is_initialized():
        for h in hosts:
            ray.kill(h)


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
        self.actors, pool = acquire_hosts(ray, n)
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
            raise actor_error(self.ray, err, what) from None

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
    give_back(ray, hosts, pool, health[0])


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
