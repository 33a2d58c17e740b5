"""executor = "auto" (the default of every island optimizer), the warm worker pool of an
``IslandRuntime`` (the process's default one or a block's own) and the Numba cache the workers
share with the master."""

from __future__ import annotations

import multiprocessing as mp
import os

import numpy as np
import pytest

import ppdp.engine.methods.generalization.optimizers.evolutionary.auto as auto_mod
import ppdp.engine.methods.generalization.optimizers.evolutionary.executors.process as process_mod
from ppdp.engine.methods.generalization.optimizers import run_optimizer
from ppdp.engine.methods.generalization.optimizers.evolutionary.auto import (
    AUTO_MARGIN,
    choose_executor,
    measure_worker_start,
)
from ppdp.engine.methods.generalization.optimizers.evolutionary.executors.pool import WorkerProcess
from ppdp.engine.methods.generalization.optimizers.evolutionary.executors.process import (
    ProcessExecutor,
)
from ppdp.engine.methods.generalization.optimizers.evolutionary.island import IslandSpec
from ppdp.engine.methods.generalization.optimizers.evolutionary.params import parse_params, split
from ppdp.engine.methods.generalization.optimizers.evolutionary.runtime import (
    IslandRuntime,
    Measurements,
    current_runtime,
    default_runtime,
)
from ppdp.engine.methods.generalization.optimizers.id_dga import ID_DGA_DEFAULTS, IDDGAIsland
from ppdp.engine.methods.generalization.problem import Problem
from tests.search.test_evolutionary import QIDS_K, adult_problem, same_run


@pytest.fixture(scope="module")
def k_problem() -> Problem:
    return adult_problem(300, QIDS_K, "k-anonymity", {"k": 2})


def specs_for(config: dict, budget: int, seed: int = 1) -> list[IslandSpec]:
    n = config["islands"]
    seeds = np.random.SeedSequence(seed).spawn(n)
    return [IslandSpec(IDDGAIsland, dict(config), b, s, i, p) for i, (b, s, p) in
            enumerate(zip(split(budget, n), seeds, split(config["pop_size"], n), strict=True))]


def test_auto_is_the_default_and_runs_a_tiny_problem_locally_saying_why(k_problem: Problem):
    # 300 records, 1,200 evaluations: a whole run is tens of milliseconds, one worker process
    # alone needs about a second to start (spawn, imports, kernels), so islands in processes
    # cannot pay whatever this machine is.
    assert ID_DGA_DEFAULTS["executor"] == "auto"
    res = run_optimizer("id-dga", k_problem, budget=1200, seed=3)
    info = res.info
    assert info["executor"] == "local" and info["params"]["executor"] == "auto"
    assert info["fresh_workers"] == 0 and info["islands"] == 4
    est = info["executor_estimate"]
    if est:  # (a one-core machine answers without an estimate)
        assert info["executor_why"].startswith("auto: serial")
        assert est["serial_seconds"] < AUTO_MARGIN * est["process_seconds"]
        assert 0 < est["seconds_per_evaluation"] < 0.01
    else:
        assert "core" in info["executor_why"] or "too small" in info["executor_why"]
    assert 0 <= info["executor_choice_seconds"] <= info["startup_seconds"]


def test_a_local_auto_run_corrects_the_next_estimate(k_problem: Problem, monkeypatch):
    """The probe sees a run's first epochs only; the run's own time over the estimate scales the
    next estimates of the runtime (within [1/3, 3])."""
    monkeypatch.setattr(auto_mod, "usable_cores", lambda: 2)
    with IslandRuntime() as runtime:  # no past runs
        first = run_optimizer("id-dga", k_problem, budget=4000, seed=3).info
        assert first["executor"] == "local" and first["executor_estimate"]["correction"] == 1.0
        (ratio,) = runtime.measurements.serial_correction
        assert ratio == pytest.approx(first["islands_seconds"] / first["executor_estimate"]["serial_seconds"])
        second = run_optimizer("id-dga", k_problem, budget=4000, seed=3).info
    assert second["executor_estimate"]["correction"] == pytest.approx(min(max(ratio, 1 / 3), 3))


