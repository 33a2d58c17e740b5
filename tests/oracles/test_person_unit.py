"""The person unit's search (docs/design/person_unit.md) against independent recounts.

The search reads the person-level relation (sql/person.py, one row per person); these tests
build random row tables with several rows per person (QIDs and SA constant per person), let
DuckDB reduce them to persons, and check that

- the Numba and DuckDB evaluators, on that relation, give at every random node the smallest
  class size that an independent ``COUNT(DISTINCT person)`` over the *row* table gives
  (200 random instances);
- the lattice search's certified optimum equals brute force over every node and every set of
  whole persons kept, feasibility recounted as distinct persons over the row table.
"""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest

from ppdp.connectors import connect
from ppdp.engine.core.encoding import encode_histogram
from ppdp.engine.core.person import person_source
from ppdp.engine.core.spec import spec_from_dict
from ppdp.engine.methods.generalization.evaluators import make_evaluator
from ppdp.engine.methods.generalization.optimizers import run_optimizer
from ppdp.engine.methods.generalization.problem import Problem
from ppdp.engine.privacy import build_model
from ppdp.sql import queries as Q
from tests.oracles.test_evaluator_agreement import random_hierarchy
from tests.oracles.test_oracle import all_nodes, lattice_size


def random_rows(rng: np.random.Generator, *, max_persons: int = 30, max_qids: int = 3, hierarchies=None):
    """(rows frame with person_id and row_id, hierarchies): each person 1-4 rows with the same QIDs and SA."""
    hierarchies = hierarchies or [random_hierarchy(rng, f"q{i}") for i in range(int(rng.integers(1, max_qids + 1)))]
    n = int(rng.integers(1, max_persons + 1))
    persons = {f"q{i}": [str(v) for v in rng.choice(h.leaves, size=n)] for i, h in enumerate(hierarchies)}
    persons["s"] = [f"v{int(v)}" for v in rng.integers(0, 3, size=n)]
    persons["person_id"] = list(range(n))
    repeat = rng.integers(1, 5, size=n)
    frame = pl.DataFrame(persons).select(pl.all().repeat_by(pl.Series(repeat.tolist())).explode())
    return frame.with_row_index("row_id").with_columns(pl.col("row_id").cast(pl.Int64)), hierarchies


def spec_for(qids: list[str]):
    return spec_from_dict({"source": {"table": "rows", "key": "row_id", "person": "person_id"},
                           "quasi_identifiers": [{"column": q, "hierarchy": "flat"} for q in qids],
                           "sensitive": {"columns": ["s"]},
                           "privacy": {"models": [{"name": "k-anonymity", "k": 2}]},
                           "output": {"name": "x"}})


def person_table(con, frame: pl.DataFrame, hierarchies):
    """The encoded person-level histogram DuckDB makes of ``frame`` (what validate reads)."""
    qids = [h.attribute for h in hierarchies]
    con.execute('DROP TABLE IF EXISTS "rows"')
    con.write_frame("main", "rows", frame)
    source = Q.Source(None, "rows", None, con.dialect)
    persons = person_source(spec_for(qids), source)
    hist = con.query(Q.histogram_query(persons, qids, ["s"]))
    return encode_histogram(hist, qids, ["s"], hierarchies)


def generalized(frame: pl.DataFrame, hierarchies, g) -> pl.DataFrame:
    """``frame`` with every QID replaced by its value at level ``g`` (from the hierarchy rows)."""
    out = frame
    for h, level in zip(hierarchies, g, strict=True):
        mapping = {row[0]: row[int(level)] for row in h.rows}
        out = out.with_columns(pl.col(h.attribute).replace_strict(mapping, return_dtype=pl.String))
    return out


def min_distinct_persons(frame: pl.DataFrame, hierarchies, g) -> int:
    """The independent recount: smallest COUNT(DISTINCT person) over the generalized row table."""
    qids = [h.attribute for h in hierarchies]
    return int(generalized(frame, hierarchies, g).group_by(qids).agg(pl.col("person_id").n_unique().alias("n"))["n"].min())


@pytest.fixture(scope="module")
def con():
    c = connect("duckdb://:memory:")
    yield c
    c.close()


def test_evaluators_count_distinct_persons_on_200_random_instances(con) -> None:
    rng = np.random.default_rng(36)
    models = [build_model("k-anonymity", {"k": 1})]
    checked = 0
    for _ in range(200):
        frame, hierarchies = random_rows(rng)
        table = person_table(con, frame, hierarchies)
        assert int(table.counts.sum()) == frame["person_id"].n_unique()  # one record per person
        G = np.stack([rng.integers(0, table.heights + 1) for _ in range(4)])
        retained = np.tile(table.counts, (len(G), 1))
        numba = make_evaluator("numba", table, models).evaluate(G, retained)
        duck = make_evaluator("duckdb", table, models).evaluate(G, retained)
        for p, g in enumerate(G):
            expected = min_distinct_persons(frame, hierarchies, g)
            assert numba.ad[p, 0] == duck.ad[p, 0] == expected, (g, numba.ad[p, 0], duck.ad[p, 0], expected)
            checked += 1
    assert checked == 800


def brute_force_person_optimum(frame: pl.DataFrame, hierarchies, k: int) -> float:
    """Max TD over every node and every set of whole persons kept such that each class of the
    kept rows holds >= k distinct persons; TD counts each kept person once (its QIDs' 1/|v_g|)."""
    persons = frame.unique("person_id", keep="first").sort("person_id")
    ids = persons["person_id"].to_list()
    qids = [h.attribute for h in hierarchies]
    best = -1.0
    for g in all_nodes(np.array([h.height for h in hierarchies])):
        gen = generalized(frame, hierarchies, g)
        weight = {}
        for pid, *vals in generalized(persons, hierarchies, g).select(["person_id", *qids]).iter_rows():
            weight[pid] = sum(1.0 / sum(1 for row in h.rows if row[int(lv)] == v)
                              for h, lv, v in zip(hierarchies, g, vals, strict=True))
        for bits in itertools.product((0, 1), repeat=len(ids)):
            kept = [pid for pid, b in zip(ids, bits, strict=True) if b]
            rows = gen.filter(pl.col("person_id").is_in(kept))
            if rows.height and int(rows.group_by(qids).agg(pl.col("person_id").n_unique().alias("n"))["n"].min()) < k:
                continue
            best = max(best, sum(weight[pid] for pid in kept))
    return best


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("seed", range(4))
def test_certified_optimum_equals_brute_force_per_person(con, k, seed) -> None:
    rng = np.random.default_rng([36, k, seed])
    while True:
        hierarchies = [random_hierarchy(rng, f"q{i}", min_leaves=2, max_leaves=3, max_height=2) for i in range(2)]
        frame, _ = random_rows(rng, max_persons=7, hierarchies=hierarchies)
        if frame["person_id"].n_unique() >= 4:
            break
    table = person_table(con, frame, hierarchies)
    models = [build_model("k-anonymity", {"k": k})]
    best = brute_force_person_optimum(frame, hierarchies, k)
    result = run_optimizer("lattice", Problem(table, models), budget=lattice_size(table.heights), params={"mode": "exhaustive"})
    assert result.certified and result.feasible
    assert result.td == pytest.approx(best, rel=1e-9, abs=1e-12)
