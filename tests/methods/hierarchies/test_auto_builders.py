"""Auto hierarchies: each builder's tree nests, and ARX's Loss read from the stored functional
definition equals the Loss read back from the materialized tree (builders/loss.py)."""

from __future__ import annotations

import random

import duckdb
import numpy as np
import pytest

from ppdp.connectors import connect
from ppdp.engine.core.builders import Definition, build, loss, select
from ppdp.engine.core.builders.auto import CANDIDATES, _cuts, choose
from ppdp.engine.core.builders.profile import from_counts, profile_table
from ppdp.errors import HierarchyError

rng = random.Random(7)
AGES = [str(int(rng.gauss(40, 13)) % 95 + 1) for _ in range(3000)]
INCOMES = [f"{rng.lognormvariate(10, 1.2):.2f}" for _ in range(3000)]
DAYS = [f"{rng.randint(1950, 2024):04d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}" for _ in range(2000)]
STAMPS = [f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00"
          for _ in range(2000)]
ZIPS = [f"{rng.randint(10000, 14999)}" for _ in range(2000)]
ICD = [rng.choice("ABCDEFGHJK") + f"{rng.randint(0, 99):02d}" + rng.choice(["", ".1", ".25"]) for _ in range(2000)]
RACES = ["White"] * 850 + ["Black"] * 90 + ["Asian"] * 30 + ["Amer-Indian"] * 15 + ["Other"] * 8 + ["Pacific"] * 7