def test_requested_executor_and_one_island_need_no_estimate(k_problem: Problem):
    for params, executor, why in (({"executor": "local"}, "local", "executor = 'local' requested"),
                                  ({"islands": 1}, "local", "one island: nothing to run in parallel")):
        config = parse_params("id-dga", params, ID_DGA_DEFAULTS)
        choice = choose_executor(k_problem, specs_for(config, 1000), config, 1000)
        assert (choice.executor, choice.why, choice.estimate) == (executor, why, {})


def test_auto_picks_processes_only_when_the_estimate_pays_by_the_margin(k_problem: Problem, monkeypatch):
    """The decision on given figures: 4 islands on 4 cores, 2 s to start a round of workers."""
    config = parse_params("id-dga", {}, ID_DGA_DEFAULTS)
    specs = specs_for(config, 100_000)
    monkeypatch.setattr(auto_mod, "usable_cores", lambda: 4)
    # No idle workers (all 4 start), 2 s measured for a round of them, no past runs.
    runtime = IslandRuntime(pooled=False, measurements=Measurements(worker_start_seconds={"spawn": 2.0}))
    # 1 ms per evaluation: 100 s alone vs about 2 + 100 / (4 * 0.85) + 0.1 = 31.5 s in processes.
    monkeypatch.setattr(auto_mod, "_probe", lambda *a: (1e-3, 50.0))
    slow = choose_executor(k_problem, specs, config, 100_000, runtime)
    # 10 us per evaluation: 1 s alone, more than 2 s in processes.
    monkeypatch.setattr(auto_mod, "_probe", lambda *a: (1e-5, 50.0))
    fast = choose_executor(k_problem, specs, config, 100_000, runtime)
    assert slow.executor == "process" and "1.5x faster" in slow.why and "measured" in slow.why
    assert slow.estimate["serial_seconds"] == pytest.approx(100.0)
    assert slow.estimate["startup_seconds"] == pytest.approx(2.0 + 4 * auto_mod._WARM_SETUP_SECONDS)
    assert slow.estimate["serial_seconds"] >= AUTO_MARGIN * slow.estimate["process_seconds"]
    assert fast.executor == "local" and "not 1.5x faster" in fast.why


def test_auto_measures_the_worker_start_before_committing_to_processes(k_problem: Problem, monkeypatch):
    """With only the prior, a promising estimate is checked by starting one worker (once per
    process): a machine where workers start slowly keeps the run local."""
    config = parse_params("id-dga", {}, ID_DGA_DEFAULTS)
    measured: list[str] = []

    def measure(problem, spec, start_method="spawn", runtime=None):
        measured.append(start_method)
        runtime.measurements.worker_start_seconds[start_method] = 60.0
        return 60.0

    monkeypatch.setattr(auto_mod, "usable_cores", lambda: 4)
    monkeypatch.setattr(auto_mod, "_probe", lambda *a: (1e-3, 50.0))
    monkeypatch.setattr(auto_mod, "measure_worker_start", measure)
    with IslandRuntime(pooled=False):  # nothing measured yet, the current runtime of the block
        first = choose_executor(k_problem, specs_for(config, 100_000), config, 100_000)
        second = choose_executor(k_problem, specs_for(config, 100_000), config, 100_000)
    assert measured == ["spawn"]  # once, then remembered
    assert first.executor == second.executor == "local"
    assert first.estimate["worker_start_seconds"] == 60.0


def test_same_seed_same_result_with_auto_local_and_process_and_the_pool_is_reused(k_problem: Problem):
    params = {"islands": 2, "diversity_every": 1}
    auto = run_optimizer("id-dga", k_problem, budget=1500, seed=11, params=params)
    local = run_optimizer("id-dga", k_problem, budget=1500, seed=11, params={**params, "executor": "local"})
    pool = default_runtime().pool()
    proc = run_optimizer("id-dga", k_problem, budget=1500, seed=11, params={**params, "executor": "process"})
    started = pool.started
    again = run_optimizer("id-dga", k_problem, budget=1500, seed=11, params={**params, "executor": "process"})
    assert auto.info["executor"] == "local" and proc.info["executor"] == again.info["executor"] == "process"
    assert same_run(auto, local) and same_run(proc, local) and same_run(again, local)
    # The second run in processes takes the first one's workers from the default runtime's warm pool.
    assert proc.info["worker_pool"] and again.info["fresh_workers"] == 0 and pool.started == started
    assert len(pool.idle) >= 2 and all(w.proc.is_alive() for w in pool.idle)


