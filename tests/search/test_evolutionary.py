"""The evolutionary optimizers (GA, DE, ID-DGA family, HAEF family, TLEF) on small real
instances of adult: feasible results within budget, reproducible with a seed, islands in
worker processes giving the same result as in-process islands."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from ppdp.engine.core.encoding import COUNT_COLUMN, encode_histogram
from ppdp.engine.core.hierarchy import read_arx_csv
from ppdp.engine.methods.generalization.optimizers import OPTIMIZERS, run_optimizer
from ppdp.engine.methods.generalization.optimizers.evolutionary.executors.wire import (
    decode_migrant,
    encode_migrant,
    pack_reports,
    same_individual,
    unpack_reports,
)
from ppdp.engine.methods.generalization.optimizers.evolutionary.executors.worker import (
    RingSender,
    direct_send_bytes,
)
from ppdp.engine.methods.generalization.optimizers.evolutionary.island import Individual
from ppdp.engine.methods.generalization.optimizers.evolutionary.master import run_islands
from ppdp.engine.methods.generalization.optimizers.evolutionary.params import parse_params
from ppdp.engine.methods.generalization.optimizers.evolutionary.runtime import IslandRuntime
from ppdp.engine.methods.generalization.optimizers.id_dga import (
    ID_DGA_DEFAULTS,
    IDDGAIsland,
    record_disclosure,
)
from ppdp.engine.methods.generalization.optimizers.operators import imp_info_driven
from ppdp.engine.methods.generalization.problem import Problem
from ppdp.engine.privacy import ClassStats, build_model
from ppdp.errors import SpecError
from tests.support import paths as PATHS

_HERE = PATHS.REPO
ADULT = next((p for p in (Path(os.environ.get("PPDP_DATA", "/nonexistent")) / "arx", _HERE / "src" / "ppdp" / "engine" / "data" / "adult",
                          _HERE.parent / "shared" / "data" / "arx") if (p / "adult.csv").exists()), None)
QIDS_K = ["age", "education", "marital-status", "occupation", "race", "sex"]  # 6 QIDs
QIDS_T = ["age", "education", "marital-status", "race", "sex"]  # 5 QIDs

EVOLUTIONARY = ["ga", "de", "id-ga", "id-dga", "id-dga-without-framework", "id-dga-without-mutation",
                "id-dga-without-improvement", "id-dga+oracle", "haef", "haef-without-priority",
                "haef-without-ga-de-adaptation", "haef-without-de-adaptation", "tlef", "haef+oracle"]
LOCAL = {"executor": "local"}  # same results as worker processes (tested below), no start-up cost


def adult_problem(n_rows: int, qids: list[str], model: str, params: dict) -> Problem:
    if ADULT is None:
        pytest.skip("adult data not found (set PPDP_DATA)")
    df = pl.read_csv(ADULT / "adult.csv", separator=";", infer_schema=False, n_rows=n_rows)
    hist = df.group_by(qids + ["salary-class"]).agg(pl.len().cast(pl.Int64).alias(COUNT_COLUMN))
    hs = [read_arx_csv(ADULT / f"adult_hierarchy_{q}.csv", q) for q in qids]
    return Problem(encode_histogram(hist, qids, ["salary-class"], hs), [build_model(model, params)])


@pytest.fixture(scope="module")
def k_problem() -> Problem:
    return adult_problem(300, QIDS_K, "k-anonymity", {"k": 2})


@pytest.fixture(scope="module")
def t_problem() -> Problem:
    return adult_problem(200, QIDS_T, "t-closeness", {"t": 0.2})


@pytest.fixture(scope="module")
def k_optimum(k_problem: Problem) -> float:
    r = run_optimizer("lattice", k_problem, budget=10**6)
    assert r.certified
    return r.td


def params_for(name: str) -> dict:
    # diversity recording (HAEF Fig. 9) is off by default; check_result looks at it
    return {**LOCAL, "diversity_every": 1} if name.startswith("id-dga") else {"diversity_every": 1}


def check_result(problem: Problem, r, budget: int, optimum: float | None = None) -> None:
    assert r.feasible
    assert r.evaluations == budget  # islands stop exactly when their share is spent
    # The reported (G, retained) really has the reported TD and is feasible.
    ev = problem.evaluate(r.g, retained=r.retained)
    assert ev.feasible[0] and ev.td[0] == pytest.approx(r.td)
    assert r.retained.sum() == problem.n_records - r.suppressed
    if optimum is not None:
        assert r.td <= optimum + 1e-6
    # Best-so-far history: evaluation counts increase, feasible TD never decreases.
    h = r.history
    assert (np.diff(h[:, 0]) >= 0).all() and h[-1, 0] == budget
    feas = h[h[:, 2] == 1, 1]
    assert (np.diff(feas) >= -1e-9).all() and feas[-1] == pytest.approx(r.td)
    # Diversity per generation: (evaluations, g_div, s_div), evaluation counts up to the budget.
    div = np.array(r.info["diversity"])
    assert div.ndim == 2 and div.shape[1] == 3 and len(div) >= 3
    assert (np.diff(div[:, 0]) >= 0).all() and div[-1, 0] <= budget and (div[:, 1:] >= 0).all()


@pytest.mark.parametrize("name", EVOLUTIONARY)
def test_k_anonymity_feasible_within_budget(name: str, k_problem: Problem, k_optimum: float):
    budget = k_problem.n_qids * k_problem.n_records  # ID-DGA §5.2: nQID * nR
    r = run_optimizer(name, k_problem, budget=budget, seed=7, params=params_for(name))
    check_result(k_problem, r, budget, k_optimum)
    assert r.optimizer == name and not r.certified
    if name.endswith("+oracle"):  # S*(G) repairs every solution: feasible from the first evaluation
        assert (r.history[:, 2] == 1).all()


@pytest.mark.parametrize("name", ["id-dga", "haef", "tlef", "haef-without-de-adaptation", "de"])
def test_t_closeness_feasible_within_budget(name: str, t_problem: Problem):
    budget = 1500
    r = run_optimizer(name, t_problem, budget=budget, seed=3, params=params_for(name))
    check_result(t_problem, r, budget)
    oracle = run_optimizer("lattice", t_problem, budget=10**6)
    assert r.td <= oracle.td + 1e-6


@pytest.mark.parametrize("name", ["id-dga", "haef", "ga", "de", "tlef"])
def test_reproducible_with_seed(name: str, k_problem: Problem):
    runs = [run_optimizer(name, k_problem, budget=900, seed=s, params=params_for(name)) for s in (11, 11, 12)]
    a, b, c = runs
    assert np.array_equal(a.g, b.g) and a.td == b.td and np.array_equal(a.retained, b.retained)
    assert np.array_equal(a.history, b.history) and a.info["diversity"] == b.info["diversity"]
    assert a.info["diversity"] != c.info["diversity"]  # another seed, another run


def test_islands_in_processes_match_local_islands(k_problem: Problem, t_problem: Problem):
    budget = 1200
    for name, problem in (("id-dga", k_problem), ("haef", t_problem)):
        proc = run_optimizer(name, problem, budget=budget, seed=5, params={"diversity_every": 1, "islands": 2, "executor": "process"})
        local = run_optimizer(name, problem, budget=budget, seed=5, params={"diversity_every": 1, "islands": 2, "executor": "local"})
        check_result(problem, proc, budget)
        assert proc.info["executor"] == "process" and local.info["executor"] == "local"
        assert proc.td == local.td and np.array_equal(proc.g, local.g) and np.array_equal(proc.history, local.history)
        assert proc.info["diversity"] == local.info["diversity"]
        info = proc.info
        assert info["islands"] == 2 and sum(info["evaluations_per_island"]) == budget
        assert info["evaluations_per_island"] == [budget // 2, budget // 2]
        assert 0 <= info["comm_seconds"] < info["run_seconds"] and 0 <= info["comm_ratio"] < 1
        assert info["epochs"] >= 2 and min(info["generations_per_island"]) >= info["migration_interval"]
        # Diversity covers the whole population of both islands: at the start, N individuals.
        assert info["diversity"][0][0] == sum(info["pop_sizes"])


@pytest.mark.parametrize("islands,lag", [(2, 1), (3, 2), (4, 3)])
def test_migration_lag_same_in_processes_and_locally(k_problem: Problem, islands: int, lag: int):
    # A lagged ring lets islands run ahead of each other; the migrants (and so the run) are
    # still fixed by the seed, whatever the scheduling of the processes.
    params = {"islands": islands, "migration_lag": lag, "migration_interval": 2, "diversity_every": 1}
    proc = run_optimizer("id-dga", k_problem, budget=1500, seed=8, params={**params, "executor": "process"})
    local = run_optimizer("id-dga", k_problem, budget=1500, seed=8, params={**params, "executor": "local"})
    sync = run_optimizer("id-dga", k_problem, budget=1500, seed=8,
                         params={**params, "migration_lag": 0, "executor": "local"})
    check_result(k_problem, proc, 1500)
    assert same_run(proc, local) and proc.info["migration_lag"] == lag
    assert not np.array_equal(local.history, sync.history) or local.info["diversity"] != sync.info["diversity"]


def same_run(a, b) -> bool:
    return (a.td == b.td and np.array_equal(a.g, b.g) and np.array_equal(a.retained, b.retained)
            and np.array_equal(a.history, b.history) and a.info["diversity"] == b.info["diversity"]
            and a.info["evaluations_per_island"] == b.info["evaluations_per_island"])


def test_worker_pool_reuses_workers_and_changes_nothing(k_problem: Problem, t_problem: Problem):
    budget = 900
    with IslandRuntime() as runtime:
        pool = runtime.pool()
        for name, problem, n, seed in (("id-dga", k_problem, 2, 5), ("id-dga", k_problem, 2, 6),
                                       ("id-dga", k_problem, 3, 5), ("haef", t_problem, 2, 5)):
            proc = run_optimizer(name, problem, budget=budget, seed=seed, params={"diversity_every": 1, "islands": n, "executor": "process"})
            local = run_optimizer(name, problem, budget=budget, seed=seed, params={"diversity_every": 1, "islands": n, "executor": "local"})
            assert proc.info["worker_pool"] and proc.info["executor"] == "process"
            assert same_run(proc, local), (name, n, seed)
            info = proc.info
            assert 0 <= info["comm_seconds"] <= info["islands_seconds"] <= info["algorithm_seconds"] <= info["run_seconds"]
        assert pool.started == 3 and len(pool.idle) == 3  # started once, reused by every run


class FailingIsland(IDDGAIsland):
    """Fails in its second epoch (for the error path of the worker processes)."""

    def evolve(self, generations: int) -> None:
        if self.generations >= 2 and self.index == 1:
            raise ValueError("island 1 gives up")
        super().evolve(generations)


class SlowToReportError(ValueError):
    """An error whose message takes a while to format: its island has closed its ring pipes
    well before the master hears of the failure."""

    def __str__(self) -> str:
        time.sleep(0.5)
        return super().__str__()


class FailingSlowlyIsland(IDDGAIsland):
    """Island 1 fails in its second epoch and is slow to report it; island 0 is then still in
    its epoch, so its next migrant meets the closed pipe of island 1."""

    def evolve(self, generations: int) -> None:
        if self.generations >= 2:
            if self.index == 1:
                raise SlowToReportError("island 1 gives up")
            time.sleep(0.1)
        super().evolve(generations)


def test_a_failed_island_is_reported_not_the_broken_pipe_of_its_neighbour(k_problem: Problem):
    """The successor's closed pipe stops an island quietly: the master reports the island that
    failed (seen in CI: 'island 0 failed ... BrokenPipeError' hid 'island 1 gives up')."""
    config = parse_params("id-dga", {"islands": 2, "executor": "process"}, ID_DGA_DEFAULTS)
    with IslandRuntime() as runtime:
        pool = runtime.pool()
        with pytest.raises(RuntimeError, match="island 1 failed(?s:.*)island 1 gives up") as caught:
            run_islands(k_problem, FailingSlowlyIsland, config, name="failing", budget=900, seed=1)
        assert "BrokenPipeError" not in str(caught.value)
        assert not pool.idle


def test_worker_failure_and_early_stop_leave_the_pool_usable(k_problem: Problem):
    config = parse_params("id-dga", {"islands": 2, "executor": "process"}, ID_DGA_DEFAULTS)
    with IslandRuntime() as runtime:
        pool = runtime.pool()
        with pytest.raises(RuntimeError, match="island 1 gives up"):
            run_islands(k_problem, FailingIsland, config, name="failing", budget=900, seed=1)
        assert not pool.idle  # the failed run's workers are stopped, not reused

        def stop(evaluations: int, td: float, feasible: bool) -> None:
            if evaluations > 100:
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):  # the master stops early: the islands are told to stop
            run_optimizer("id-dga", k_problem, budget=5000, seed=2, params={"diversity_every": 1, "islands": 2,
                                                                          "executor": "process"}, progress=stop)
        assert len(pool.idle) == 2
        again = run_optimizer("id-dga", k_problem, budget=900, seed=2, params={"diversity_every": 1, "islands": 2,
                                                                             "executor": "process"})
        assert same_run(again, run_optimizer("id-dga", k_problem, budget=900, seed=2, params={"diversity_every": 1, "islands": 2,
                                                                                             "executor": "local"}))
        assert pool.started == 4


def test_ring_sender_does_not_block_on_large_migrants():
    """Migrants larger than a pipe's buffer go through a thread: the island never blocks
    writing to a successor that is itself writing (no deadlock around the ring)."""
    import multiprocessing as mp

    reader, writer = mp.get_context("spawn").Pipe(duplex=False)
    sender = RingSender(writer, direct_send_bytes(2, 0))
    small = Individual(np.array([1, 2]), np.array([True, False, True]), True, 0.0, 5.0, np.array([3.0]), 1)
    sender.send(encode_migrant(small, None, 1))
    big = [Individual(np.arange(3), np.random.default_rng(i).random(2_000_000) < 0.5, False, 0.25, 0.0,
                      np.array([1.0, 2.0]), 7) for i in range(4)]  # 4 x 250 KB, nobody reading yet
    for b in big:
        sender.send(encode_migrant(b, None, 2))
    got, chain = decode_migrant(reader.recv_bytes(), None)
    assert chain == 1 and same_individual(got, small) and got.suppressed == 1 and got.ad.tolist() == [3.0]
    for b in big:
        got, chain = decode_migrant(reader.recv_bytes(), None)
        assert chain == 2 and same_individual(got, b) and got.violation == 0.25 and got.ad.tolist() == [1.0, 2.0]
    sender.close()
    with pytest.raises(EOFError):
        reader.recv_bytes()


def test_migrant_messages_same_and_none():
    ind = Individual(np.array([0, 3]), np.ones(9, dtype=bool), True, 0.0, 2.5, np.array([4.0]), 0)
    copy = Individual(ind.g.copy(), ind.s.copy(), True, 0.0, 2.5, ind.ad.copy(), 0)
    data = encode_migrant(copy, ind, 3)  # unchanged best: a short message, the receiver reuses its last
    assert len(data) < len(encode_migrant(copy, None, 3))
    assert decode_migrant(data, ind) == (ind, 3)
    assert decode_migrant(encode_migrant(None, ind, 4), ind) == (None, 4)


def test_report_batches_pack_and_unpack(k_problem: Problem):
    isl = IDDGAIsland(k_problem, parse_params("id-dga", {"diversity_every": 1}, ID_DGA_DEFAULTS), budget=600,
                      seed=np.random.SeedSequence(2), index=1, pop_size=10)
    reports = [isl.run(3, None) for _ in range(40)]
    assert reports[-1].exhausted and any(r.improvements is None for r in reports)
    back = unpack_reports(pack_reports(reports))
    assert len(back) == len(reports)
    for a, b in zip(reports, back, strict=True):
        for name in ("index", "evaluated", "pop_size", "used", "generations", "exhausted", "compute_seconds", "extras"):
            assert getattr(a, name) == getattr(b, name)
        assert (a.improvements is None) == (b.improvements is None) and (a.diversity is None) == (b.diversity is None)
        if a.improvements is not None:
            for x, y in zip(a.improvements[:3], b.improvements[:3], strict=True):
                assert np.array_equal(x, y)
            assert np.array_equal(a.improvements[3].td, b.improvements[3].td)
        if a.diversity is not None:
            assert all(np.array_equal(x, y) for x, y in zip(a.diversity, b.diversity, strict=True))


def test_id_dga_defaults_and_single_island(k_problem: Problem):
    r = run_optimizer("id-dga", k_problem, budget=800, seed=1, params=LOCAL)
    assert r.info["islands"] == 4 and r.info["pop_sizes"] == [10, 10, 10, 10]
    assert r.info["migration_interval"] == 5 and r.info["params"]["mr"] == 0.1
    one = run_optimizer("id-dga", k_problem, budget=800, seed=1, params={"diversity_every": 1, "islands": 1})
    same = run_optimizer("id-ga", k_problem, budget=800, seed=1)
    assert one.feasible and one.info["islands"] == 1 and one.info["pop_sizes"] == [40]
    assert one.td == same.td and np.array_equal(one.history, same.history)


def test_haef_adaptation_records(t_problem: Problem):
    r = run_optimizer("haef", t_problem, budget=3000, seed=2)
    ex = r.info["island_extras"][0]
    ad = np.array(ex["adaptation"])  # (evaluations, p_ga, p_de^1..6) at start and every update
    assert ad[0, 1] == 1.0 and np.allclose(ad[0, 2:], 1 / 6)  # p_ga = 1, p_de^d = 1/6 at first
    assert len(ad) >= 3 and np.allclose(ad[:, 2:].sum(1), 1.0) and (ad[:, 1] <= 1).all()
    assert ex["ga_generations"] > 0 and ex["de_generations"] > 0
    only_de = run_optimizer("haef-without-ga-de-adaptation", t_problem, budget=1000, seed=2)
    assert only_de.info["island_extras"][0]["ga_generations"] == 0
    best1 = run_optimizer("haef-without-de-adaptation", t_problem, budget=2000, seed=2)
    assert np.allclose(np.array(best1.info["island_extras"][0]["adaptation"])[:, 2:], [0, 1, 0, 0, 0, 0])
    tlef = run_optimizer("tlef", t_problem, budget=1000, seed=2).info["island_extras"][0]
    assert 0 <= tlef["ga_generations"] - tlef["de_generations"] <= 1  # strict alternation


def test_budget_smaller_than_population(k_problem: Problem):
    r = run_optimizer("haef", k_problem, budget=10, seed=0)
    assert r.evaluations == 10 and len(r.history) >= 1


def test_unknown_and_fixed_parameters_raise_spec_error(k_problem: Problem):
    for name in EVOLUTIONARY:
        assert name in OPTIMIZERS
        with pytest.raises(SpecError, match="unknown parameter"):
            run_optimizer(name, k_problem, budget=100, params={"popsize": 10})
    for name, params in (("id-ga", {"islands": 2}), ("tlef", {"schedule": "adaptive"}), ("id-dga", {"mr": 2.0}),
                         ("haef", {"f": 0}), ("de", {"strategy": "best/3"}), ("ga", {"islands": 50}),
                         ("id-dga", {"executor": "dask"}), ("ga", {"pop_size": "40"})):
        with pytest.raises(SpecError):
            run_optimizer(name, k_problem, budget=100, params=params)


def test_improvement_operator_on_real_instance(k_problem: Problem, t_problem: Problem):
    rng = np.random.default_rng(0)
    g = np.zeros(k_problem.n_qids, dtype=np.int64)
    s = np.ones(k_problem.n_records, dtype=bool)
    ad, higher_is_safer = record_disclosure(k_problem, g, s)
    assert higher_is_safer and np.array_equal(ad, k_problem.record_class_sizes(g, s))
    s2 = imp_info_driven(s, ad)
    assert not s2[ad == ad.min()].any() and s2[ad > ad.min()].all()
    before, after = k_problem.evaluate(g, s[None]), k_problem.evaluate(g, s2[None])
    assert after.ad[0, 0] > before.ad[0, 0]  # the smallest classes are gone
    # t-closeness: the records of the farthest classes go; the per-class distances agree with
    # the model's own AD computed one class at a time (naive twin of the vectorized form).
    p = t_problem
    g = rng.integers(0, p.heights + 1)
    s = rng.random(p.n_records) < 0.8
    ad, higher_is_safer = record_disclosure(p, g, s)
    assert not higher_is_safer and (ad[~s] == 0).all()
    from ppdp.engine.kernels import classes as K

    retained = p.retained_from_s(s)[0]
    gen, _, n_gen = p.table.lookup
    cls, m = K.classify(g, p.table.codes, gen, n_gen, retained > 0)
    size = K.class_sizes(cls, m, retained)
    _, pc, ps, pn = K.class_sa_pairs(cls, p.table.sa, p.table.n_sa, retained)
    stats = ClassStats(size, pc, ps, pn, p.table.sa_distribution)
    model = p.models[0]
    fast = model.class_ad(stats)
    naive = [model.ad(ClassStats(size[c : c + 1], np.zeros(int((pc == c).sum()), dtype=pc.dtype), ps[pc == c],
                                 pn[pc == c], stats.q)) for c in range(m)]
    assert np.allclose(fast, naive, atol=1e-12)
    assert max(fast) == pytest.approx(p.evaluate(g, s[None]).ad[0, 0])


def test_oracle_memory_returns_what_the_oracle_computes(t_problem: Problem):
    rng = np.random.default_rng(11)
    G = rng.integers(0, t_problem.heights + 1, size=(40, t_problem.n_qids))
    G = np.concatenate([G, G[::-1]])  # every G twice: the second time from memory
    first = [t_problem.optimal_retained(g) for g in G]
    fresh = [t_problem._optimal_retained(np.asarray(g)) for g in G]
    assert all(np.array_equal(a, b) for a, b in zip(first, fresh, strict=True))
    first[0][:] = -1  # a caller changing its copy does not change the memory
    assert np.array_equal(t_problem.optimal_retained(G[0]), fresh[0])


def test_vectorized_selection_matches_pairwise_rule(k_problem: Problem):
    from ppdp.engine.methods.generalization.optimizers.ga import GA_DEFAULTS, GAIsland
    from ppdp.engine.methods.generalization.optimizers.operators import pair_up

    isl = GAIsland(k_problem, parse_params("ga", {}, GA_DEFAULTS), budget=10_000,
                   seed=np.random.SeedSequence(3), index=0, pop_size=20)
    isl.initialize()
    pairs = pair_up(isl.size, rng=np.random.default_rng(1))
    worse = isl.worse_of_pairs(pairs)
    assert worse.tolist() == [isl.worse_of(int(a), int(b)) for a, b in pairs]
    rng = np.random.default_rng(2)
    G = rng.integers(0, k_problem.heights + 1, size=(len(pairs), k_problem.n_qids))
    S = rng.random((len(pairs), k_problem.n_records)) < 0.9
    ev, S = isl.evaluate(G, S)
    expect = [isl.beats(ev, j, int(w)) for j, w in enumerate(worse)]
    kept = isl.replace_if_better(worse, G, S, ev)
    assert kept.tolist() == expect
    for j, w in enumerate(worse.tolist()):
        if kept[j]:
            assert np.array_equal(isl.G[w], G[j]) and np.array_equal(isl.S[w], S[j]) and isl.td[w] == ev.td[j]
