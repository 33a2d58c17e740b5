"""sdcMicro's IL1s, eigenvalue loss and summary.micro deviations (ppdp.engine.utility.sdc)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from ppdp.engine.utility.sdc import eigen, il1, il1s, summary_micro

ROOT = Path(__file__).resolve().parents[2]


def _data(n: int = 60, seed: int = 11) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = rng.lognormal(3.0, 1.0, (n, 3))
    base[:, 1] += 0.5 * base[:, 0]  # correlated columns
    return base


def _microaggregated(x: np.ndarray, size: int = 3) -> np.ndarray:
    xm = x.copy()
    for j in range(x.shape[1]):
        order = np.argsort(x[:, j], kind="stable")
        for g in range(0, len(order), size):
            idx = order[g:g + size]
            xm[idx, j] = x[idx, j].mean()
    return xm


def test_unmodified_data_lose_nothing():
    # sdcMicro tests/testthat/test_ai_utility.R line 60: IL1 is 0 for the unmodified data
    x = _data()
    s = summary_micro(x, x)
    assert il1(x, x) == 0.0 and s.il1s == 0.0 and s.eigen == pytest.approx(0.0, abs=1e-12)
    assert s.amean == s.amedian == s.devvar == s.acov == s.acor == s.acors == s.atotals == 0.0


def test_il1s_and_eigen_follow_their_definitions():
    x = _data()
    xm = _microaggregated(x)
    sd = x.std(axis=0, ddof=1)
    assert il1s(x, xm) == pytest.approx(sum(abs(x[i, j] - xm[i, j]) / (sd[j] * np.sqrt(2))
                                            for i in range(len(x)) for j in range(3)), rel=1e-12)
    e1 = np.sort(np.linalg.eigvals(np.corrcoef(x, rowvar=False)).real)[::-1]
    e2 = np.sort(np.linalg.eigvals(np.corrcoef(xm, rowvar=False)).real)[::-1]
    assert eigen(x, xm) == pytest.approx(float(np.sum(np.abs(e1 - e2) / e1)), rel=1e-9)


def test_spearman_deviation_against_scipy():
    stats = pytest.importorskip("scipy.stats")
    x = np.round(_data(), 0)  # ties
    xm = _microaggregated(x)
    r1, r2 = stats.spearmanr(x).statistic, stats.spearmanr(xm).statistic
    assert summary_micro(x, xm).acors == pytest.approx(float(np.sum(np.abs(r1 - r2) / np.abs(r1)) / 6), rel=1e-12)


SDCMICRO = os.environ.get("PPDP_SDCMICRO_GITDIR", "")


@pytest.mark.skipif(shutil.which("Rscript") is None or not Path(SDCMICRO, "HEAD").exists(),
                    reason="needs R and a git directory of sdcTools/sdcMicro in PPDP_SDCMICRO_GITDIR")
def test_equal_to_sdcmicros_own_code_on_its_test_data():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from sdcmicro_measures import compare

    for row in compare(SDCMICRO):
        assert row["rel_diff"] <= 1e-9 or row["abs_diff"] <= 1e-12, row
