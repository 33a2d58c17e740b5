"""encode_histogram against a plain-Python encoding: leaf codes by dictionary lookup, joint SA
codes by sorted value, rows in (codes, SA code) order, NULL-QID rows withheld or refused, and
values that are not leaves refused naming them."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from ppdp.engine.core.encoding import COUNT_COLUMN, _canonical_order, encode_histogram
from ppdp.errors import DataError, HierarchyError
from tests.oracles.test_flash import random_hierarchy


def random_histogram(seed: int, nulls: bool, sensitive: list[str]):
    """A shuffled histogram (one row per distinct QID and SA combination) with its hierarchies."""
    rng = np.random.default_rng(seed)
    nq = int(rng.integers(1, 6))
    names = [f"q{q}" for q in range(nq)]
    hs = [random_hierarchy(rng, n, int(rng.integers(1, 9)), int(rng.integers(1, 4))) for n in names]
    n = int(rng.integers(1, 300))
    data: dict[str, list] = {}
    for name, h in zip(names, hs, strict=True):
        data[name] = [None if nulls and rng.random() < 0.05 else h.leaves[int(rng.integers(len(h.leaves)))] for _ in range(n)]
    data["s1"] = [str(int(rng.integers(3))) for _ in range(n)]
    data["s2"] = [["x", "y"][int(rng.integers(2))] for _ in range(n)]
    frame = pl.DataFrame(data, schema={c: pl.String for c in data})
    hist = frame.group_by(names + sensitive).agg(pl.len().cast(pl.Int64).alias(COUNT_COLUMN))
    return hist.sample(fraction=1.0, shuffle=True, seed=seed), names, hs


def reference(hist: pl.DataFrame, names, hs, sensitive):
    rows = [r for r in hist.iter_rows(named=True) if all(r[c] is not None for c in names)]
    sa_values = sorted({tuple(r[c] for c in sensitive) for r in rows}) if sensitive else [()]
    sa_index = {t: i for i, t in enumerate(sa_values)}
    # (codes, SA code) is unique per histogram row: the sort never compares the rows themselves
    keyed = sorted(([h.leaf_code[r[c]] for c, h in zip(names, hs, strict=True)],
                    sa_index[tuple(r[c] for c in sensitive)], r) for r in rows)
    return keyed, sa_values


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("sensitive", [[], ["s1"], ["s1", "s2"]])
def test_encoding_matches_plain_python(seed, sensitive):
    hist, names, hs = random_histogram(seed, seed % 2 == 1, sensitive)
    keyed, sa_values = reference(hist, names, hs, sensitive)
    n_null = int(hist.filter(pl.any_horizontal([pl.col(c).is_null() for c in names]))[COUNT_COLUMN].sum())
    if n_null:
        with pytest.raises(DataError, match=f"{n_null} source rows have NULL"):
            encode_histogram(hist, names, sensitive, hs)
    t = encode_histogram(hist, names, sensitive, hs, null_policy="suppress")
    assert t.excluded_null_rows == n_null
    assert t.codes.dtype == np.int32 and t.codes.flags.c_contiguous and t.sa.dtype == np.int32 and t.counts.dtype == np.int64
    assert t.codes.tolist() == [k[0] for k in keyed]
    assert t.sa.tolist() == [k[1] for k in keyed]
    assert t.counts.tolist() == [k[2][COUNT_COLUMN] for k in keyed]
    assert list(t.sa_values) == sa_values
    assert t.values.columns == names + sensitive
    assert t.values.rows() == [tuple(k[2][c] for c in names + sensitive) for k in keyed]


def test_values_that_are_not_leaves_are_named():
    hist, names, hs = random_histogram(3, False, [])
    bad = hist.with_columns(pl.when(pl.int_range(0, hist.height) % 2 == 0).then(pl.lit("nope"))
                            .otherwise(pl.col(names[0])).alias(names[0]))
    with pytest.raises(HierarchyError, match=f"Column '{names[0]}' has value\\(s\\) 'nope' that are not leaves"):
        encode_histogram(bad, names, [], hs)


@pytest.mark.parametrize("seed", range(5))
def test_canonical_order_mixed_radix_and_lexsort_agree(seed):
    """The mixed-radix key (radices within 62 bits) and np.lexsort (beyond) order rows alike."""
    rng = np.random.default_rng(seed)
    n_leaves = [int(x) for x in rng.integers(1, 40, size=5)]
    rows = {tuple(int(rng.integers(n)) for n in n_leaves) + (int(rng.integers(3)),) for _ in range(500)}
    table = np.array(sorted(rows, key=lambda r: rng.random()), dtype=np.int32)
    columns = [np.ascontiguousarray(table[:, q]) for q in range(5)]
    sa = np.ascontiguousarray(table[:, 5])
    small = _canonical_order(columns, n_leaves, sa, 3)
    huge = _canonical_order(columns, [1 << 20] * 5, sa, 1 << 20)  # 2**120: the lexsort branch
    assert small.tolist() == huge.tolist()
    assert [tuple(r) for r in table[small].tolist()] == sorted(map(tuple, table.tolist()))
