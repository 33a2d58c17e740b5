"""Which executor runs a run's islands: ``choose_executor``.

``executor = "auto"`` (the default) runs a throwaway probe island for a few tens of
milliseconds, multiplies its cost per evaluation by the budget, and takes worker processes only
when that serial estimate is ``AUTO_MARGIN`` (1.5) times the estimate with processes (worker
start-up, measured once per runtime, the compute spread over the cores, the ring's messages).
On the ID-DGA instances a whole run lasts tens of milliseconds and a worker a second to start
(benchmarks/results/islands.md): processes rarely pay there. The choice and its figures go
into the run's ``info``. What earlier runs measured (worker start-up, how far the estimates
were off) is in the run's ``IslandRuntime`` (runtime.py).
"""

from __future__ import annotations

import math
import multiprocessing as mp
import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ppdp.engine.methods.generalization.optimizers.evolutionary.executors.pool import WorkerProcess
from ppdp.engine.methods.generalization.optimizers.evolutionary.executors.worker import usable_cores
from ppdp.engine.methods.generalization.optimizers.evolutionary.island import (
    IslandSpec,
    warm_up_island,
)
from ppdp.engine.methods.generalization.optimizers.evolutionary.runtime import (
    IslandRuntime,
    current_runtime,
)
from ppdp.engine.methods.generalization.optimizers.remote import ProblemSpec
from ppdp.engine.methods.generalization.problem import Problem

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
# The runtime's measurements replace the prior of a worker's start-up once a run has started
# workers, and correct the serial estimate by the run time over the estimate of the last local
# runs chosen by "auto" (``Measurements.serial_correction``): the probe sees a run's first epochs
# only, which cost less per evaluation on the instances measured (a random population; later
# ones are finer and slower to evaluate, ~3x on 1,000 SPARCS records), so an estimate leans
# towards "local" until a run has corrected it.


@dataclass(frozen=True)
class ExecutorChoice:
    """The executor a run uses, why, and the figures of the estimate (seconds; empty when the
    choice needed none)."""

    executor: str  # "local", "process", or "ray" when requested
    why: str
    estimate: dict[str, float] = field(default_factory=dict)


def choose_executor(problem: Problem, specs: list[IslandSpec], config: dict[str, Any], budget: int,
                    runtime: IslandRuntime | None = None) -> ExecutorChoice:
    """The executor of a run: the one requested, or for ``"auto"`` islands in processes only when
    the estimated run time with them beats this process alone by ``AUTO_MARGIN``.

    Estimate: the serial run = seconds per evaluation of a probe island (``_probe``: the run's
    own island code on the problem, another seed) times the budget; in processes = start-up
    (workers to start, by rounds of as many as cores, at the measured or prior cost; idle workers
    of the warm pool nearly free) + the serial run spread over min(islands, free cores) at the
    split efficiency + the ring's messages. ``runtime`` (default: the current one) has the warm
    pool and the measurements of earlier runs. A new executor (e.g. a distributed one) gets its
    branch here.
    """
    requested = config.get("executor", "auto")
    n = len(specs)
    if n == 1:
        return ExecutorChoice("local", "one island: nothing to run in parallel")
    if requested != "auto":
        return ExecutorChoice(requested, f"executor = {requested!r} requested")
    cores = usable_cores()
    if cores < 2:
        return ExecutorChoice("local", f"{cores} usable core: islands in processes would share it")
    # Other load on the machine is left out: it slows both ways (and n processes get a larger
    # share of a busy machine than one), and the worker start-up it slows is measured.
    par = float(min(n, cores))
    probe = _probe(problem, specs[0], int(config["migration_interval"]), budget)
    if probe is None:
        return ExecutorChoice("local", f"budget {budget} too small to measure, let alone to split over {n} processes")
    per_eval, evals_per_epoch = probe
    runtime = current_runtime() if runtime is None else runtime
    past = runtime.measurements.serial_correction
    correction = float(np.clip(np.median(past), 1 / 3, 3)) if past else 1.0
    serial = per_eval * budget * correction
    sm = config.get("start_method", "spawn")
    pool = runtime.pool(sm)
    fresh = n - (min(pool.idle_count(), n) if pool is not None else 0)
    start_round = runtime.measurements.worker_start_seconds.get(sm)

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
        # committing (once per runtime; the worker waits in the pool for this run).
        start_round = measure_worker_start(problem, specs[0], sm, runtime)
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


def measure_worker_start(problem: Problem, spec: IslandSpec, start_method: str = "spawn",
                         runtime: IslandRuntime | None = None) -> float:
    """Seconds a fresh worker takes to start and load ``spec``'s kernels (spawn, imports, Numba
    cache), remembered in ``runtime``'s measurements (default: the current runtime). The worker
    then waits in the runtime's pool, if it has one."""
    runtime = current_runtime() if runtime is None else runtime
    warm_up_island(problem, spec)  # the cache holds the kernels before the worker looks
    pool = runtime.pool(start_method)
    t0 = time.perf_counter()
    w = WorkerProcess(mp.get_context(start_method), "ppdp-island-start-probe")  # a new one, not an idle one
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
    runtime.measurements.worker_start_seconds[start_method] = seconds
    return seconds
