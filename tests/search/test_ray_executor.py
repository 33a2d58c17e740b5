"""Ray executors on a local one-node Ray cluster that this module starts and
stops: islands as Ray actors give the run of in-process islands for a seed, and the lattice
search with its node batches on Ray workers is certified with the in-process optimum.

Skipped when Ray is not installed, unless PPDP_REQUIRE_RAY=1 (CI installs ppdp[ray])."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

try:
    import ray
except ImportError:
    if os.environ.get("PPDP_REQUIRE_RAY", "") not in ("", "0"):
        pytest.fail("Ray is not installed (PPDP_REQUIRE_RAY=1). Hint: pip install 'ppdp[ray]'", pytrace=False)
    pytest.skip("Ray is not installed (pip install 'ppdp[ray]'); PPDP_REQUIRE_RAY=1 makes this an error",
                allow_module_level=True)

from ppdp.engine.methods.generalization.optimizers import run_optimizer
from ppdp.engine.methods.generalization.optimizers.evolutionary.executors.local import LocalExecutor
from ppdp.engine.methods.generalization.optimizers.evolutionary.executors.ray import RayExecutor
from ppdp.engine.methods.generalization.optimizers.evolutionary.island import IslandSpec
from ppdp.engine.methods.generalization.optimizers.evolutionary.master import run_islands
from ppdp.engine.methods.generalization.optimizers.evolutionary.params import parse_params
from ppdp.engine.methods.generalization.optimizers.id_dga import ID_DGA_DEFAULTS, IDDGAIsland
from ppdp.engine.methods.generalization.optimizers.lattice_nodes import (
    evaluate_nodes,
    max_suppressed_records,
)
from ppdp.engine.methods.generalization.optimizers.ray_executor import (
    evaluate_batches,
    ray_actor_pool,
)
from ppdp.engine.methods.generalization.problem import Problem
from ppdp.errors import SpecError
from tests.search.test_evolutionary import QIDS_K, FailingIsland, adult_problem, same_run

pytestmark = pytest.mark.slow  # a local Ray cluster for the module



@pytest.fixture(scope="module")
def ray_cluster():
    if ray.is_initialized():  # pragma: no cover - a cluster this module did not start
        pytest.skip("Ray is already initialized in this process")
    # A one-node cluster of this machine (Ray publishes it on the machine's own address even when
    # asked for 127.0.0.1), stopped by ray.shutdown().
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    assert len(ray.nodes()) == 1
    try:
        with ray_actor_pool() as pool:  # actors started once for the module (seconds each)
            yield pool
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def k_problem() -> Problem:
    return adult_problem(300, QIDS_K, "k-anonymity", {"k": 2})


def test_islands_as_ray_actors_match_local_islands(ray_cluster, k_problem: Problem):
    # Three islands on a 2-CPU cluster (so the actors share cores and run out of lock step), a
    # short migration interval (many migrations) and the diversity of every generation: the
    # whole run, history and diversity included, is the one of in-process islands.
    base = {"islands": 3, "migration_interval": 2, "diversity_every": 1}
    for seed in (1, 2, 3):
        on_ray = run_optimizer("id-dga", k_problem, budget=900, seed=seed, params={**base, "executor": "ray"})
        local = run_optimizer("id-dga", k_problem, budget=900, seed=seed, params={**base, "executor": "local"})
        assert on_ray.info["executor"] == "ray" and local.info["executor"] == "local"
        assert same_run(on_ray, local), seed
        assert on_ray.info["evaluations_per_island"] == [300, 300, 300] and on_ray.evaluations == 900
        assert on_ray.info["epochs"] == local.info["epochs"] >= 3
    # A lagged ring reads older migrants: still the local run, and not the synchronous one.
    lagged = {**base, "migration_lag": 1}
    on_ray = run_optimizer("haef", k_problem, budget=900, seed=4, params={**lagged, "executor": "ray"})
    local = run_optimizer("haef", k_problem, budget=900, seed=4, params={**lagged, "executor": "local"})
    sync = run_optimizer("haef", k_problem, budget=900, seed=4, params={**base, "executor": "local"})
    assert same_run(on_ray, local)
    assert not same_run(local, sync)
    assert ray_cluster.started == 3 and len(ray_cluster.idle) == 3  # the pool's actors served every run


def test_ray_executor_runs_islands_in_other_processes(ray_cluster, k_problem: Problem):
    seeds = np.random.SeedSequence(7).spawn(2)
    config = {**ID_DGA_DEFAULTS, "islands": 2}
    specs = [IslandSpec(IDDGAIsland, config, 100, s, i, 10) for i, s in enumerate(seeds)]
    ex, loc = RayExecutor(k_problem), LocalExecutor(k_problem)
    try:
        ex.start(specs)
        loc.start(specs)
        assert len(set(ex.pids)) == 2 and os.getpid() not in ex.pids
        for _, (a, b) in zip(range(4), zip(ex.epochs(3), loc.epochs(3), strict=False), strict=False):
            assert [r.used for r in a] == [r.used for r in b]
            assert all(r.best is None for r in a)  # the bests went from actor to actor, not here
            assert [r.improvements is None for r in a] == [r.improvements is None for r in b]
    finally:
        ex.close()
        loc.close()
    assert ex.actors == []


def test_failed_and_stopped_runs_on_ray(ray_cluster, k_problem: Problem):
    pool = ray_cluster
    config = parse_params("failing", {"islands": 2, "migration_interval": 2}, ID_DGA_DEFAULTS)
    idle = len(pool.idle)
    with pytest.raises(RuntimeError, match="island 1 gives up"):
        run_islands(k_problem, FailingIsland, {**config, "executor": "ray"}, name="failing", budget=900, seed=1)
    assert len(pool.idle) == max(idle - 2, 0)  # a failed run's actors are stopped, not reused

    def stop(evaluations: int, td: float, feasible: bool) -> None:
        if evaluations > 100:
            raise KeyboardInterrupt

    params = {"islands": 2, "migration_interval": 2, "executor": "ray"}
    with pytest.raises(KeyboardInterrupt):  # the master stops early: its actors go back to the pool
        run_optimizer("id-dga", k_problem, budget=5000, seed=2, params=params, progress=stop)
    assert len(pool.idle) >= 2
    again = run_optimizer("id-dga", k_problem, budget=900, seed=2, params=params)
    assert same_run(again, run_optimizer("id-dga", k_problem, budget=900, seed=2, params={**params, "executor": "local"}))


def test_ray_executor_without_ray_is_a_spec_error(k_problem: Problem, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails, as when it is not installed
    with pytest.raises(SpecError, match=r"needs Ray.*ppdp\[ray\]"):
        run_optimizer("id-dga", k_problem, budget=100, params={"islands": 2, "executor": "ray"})


@pytest.mark.parametrize("limit", [1.0, 0.02])
@pytest.mark.parametrize("mode", ["bound", "nodes"])
def test_lattice_with_ray_workers_is_certified_with_the_same_optimum(ray_cluster, k_problem: Problem, limit, mode):
    """Both searches (boxes, whose partner bound may prove the optimum after one node, and nodes,
    which evaluates many batches) give the in-process optimum with Ray workers evaluating."""
    params = {"suppression_limit": limit, "batch": 16, "mode": mode}
    local = run_optimizer("lattice", k_problem, budget=10**6, params=dict(params))
    on_ray = run_optimizer("lattice", k_problem, budget=10**6, params={**params, "executor": "ray"})
    assert local.certified and on_ray.certified
    assert on_ray.info["executor"] == "ray"
    assert on_ray.td == local.td and np.array_equal(on_ray.g, local.g)
    assert np.array_equal(on_ray.retained, local.retained) and np.array_equal(on_ray.history, local.history)
    assert on_ray.info["nodes_evaluated"] == local.info["nodes_evaluated"]
    if mode == "nodes":
        assert local.info["nodes_evaluated"] > 16  # several batches went to the workers


def test_evaluate_batches_gives_the_in_process_numbers(ray_cluster, k_problem: Problem):
    rng = np.random.default_rng(0)
    batches = [rng.integers(0, k_problem.heights + 1, size=(m, k_problem.n_qids)) for m in (5, 1, 7)]
    limit = max_suppressed_records(k_problem, 0.05, "test")
    before = k_problem.evaluations
    out = evaluate_batches(k_problem, batches, max_suppressed=limit)
    assert k_problem.evaluations == before + 13
    fresh = Problem(k_problem.table, k_problem.models)  # no oracle cache shared with the workers
    for G, (retained, ev) in zip(batches, out, strict=True):
        want_r, want = evaluate_nodes(fresh, G, limit)
        assert np.array_equal(retained, want_r)
        assert np.array_equal(ev.td, want.td) and np.array_equal(ev.feasible, want.feasible)
        assert np.array_equal(ev.suppressed, want.suppressed) and np.array_equal(ev.ad, want.ad)
        # the limit holds: a node suppressing more was evaluated with nothing suppressed
        assert (k_problem.n_records - retained.sum(axis=1) <= limit).all()


def test_unknown_executor_is_a_spec_error(k_problem: Problem):
    with pytest.raises(SpecError, match="executor must be"):
        run_optimizer("lattice", k_problem, budget=10, params={"executor": "dask"})
    with pytest.raises(SpecError, match="executor must be"):
        run_optimizer("id-dga", k_problem, budget=100, params={"executor": "dask"})
