"""Release metrics (engine/metrics): computed once per release, and no BLAS for small vectors.

The workload error is checked against a record-by-record evaluation written independently of
the vectorized code; the "no BLAS" rule is checked by making np.dot fail (the small
dot products went to multi-threaded OpenBLAS, 0.1 s quiet and up to 3.3 s under load).
"""

from __future__ import annotations

import duckdb
import numpy as np
import pytest

from ppdp.engine.core.encoding import COUNT_COLUMN, encode_histogram
from ppdp.engine.core.hierarchy import read_arx_csv
from ppdp.engine.kernels import classes as K
from ppdp.engine.methods.generalization.metrics import (
    METRICS,
    random_workload,
    report_metrics,
    workload_errors,
)
from tests.support import paths as PATHS
from tests.support.spies import count_calls

ADULT = PATHS.ADULT
QIDS = ["age", "education", "marital-status", "race", "sex"]


def adult_table(rows: int):
    hs = [read_arx_csv(ADULT / f"adult_hierarchy_{q}.csv", q) for q in QIDS]
    cols = ", ".join(f'CAST("{q}" AS VARCHAR) AS "{q}"' for q in QIDS + ["salary-class"])
    hist = duckdb.connect().sql(
        f"SELECT {cols}, count(*) AS {COUNT_COLUMN} FROM (SELECT * FROM read_csv('{ADULT / 'adult.csv'}', delim=';', "
        f"all_varchar=true) LIMIT {rows}) GROUP BY ALL"
    ).pl()
    return encode_histogram(hist, QIDS, ["salary-class"], hs)


@pytest.fixture(scope="module")
def table():
    return adult_table(300)


def release(table):
    g = np.array([1, 1, 0, 0, 1])
    retained = table.counts.copy()
    retained[::5] = 0  # suppress some rows so estimate and truth differ in both ways
    return g, retained


def workload_errors_by_record(table, g, retained, *, queries, seed):
    """Record by record: a kept record matches a predicate on QID q with the share of the leaves
    of its generalized value that the predicate selects; the truth uses its own leaf."""
    hs = table.hierarchies
    out = []
    for preds in random_workload(table, queries=queries, seed=seed):
        truth = estimate = 0.0
        for row in range(table.n_rows):
            hit, share = 1.0, 1.0
            for q, mask in preds:
                leaf = int(table.codes[row, q])
                value = hs[q].level_codes[int(g[q])][leaf]
                leaves = [i for i, v in enumerate(hs[q].level_codes[int(g[q])]) if v == value]
                hit *= float(mask[leaf])
                share *= sum(bool(mask[i]) for i in leaves) / len(leaves)
            truth += hit * int(table.counts[row])
            estimate += share * int(retained[row])
        out.append(abs(estimate - truth) / max(truth, 1.0))
    return np.array(out)


def test_workload_errors_match_record_by_record(table):
    g, retained = release(table)
    got = workload_errors(table, g, retained, queries=25, seed=3)
    want = workload_errors_by_record(table, g, retained, queries=25, seed=3)
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12)
    assert (want > 0).any()  # the release really distorts some answers


def test_no_blas_dot_in_workload_or_upper_bound(monkeypatch):
    fresh = adult_table(200)  # level_td is cached per table: a new one computes it here

    def refuse(*args, **kwargs):
        raise AssertionError("np.dot called: small vectors must not go to multi-threaded BLAS")

    monkeypatch.setattr(np, "dot", refuse)
    g, retained = release(fresh)
    assert workload_errors(fresh, g, retained, queries=20, seed=1).shape == (20,)
    level_td = fresh.level_td
    # level 0 of a QID with nothing suppressed: every record has weight 1, so TD = nR
    assert level_td[:, 0] == pytest.approx([fresh.n_records] * fresh.n_qids)


def test_report_metrics_compute_td_once(table, monkeypatch):
    g, retained = release(table)
    names = ("td", "query_precision", "suppressed", "workload_error")
    separately = {n: METRICS.get(n)(table, g, retained) for n in names}
    calls = count_calls(monkeypatch, K, "transparency")
    got = report_metrics(table, g, retained, names)
    assert len(calls) == 1  # query precision reuses TD
    assert list(got) == list(names)
    for n in names:
        assert got[n] == pytest.approx(separately[n], rel=1e-12), n
    n_all = table.n_records + table.excluded_null_rows
    assert got["query_precision"] == pytest.approx(100.0 * got["td"] / (n_all * table.n_qids))
    assert got["suppressed"] == int(table.counts[::5].sum())


@pytest.mark.parametrize("rows", [200, 30_162])
def test_level_td_is_the_per_level_sum_bit_for_bit(rows):
    """Every level's TD at once (one product per QID, summed along its rows) is each level's own
    1-D product summed, bit for bit: the bound Flash's kernel prunes with is unchanged."""
    fresh = adult_table(rows)
    gen, weight, _ = fresh.lookup
    want = np.zeros(gen.shape[:2])
    for q in range(fresh.n_qids):
        per_leaf = np.bincount(fresh.codes[:, q], weights=fresh.counts.astype(np.float64), minlength=weight.shape[2])
        for j in range(int(fresh.heights[q]) + 1):
            want[q, j] = float(np.multiply(weight[q, j], per_leaf).sum())
    assert fresh.level_td.tobytes() == want.tobytes()