def _counts(values: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out


CASES = {
    "numeric-width": ("age", "number", AGES, {}),
    "numeric-depth": ("income", "number", INCOMES, {}),
    "temporal-dates": ("birth", "date", DAYS, {}),
    "temporal-stamps": ("seen", "timestamp", STAMPS, {}),
    "codes-zip": ("zip", "text", ZIPS, {}),
    "codes-icd": ("icd", "text", ICD, {"builder": "codes"}),
    "priority": ("race", "text", RACES, {}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_loss_from_definition_equals_loss_from_tree(case: str) -> None:
    name, kind, values, overrides = CASES[case]
    counts = _counts(values)
    definition = choose(from_counts(name, kind, counts, len(values)), counts, overrides)
    assert definition.builder == case.split("-")[0]
    h = build(definition, name, list(counts), counts)
    assert h.height >= 2, f"{case}: a ladder, not a flat hierarchy"
    by_definition, by_tree = loss.from_definition(h), loss.from_tree(h)
    assert by_definition.shape == (h.height + 1, len(h.rows))
    if definition.builder == "priority":  # the definition says how many merge, not which
        by_tree = np.sort(by_tree, axis=1)
    np.testing.assert_allclose(by_definition, by_tree, rtol=0, atol=1e-12)
    assert (by_tree[0] == 0).all() and (by_tree[-1] == 1).all()
    assert (np.diff(loss.from_tree(h), axis=0) >= -1e-12).all(), "loss grows with the level"


def test_numeric_ladder_is_chosen_by_loss_per_entropy() -> None:
    """Every candidate ladder (auto.CANDIDATES) is built and the one with the smallest area under
    ARX's Loss against entropy (builders/select.py) is kept: equal depth for continuous incomes
    (every value distinct, so a bin's leaf share is its row share), equal width for ages, and
    equal width for a skewed integer column whose long tail holds most of the distinct values
    (equal depth would put them in one costly top bin; equal width top-codes them at the 99 %
    quantile)."""
    draw = random.Random(11)
    amounts = [str(int(draw.lognormvariate(3.5, 1.0))) for _ in range(5000)]
    for values, expected in ((AGES, "width"), (INCOMES, "depth"), (amounts, "width")):
        counts = _counts(values)
        profile = from_counts("x", "number", counts, len(values))
        scores = {tuple(_cuts(profile, m, bins)): select.score(select.curve(
            build(Definition.of("numeric", method=m, cuts=_cuts(profile, m, bins)), "x", list(counts), counts).rows, counts))
            for m, bins in CANDIDATES}
        chosen = choose(profile, counts)
        assert chosen.param("method") == expected, scores
        assert scores[tuple(chosen.param("cuts"))] == min(scores.values())
        assert len(set(scores.values())) > 1, "the candidates differ"


def test_interval_loss_is_the_width_not_the_leaf_share() -> None:
    """Two values at the ends of a wide bin: ARX's leaf share would say 1/(n-1); the interval says its width."""
    counts = {"0": 1, "1": 1, "2": 1, "99": 1}
    h = build(Definition.of("numeric", method="width", cuts=[0, 50, 100, 150]), "x", list(counts), counts)
    row = h.leaves.index("1")
    assert h.rows[row][1] == "<50"
    assert loss.from_definition(h)[1, row] == pytest.approx(50 / 99)


def test_stored_definition_rebuilds_the_same_tree_on_new_values() -> None:
    counts = _counts(AGES)
    d = choose(from_counts("age", "number", counts, 3000), counts)
    again = Definition.from_json(d.to_json())
    assert again == d
    old = build(d, "age", list(counts), counts)
    new = build(again, "age", [*counts, "120"], counts)
    shared = {r[0]: r for r in old.rows}
    assert all(shared[r[0]] == r for r in new.rows if r[0] in shared)
    assert dict((r[0], r) for r in new.rows)["120"][1].startswith(">=")  # a new top value is top-coded


def test_profile_is_one_statement_and_matches_the_counts(tmp_path) -> None:
    db = tmp_path / "p.duckdb"
    c = duckdb.connect(str(db))
    c.execute("CREATE TABLE t (age INTEGER, zip VARCHAR, d DATE, nothing VARCHAR, one INTEGER)")
    c.executemany("INSERT INTO t VALUES (?, ?, ?, NULL, 7)", [(int(a), z, dd) for a, z, dd in zip(AGES, ZIPS, DAYS, strict=False)])
    c.close()
    con = connect(f"duckdb://{db}")
    try:
        p = profile_table(con, '"main"."t"', {"age": "INTEGER", "zip": "VARCHAR", "d": "DATE", "nothing": "VARCHAR", "one": "INTEGER"})
    finally:
        con.close()
    assert p["age"].kind == "number" and p["age"].rows == 2000 and p["age"].nonnull == 2000
    assert p["zip"].code_share == 1.0 and p["zip"].min_len == p["zip"].max_len == 5
    assert p["d"].kind == "date" and str(p["d"].vmin) == min(DAYS[:2000])
    assert p["nothing"].nonnull == 0
    with pytest.raises(HierarchyError, match="only NULL"):
        choose(p["nothing"], {})
    one = choose(p["one"], {"7": 2000})
    assert build(one, "one", ["7"], {"7": 2000}).rows == (("7", "*"),)


def test_out_of_range_dates_are_one_line() -> None:
    with pytest.raises(HierarchyError, match="not a date of the years 1..9999") as e:
        build(Definition.of("temporal", ladder=["month", "year"]), "d", ["2020-01-01", "294247-01-10"], {})
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("values", [AGES, INCOMES], ids=["ages", "incomes"])
def test_numeric_curve_equals_the_materialized_ladders_curve(values: list[str]) -> None:
    """The selection scores candidates without building them (select.numeric_curve); the points
    must be those of the built tree (select.curve over its rows)."""
    counts = _counts(values)
    profile = from_counts("x", "number", counts, len(values))
    points = np.array([float(v) for v in counts])
    weights = np.array(list(counts.values()), dtype=float)
    for m, bins in CANDIDATES:
        cuts = _cuts(profile, m, bins)
        tree = build(Definition.of("numeric", method=m, cuts=cuts), "x", list(counts), counts)
        np.testing.assert_allclose(select.numeric_curve(points, weights, cuts), select.curve(tree.rows, counts), rtol=0, atol=1e-12)
