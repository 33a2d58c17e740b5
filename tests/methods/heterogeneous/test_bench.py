"""benchmarks/hetero.py: the SPARCS reading and the paper-range verdicts the report states."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import hetero

HEADER = "Length of Stay,Total Charges,Total Costs,APR Severity of Illness Code,Age Group,Gender"


def test_sparcs_top_coded_stay_and_dollar_amounts_are_read_as_numbers(tmp_path):
    # The raw file writes the top code as "120 +" and money as "$1234.50" (sparcs/README.md).
    (tmp_path / "sparcs").mkdir()
    (tmp_path / "sparcs" / "part-1.csv").write_text(
        HEADER + "\n"
        "120 +,$1000.50,$900.25,4,70 or Older,F\n"
        "3,$20.00,$10.00,1,0 to 17,M\n"
    )
    ds = hetero.load_sparcs(tmp_path)
    assert ds is not None and ds.table.n == 2
    rows = sorted(map(tuple, ds.table.numeric.tolist()))
    assert rows == [(3.0, 20.0, 10.0, 1.0), (120.0, 1000.5, 900.25, 4.0)]
    assert ds.table.n_categories == (2, 2)


def test_missing_sparcs_is_reported_not_fatal(tmp_path):
    assert hetero.load_sparcs(tmp_path) is None


@pytest.mark.parametrize(("rpis", "objective", "verdict", "reaches"), [
    ([4.0, 4.9], "gcp", "below the paper's range", False),  # mean 4.45 < 5
    ([5.0, 7.0], "gcp", "within the paper's range", True),
    ([60.0, 70.0], "sil", "above the paper's range", True),  # above the range still reaches it
    ([10.0, 20.0], "sil", "below the paper's range", False),
])
def test_rpi_verdict_against_the_papers_range(rpis, objective, verdict, reaches):
    runs = [{"dataset": "d", "n": 10, "k": 3, "initial": "k-member", "objective": objective,
             "scan": "near-32", "seed": s, "initial_value": 1.0, "ls_value": 1.0 - r / 100, "rpi": r,
             "build_seconds": 0.0, "best_found_at_s": 1.0, "ls_seconds": 5.0} for s, r in enumerate(rpis)]
    (row,) = hetero.summarize(runs)
    assert row["verdict"] == verdict
    assert row["reaches_paper"] is reaches
    assert row["mean_rpi"] == pytest.approx(np.mean(rpis))


@pytest.mark.parametrize(("best_at", "verdict"), [(4.5, True), (3.9, False), (0.2, False)])
def test_a_run_is_still_improving_when_its_last_gain_is_in_the_final_fifth(best_at, verdict):
    assert hetero._still_improving({"best_found_at_s": best_at, "ls_seconds": 5.0}) is verdict


def test_thinned_history_keeps_the_ends_and_at_most_one_point_per_5_percent_of_time():
    # One improvement every millisecond for 5 s: 5,001 points.
    history = [(i / 1000, i * 10, 1.0 - i / 10_000) for i in range(5001)]
    thin = hetero.thin_history(history)
    assert thin[0] == [0.0, 0, 1.0] and thin[-1] == [5.0, 50_000, 0.5]
    times = [h[0] for h in thin[1:-1]]
    assert all(b >= a * 1.05 for a, b in zip(times, times[1:], strict=False))
    assert len(thin) < 200  # log(5 / 0.001) / log(1.05) ~ 175


def test_adult14_reads_all_fourteen_attributes_of_the_uci_file(tmp_path):
    # The paper's adult: every attribute a QID, "?" a category of its own, seeded order.
    (tmp_path / "uci").mkdir()
    (tmp_path / "uci" / "adult.data").write_text(
        "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, "
        "United-States, <=50K\n"
        "50, ?, 83311, Bachelors, 13, Married-civ-spouse, Exec-managerial, Husband, White, Male, 0, 0, 13, "
        "United-States, <=50K\n\n")
    ds = hetero.load_adult14(tmp_path)
    assert ds.table.n == 2 and ds.table.d == 14
    assert sorted(ds.table.numeric[:, 0].tolist()) == [39.0, 50.0]  # age
    assert ds.table.n_categories[0] == 2  # workclass: State-gov and "?"
