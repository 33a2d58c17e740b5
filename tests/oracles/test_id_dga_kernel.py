"""The fused ID-DGA epoch (engine/methods/generalization/optimizers/_id_dga_kernel.py) against its plain-Python
reference (``IDDGAIsland.generation``): the same draws and numbers, epoch by epoch, on real and
random instances, with migrants, with the budget running out inside a generation, and without
the improvement operator."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from ppdp.engine.core.encoding import COUNT_COLUMN, encode_histogram
from ppdp.engine.core.hierarchy import Hierarchy
from ppdp.engine.methods.generalization.optimizers import run_optimizer
from ppdp.engine.methods.generalization.optimizers.id_dga import ID_DGA_DEFAULTS, IDDGAIsland
from ppdp.engine.methods.generalization.problem import Problem
from ppdp.engine.privacy import build_model
from tests.search.test_evolutionary import QIDS_K, adult_problem

POPULATION = ("G", "S", "feas", "viol", "td", "ad", "sup")


def random_problem(seed: int, n_qids: int = 4, n_rows: int = 60, k: int = 3) -> Problem:
    """A random k-anonymity instance: integer QIDs with interval hierarchies of height 2-3."""
    rng = np.random.default_rng(seed)
    cols, hs = {}, []
    for q in range(n_qids):
        n_values = int(rng.integers(3, 9))
        values = [str(v) for v in range(n_values)]
        cols[f"q{q}"] = rng.choice(values, size=n_rows).tolist()
        levels = [values, [f"{int(v) // 2}x" for v in values], ["*"] * n_values]
        hs.append(Hierarchy(f"q{q}", tuple(zip(*levels, strict=True))))
    cols["sa"] = rng.choice(["a", "b"], size=n_rows).tolist()
    frame = pl.DataFrame(cols)
    hist = frame.group_by(list(cols)).agg(pl.len().cast(pl.Int64).alias(COUNT_COLUMN))
    table = encode_histogram(hist, [f"q{q}" for q in range(n_qids)], ["sa"], hs)
    return Problem(table, [build_model("k-anonymity", {"k": k})])


def make_island(problem: Problem, fused: bool, budget: int, seed: int, pop: int, **config) -> IDDGAIsland:
    c = dict(ID_DGA_DEFAULTS, islands=1, fused=fused, **config)
    return IDDGAIsland(problem, c, budget=budget, seed=np.random.SeedSequence(seed), index=0, pop_size=pop)


def assert_same_island(a: IDDGAIsland, b: IDDGAIsland) -> None:
    for name in POPULATION:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert a.used == b.used and a.generations == b.generations
    assert a.rng.bit_generator.state == b.rng.bit_generator.state  # the same draws, to the last one


def assert_same_report(ra, rb) -> None:
    assert ra.evaluated == rb.evaluated and ra.exhausted == rb.exhausted
    assert (ra.improvements is None) == (rb.improvements is None)
    if ra.improvements is not None:
        for x, y in zip(ra.improvements[:3], rb.improvements[:3], strict=True):
            np.testing.assert_array_equal(x, y)
        for f in ("ad", "td", "feasible", "violation", "suppressed"):
            np.testing.assert_array_equal(getattr(ra.improvements[3], f), getattr(rb.improvements[3], f))


def run_both(problem: Problem, budget: int, seed: int, pop: int, epochs: int, mi: int = 5, **config) -> IDDGAIsland:
    fused = make_island(problem, True, budget, seed, pop, **config)
    reference = make_island(problem, False, budget, seed, pop, **config)
    assert fused.fused is not None and reference.fused is None
    migrant_rng = np.random.default_rng(seed + 1)
    migrant = None
    for e in range(epochs):
        ra, rb = fused.run(mi, migrant), reference.run(mi, migrant)
        assert_same_report(ra, rb)
        assert_same_island(fused, reference)
        if ra.exhausted:
            break
        # A migrant from elsewhere every other epoch: a population member changed by receive().
        migrant = ra.best if e % 2 else None
        if migrant is not None:
            migrant = type(migrant)(migrant.g.copy(), migrant_rng.random(problem.n_records) < 0.8, migrant.feasible,
                                    migrant.violation, migrant.td + 1.0, migrant.ad, migrant.suppressed)
    return fused


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_fused_epochs_match_reference_on_random_instances(seed: int):
    problem = random_problem(seed, n_qids=3 + seed % 3, n_rows=40 + 20 * seed, k=2 + seed % 3)
    pop = [4, 10, 20][seed % 3]
    island = run_both(problem, budget=10**6, seed=seed, pop=pop, epochs=12)
    children = island.generations * (pop // 2)
    assert island.used - pop > children  # some infeasible children were improved and evaluated again


@pytest.mark.parametrize("budget", [7, 23, 61, 200])
def test_fused_stops_inside_a_generation_like_reference(budget: int):
    """The budget runs out in the middle of a batch of children or of improved children."""
    problem = random_problem(100 + budget, n_qids=4, n_rows=80, k=4)
    run_both(problem, budget=budget, seed=budget, pop=12, epochs=100)


def test_fused_without_improvement_and_odd_population():
    problem = random_problem(7, n_qids=5, n_rows=90, k=3)
    run_both(problem, budget=5000, seed=3, pop=11, epochs=8, improvement=False)


def test_fused_on_adult_whole_runs_identical():
    problem = adult_problem(300, QIDS_K, "k-anonymity", {"k": 2})
    for islands in (1, 2):
        a = run_optimizer("id-dga", problem, budget=2000, seed=5, params={"islands": islands, "executor": "local"})
        b = run_optimizer("id-dga", problem, budget=2000, seed=5,
                          params={"islands": islands, "executor": "local", "fused": False})
        assert a.td == b.td and a.feasible == b.feasible
        np.testing.assert_array_equal(a.g, b.g)
        np.testing.assert_array_equal(a.retained, b.retained)
        np.testing.assert_array_equal(a.history, b.history)


def test_fused_applies_only_where_it_is_exact():
    k = adult_problem(300, QIDS_K, "k-anonymity", {"k": 2})
    assert make_island(k, True, 100, 0, 10).fused is not None
    assert make_island(k, True, 100, 0, 10, oracle=True).fused is None
    assert make_island(k, True, 100, 0, 10, mutation="plain").fused is None
    assert make_island(k, True, 100, 0, 10, improve_until_feasible=True).fused is None
    assert make_island(k, True, 100, 0, 10, diversity_every=1).fused is None
    t = adult_problem(300, QIDS_K, "t-closeness", {"t": 0.2})
    assert make_island(t, True, 100, 0, 10).fused is None
