"""The master of Algorithm 1 (ID-DGA §4.1): ``run_islands``.

The whole population is divided into ``islands`` sub-populations that evolve independently.
Every ``migration_interval`` (MI) generations each island sends its best individual to the next
island on a ring; the receiver replaces a random individual that is not its own best
(docs/design/paper_notes.md §4). One island is the ordinary single-population algorithm.

The master builds the islands' specs, has ``choose_executor`` pick the executor, runs the
epochs, and merges the islands' reports into one ``Tracker`` (island by island within each
epoch, so the best-so-far history is per evaluation). It records run time, start-up,
communication time and evaluations per island (ID-DGA Table 5) and the diversity of the whole
population per generation (HAEF §6.1.4, Fig. 9); the pairwise G distances of the diversity are
computed once, at the end.

The budget is split over the islands (the first ``budget % islands`` get one more); so is the
population (``pop_size`` is the whole population, ID-DGA §5.2: N = 40 over NSP = 4 islands).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ppdp.engine.methods.generalization.optimizers import OptimizerResult, ProgressFn, Tracker
from ppdp.engine.methods.generalization.optimizers.evolutionary.auto import choose_executor
from ppdp.engine.methods.generalization.optimizers.evolutionary.executors import IslandExecutor
from ppdp.engine.methods.generalization.optimizers.evolutionary.executors.local import LocalExecutor
from ppdp.engine.methods.generalization.optimizers.evolutionary.executors.process import (
    ProcessExecutor,
)
from ppdp.engine.methods.generalization.optimizers.evolutionary.executors.ray import RayExecutor
from ppdp.engine.methods.generalization.optimizers.evolutionary.island import (
    EpochReport,
    Island,
    IslandSpec,
)
from ppdp.engine.methods.generalization.optimizers.evolutionary.params import split
from ppdp.engine.methods.generalization.optimizers.evolutionary.runtime import (
    IslandRuntime,
    current_runtime,
)
from ppdp.engine.methods.generalization.optimizers.operators import (
    diversity_g_many,
    diversity_s_from_counts,
)
from ppdp.engine.methods.generalization.problem import Problem, fitness_key
from ppdp.errors import SpecError


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
                seed: int, progress: ProgressFn | None = None, runtime: IslandRuntime | None = None) -> OptimizerResult:
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

    ``runtime`` (default: the current ``IslandRuntime``) gives worker processes their pool and
    ``executor = "auto"`` the measurements of earlier runs; this run's go into it.
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
    runtime = current_runtime() if runtime is None else runtime
    choice = choose_executor(problem, specs, config, budget, runtime)
    choice_seconds = time.perf_counter() - t_start
    process: ProcessExecutor | None = None
    executor: IslandExecutor
    if choice.executor == "process":
        executor = process = ProcessExecutor(problem, start_method=config.get("start_method", "spawn"), runtime=runtime)
    elif n > 1 and config.get("executor") == "ray":  # islands as Ray actors
        executor = RayExecutor(problem, address=config.get("ray_address") or None)
    else:
        executor = LocalExecutor(problem)
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
        runtime.measurements.serial_correction.append((t_end - t_ready) / (est["serial_seconds"] / est["correction"]))
    algorithm = max(run_seconds - startup - shutdown, 0.0)
    comm = max(t_end - t_ready - max(compute), 0.0) if executor.parallel else serial_comm
    info: dict[str, Any] = {
        "islands": n,
        "executor": executor.name,
        "executor_why": choice.why,  # the request, or the estimate of executor = "auto"
        "executor_estimate": choice.estimate,
        "executor_choice_seconds": choice_seconds,  # part of startup_seconds (the probe of "auto")
        "fresh_workers": process.fresh if process is not None else 0,
        "worker_pool": process is not None and process.pool is not None,
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


def _merge_diversity(reports: list[EpochReport], last: list[tuple[int, np.ndarray, np.ndarray] | None],
                     out: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> None:
    """The whole population (all islands) after each generation of the epoch, for the diversity
    of HAEF Fig. 9, as a block (evaluations (d,), G of every island (d, P, nQ), sum of pairwise
    Hamming distances of S (d,)). The evaluation count is the total over islands at that
    generation; an island without a snapshot at that generation contributes its latest one. The
    G distances wait for ``diversity``."""
    divs = [r.diversity for r in reports]
    have = [d for d in divs if d is not None]
    steps = max((len(d[0]) for d in have), default=0)
    if steps and len(have) == len(divs) and all(len(d[0]) == steps for d in have):  # the usual case, at once
        used = np.sum([d[0] for d in have], axis=0)
        G = np.concatenate([d[1] for d in have], axis=1)
        ones = np.sum([d[2] for d in have], axis=0, dtype=np.int64)
        out.append((used, G, (ones * (G.shape[1] - ones)).sum(1).astype(np.float64)))
    else:
        for j in range(steps):
            cur: list[tuple[int, np.ndarray, np.ndarray]] = []
            for i, d in enumerate(divs):
                if d is not None:
                    k = min(j, len(d[0]) - 1)
                    cur.append((int(d[0][k]), d[1][k], d[2][k]))
                elif (previous := last[i]) is not None:
                    cur.append(previous)
            if not cur:
                continue
            G = np.concatenate([c[1] for c in cur])
            ones = np.asarray(np.sum([c[2] for c in cur], axis=0, dtype=np.int64))
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
