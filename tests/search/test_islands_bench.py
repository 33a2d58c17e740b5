"""benchmarks/islands.py --heavy: 1 and 2 islands compared at the same total work, and the
in-process runs do not inherit the previous run's oracle cache."""

from __future__ import annotations

from benchmarks import islands
from tests.search.test_evolutionary import QIDS_K, adult_problem


def _table():
    return adult_problem(300, QIDS_K, "k-anonymity", {"k": 2}).table


def test_one_and_two_islands_spend_the_same_total_budget():
    # SR = RT(1) / RT(2) means something only at the same work: the budget is the total, and two
    # islands get half each (run_islands splits it), whatever the executor.
    table = _table()
    one = islands.heavy_run(table, islands.HEAVY_CELLS[0], budget=401, seed=3)
    two = islands.heavy_run(table, islands.HeavyCell("2 islands, local", 2, "local"), budget=401, seed=3)
    assert one["evaluations"] == two["evaluations"] == 401
    assert one["evaluations_per_island"] == [401]
    assert two["evaluations_per_island"] == [201, 200]
    assert one["executor"] == two["executor"] == "local"


def test_every_heavy_run_gets_a_problem_of_its_own(monkeypatch):
    # The S*(G) cache lives in the Problem; a worker builds a new one per run, so must the
    # in-process cells, or the 1-island run would replay the previous run's S*(G) for the seed.
    table = _table()
    made = []
    build = islands.heavy_problem
    monkeypatch.setattr(islands, "heavy_problem", lambda t: made.append(build(t)) or made[-1])
    first = islands.heavy_run(table, islands.HEAVY_CELLS[0], budget=200, seed=5)
    again = islands.heavy_run(table, islands.HEAVY_CELLS[0], budget=200, seed=5)
    assert len(made) == 2 and made[0] is not made[1]
    assert [p.evaluations for p in made] == [200, 200]  # each counted its own run only
    assert first["td"] == again["td"] and first["g"] == again["g"]  # same seed, same result
