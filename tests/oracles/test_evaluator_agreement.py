"""The numba backend, the duckdb backend and the plain-Python reference agree exactly.

Random datasets (random hierarchies of random heights, random leaf codes, 0-2 sensitive
attributes, random counts), random populations of G with per-record S (including
nothing-suppressed and all-suppressed individuals), all four models alone and combined.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from ppdp.engine.core.encoding import COUNT_COLUMN, encode_histogram
from ppdp.engine.core.hierarchy import from_rows
from ppdp.engine.kernels import batch as B
from ppdp.engine.methods.generalization.evaluators import make_evaluator
from ppdp.engine.privacy import build_model
from tests.support import reference as ref

MODEL_NAMES = ["k-anonymity", "t-closeness", "distinct-l-diversity", "entropy-l-diversity"]
N_CASES = 240


def random_hierarchy(rng: np.random.Generator, name: str, *, min_leaves: int = 1, max_leaves: int = 8,
                     max_height: int = 4):
    """Random nested partitions of min..max_leaves leaves, height 1..max_height, root '*'."""
    n_leaves = int(rng.integers(min_leaves, max_leaves + 1))
    height = int(rng.integers(1, max_height + 1))
    groups = list(range(n_leaves))  # group id of every leaf at the current level
    columns = [[f"{name}{i}" for i in range(n_leaves)]]
    for j in range(1, height):
        distinct = sorted(set(groups))
        parent = {gid: int(rng.integers(0, int(rng.integers(1, len(distinct) + 1)))) for gid in distinct}
        groups = [parent[gid] for gid in groups]
        columns.append([f"{name}_{j}_{gid}" for gid in groups])
    columns.append(["*"] * n_leaves)
    return from_rows(name, zip(*columns, strict=True))


def random_table(rng: np.random.Generator, *, n_qids: int | None = None, max_records: int = 40,
                 min_leaves: int = 1):
    nq = int(rng.integers(1, 5)) if n_qids is None else n_qids
    hierarchies = [random_hierarchy(rng, f"q{i}", min_leaves=min_leaves) for i in range(nq)]
    n_sa = int(rng.integers(0, 3))
    n = int(rng.integers(1, max_records + 1))
    data = {}
    for i, h in enumerate(hierarchies):
        # A random subset of the leaves, so that combinations repeat and some leaves are unused.
        pool = rng.choice(h.leaves, size=int(rng.integers(1, len(h.leaves) + 1)), replace=False)
        data[f"q{i}"] = [str(v) for v in rng.choice(pool, size=n)]
    for s in range(n_sa):
        data[f"s{s}"] = [f"v{int(v)}" for v in rng.integers(0, int(rng.integers(1, 5)), size=n)]
    qids = [f"q{i}" for i in range(nq)]
    sensitive = [f"s{s}" for s in range(n_sa)]
    hist = pl.DataFrame(data).group_by(qids + sensitive).agg(pl.len().cast(pl.Int64).alias(COUNT_COLUMN))
    return encode_histogram(hist, qids, sensitive, hierarchies)


def random_models(rng: np.random.Generator):
    names = [m for m in MODEL_NAMES if rng.random() < 0.5] or [MODEL_NAMES[int(rng.integers(0, 4))]]
    params = {
        "k-anonymity": lambda: {"k": int(rng.integers(1, 6))},
        "t-closeness": lambda: {"t": float(rng.uniform(0.05, 0.8))},
        "distinct-l-diversity": lambda: {"l": int(rng.integers(1, 4))},
        "entropy-l-diversity": lambda: {"l": 2 if rng.random() < 0.3 else float(rng.uniform(1.0, 2.5))},
    }
    return [build_model(name, params[name]()) for name in names]


def random_population(rng: np.random.Generator, table, size: int):
    """G (size, nQ) and per-record keep flags (size, nR): bottom, top, random; S all kept,
    all suppressed, or Bernoulli with a random rate."""
    heights = table.heights
    G = np.stack([rng.integers(0, heights + 1) for _ in range(size)])
    G[0] = 0
    if size > 1:
        G[1] = heights
    keep = np.ones((size, table.n_records), dtype=np.bool_)
    for p in range(size):
        mode = p % 4 if p < 4 else int(rng.integers(0, 4))
        if mode == 1:
            keep[p] = False
        elif mode >= 2:
            keep[p] = rng.random(table.n_records) < rng.uniform(0.2, 0.95)
    return G, keep


def close(a: float, b: float) -> bool:
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def check_agreement(table, models, G, keep) -> None:
    retained = B.retained_batch(np.ascontiguousarray(keep, dtype=np.bool_), table.offsets)
    backends = {name: make_evaluator(name, table, models) for name in ("numba", "duckdb")}
    results = {name: ev.evaluate(G, retained) for name, ev in backends.items()}
    for p in range(G.shape[0]):
        ad, td, feasible, suppressed = ref.evaluate(table, models, G[p], keep[p])
        canonical = ref.keep_from_retained(table, retained[p])
        sizes = ref.record_class_sizes(table, G[p], canonical)
        for name, res in results.items():
            where = f"{name}, individual {p}, G={G[p].tolist()}, models={[m.name for m in models]}"
            assert close(float(res.td[p]), td), f"TD {res.td[p]} != {td} ({where})"
            for j, m in enumerate(models):
                assert close(float(res.ad[p, j]), ad[j]), f"{m.name} AD {res.ad[p, j]} != {ad[j]} ({where})"
            assert bool(res.feasible[p]) == feasible, where
            assert int(res.suppressed[p]) == suppressed, where
            got = backends[name].record_class_sizes(G[p], retained[p])
            assert got.tolist() == sizes, f"record class sizes ({where})"


@pytest.mark.parametrize("seed", range(N_CASES))
def test_backends_agree_with_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    table = random_table(rng)
    models = random_models(rng)
    G, keep = random_population(rng, table, int(rng.integers(4, 9)))
    check_agreement(table, models, G, keep)


@pytest.mark.parametrize("seed", range(3))
def test_backends_agree_on_many_qids(seed: int) -> None:
    """22 QIDs of 8 leaves: the mixed-radix class key overflows int64 (at the bottom node G[0]),
    so classify compresses it and the duckdb backend groups by the tuple of codes."""
    rng = np.random.default_rng(1000 + seed)
    table = random_table(rng, n_qids=22, max_records=300, min_leaves=8)
    assert not make_evaluator("duckdb", table, []).single_key
    models = [build_model(name, p) for name, p in [
        ("k-anonymity", {"k": 2}), ("t-closeness", {"t": 0.5}),
        ("distinct-l-diversity", {"l": 2}), ("entropy-l-diversity", {"l": 1.5}),
    ]]
    G, keep = random_population(rng, table, 6)
    check_agreement(table, models, G, keep)


def test_class_distributed_like_the_source_has_distance_zero() -> None:
    """All at the root, nothing suppressed: one class distributed exactly like Q."""
    rng = np.random.default_rng(7)
    table = random_table(rng, n_qids=2, max_records=40)
    while len(table.sa_values) < 2:
        table = random_table(rng, n_qids=2, max_records=40)
    models = [build_model("t-closeness", {"t": 0.1})]
    G = table.heights.reshape(1, -1)
    for name in ("numba", "duckdb"):
        res = make_evaluator(name, table, models).evaluate(G, table.counts.reshape(1, -1))
        assert res.ad[0, 0] == 0.0, name


def test_duckdb_backend_rejects_a_model_it_has_no_sql_for() -> None:
    from ppdp.errors import SpecError
    from tests.support.toy_models import ToyMinClass

    table = random_table(np.random.default_rng(0))
    odd = ToyMinClass(2)
    with pytest.raises(SpecError, match=r"no SQL for model\(s\) \['toy-min-class'\].*Hint: use evaluator backend 'numba'"):
        make_evaluator("duckdb", table, [odd])


def test_problem_record_class_sizes_follow_s() -> None:
    from ppdp.engine.methods.generalization.problem import Problem

    rng = np.random.default_rng(3)
    table = random_table(rng, n_qids=2, max_records=40)
    while table.counts.max() < 2:
        table = random_table(rng, n_qids=2, max_records=40)
    problem = Problem(table, [build_model("k-anonymity", {"k": 2})])
    g = np.zeros(table.n_qids, dtype=np.int64)
    keep = np.ones(table.n_records, dtype=np.bool_)
    keep[table.offsets[int(np.argmax(table.counts))]] = False  # first record of a row of 2+
    assert problem.record_class_sizes(g, keep).tolist() == ref.record_class_sizes(table, g, keep)