def test_master_loads_the_kernels_before_starting_fresh_workers(k_problem: Problem, monkeypatch):
    """Fresh workers must find the kernels in Numba's cache: the master compiles (first run) or
    loads them before it starts any worker. Before, every worker compiled them at once on a
    first run (133 s instead of 3.5 s)."""
    events: list[str] = []
    real_warm = process_mod.warm_up_island

    def warm(problem, spec):
        events.append(f"master warm-up in {os.getpid()}")
        real_warm(problem, spec)

    class Worker(WorkerProcess):
        def __init__(self, *a, **kw):
            events.append("worker started")
            super().__init__(*a, **kw)

    monkeypatch.setattr(process_mod, "warm_up_island", warm)
    monkeypatch.setattr(process_mod, "WorkerProcess", Worker)
    config = parse_params("id-dga", {"islands": 2, "executor": "process"}, ID_DGA_DEFAULTS)
    runtime = IslandRuntime(pooled=False)
    ex = ProcessExecutor(k_problem, runtime=runtime)
    try:
        ex.start(specs_for(config, 600))
    finally:
        ex.failed = True  # not run: stop the workers
        ex.close()
    assert events == [f"master warm-up in {os.getpid()}", "worker started", "worker started"]
    assert ex.fresh == 2 and runtime.measurements.worker_start_seconds["spawn"] > 0


def report_numba_cache_dir(conn) -> None:
    """A worker's target for the test below: what Numba and the environment say in the worker."""
    from numba.core import config as numba_config

    conn.send((numba_config.CACHE_DIR, os.environ.get("NUMBA_CACHE_DIR")))
    conn.close()


def test_workers_get_the_numba_cache_dir_of_this_process_without_touching_its_environment(monkeypatch, tmp_path):
    """A directory set here in ``numba.config`` only (not in the environment) reaches a spawned
    worker before it imports Numba; this process's environment stays as it was, throughout."""
    from numba.core import config as numba_config

    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(numba_config, "CACHE_DIR", str(tmp_path))
    environ = dict(os.environ)
    w = WorkerProcess(mp.get_context("spawn"), "ppdp-test-cache-dir",
                      target=f"{__name__}:{report_numba_cache_dir.__name__}")
    try:
        assert dict(os.environ) == environ
        assert w.conn.poll(60)
        assert w.conn.recv() == (str(tmp_path), str(tmp_path))
    finally:
        w.kill()
    assert dict(os.environ) == environ


def test_a_runtime_without_pool_bypasses_the_pool_and_executor_names_are_checked(k_problem: Problem):
    with IslandRuntime(pooled=False) as runtime:
        assert current_runtime() is runtime
        assert ProcessExecutor(k_problem).pool is None
    assert current_runtime() is default_runtime()
    assert ProcessExecutor(k_problem).pool is default_runtime().pool()
    with pytest.raises(Exception, match="executor must be one of 'auto', 'local', 'process'"):
        parse_params("id-dga", {"executor": "threads"}, ID_DGA_DEFAULTS)


def test_measure_worker_start_starts_a_new_worker_and_leaves_it_warm_in_the_pool(k_problem: Problem):
    config = parse_params("id-dga", {"islands": 2}, ID_DGA_DEFAULTS)
    specs = specs_for(config, 600)
    with IslandRuntime() as runtime:
        pool = runtime.pool()
        seconds = measure_worker_start(k_problem, specs[0])
        again = measure_worker_start(k_problem, specs[0])  # a new worker again, not the idle one
        assert seconds > 0 and again > 0 and runtime.measurements.worker_start_seconds == {"spawn": again}
        assert len(pool.idle) == 2 and all(w.proc.is_alive() for w in pool.idle)
        # A run then takes the measured workers: none to start.
        res = run_optimizer("id-dga", k_problem, budget=600, seed=1, params={"islands": 2, "executor": "process"})
        assert res.info["fresh_workers"] == 0 and pool.started == 0
    # Closing the runtime stopped its workers.
    assert not pool.idle and pool.closed
    with pytest.raises(RuntimeError, match="closed"):
        runtime.pool()
