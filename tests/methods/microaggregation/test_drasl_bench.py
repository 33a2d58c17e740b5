"""benchmarks/drasl.py end to end on 300 adult rows (the bundled UCI file): every registered
method gets every metric of the paper (Total_Pr, Average_IL, forged rows, time) at every K and
sweep point, the attack harness's mean and worst case per change kind, and the 12 figures."""

from __future__ import annotations

import json

import pytest

from benchmarks import drasl
from ppdp.engine.methods.microaggregation.algorithms import ALGORITHMS


@pytest.mark.slow
def test_quick_run_reports_every_metric_for_every_method(tmp_path):
    out = tmp_path / "drasl"
    rc = drasl.main(["--quick", "--datasets", "adult", "--rows", "300", "--k", "4", "8", "--sweep", "3", "6",
                     "--out", str(out)])
    assert rc == 0
    data = json.loads((out / "drasl.json").read_text())
    methods = ALGORITHMS.names()
    assert data["methods"] == methods
    first = {(r["method"], r["k"]): r for r in data["first_release"]}
    assert set(first) == {(m, k) for m in methods for k in (4, 8)}
    for r in first.values():
        assert r["rows"] == 300 and r["records"] == 300 and r["forged_rows"] == 0
        assert r["total_pr"] >= 0 and 0 < r["average_il"] < 1 and r["seconds"] > 0
        assert r["groups"] <= 300 // r["k"]
    assert {u["method"] for u in data["updates"]} == set(methods)
    for u in data["updates"]:
        assert u["base_rows"] == 294
        for kind, delta in (("insert", 1), ("delete", -1), ("modify", 0)):
            points = u["sweeps"][kind]
            assert [p["changes"] for p in points] == [3, 6]
            for p in points:
                assert p["records"] == 294 + delta * p["changes"]
                assert {"total_pr", "average_il", "forged_rows", "seconds"} <= set(p)
            a = u["attack"][kind]
            assert a["changes"] == 6
            assert 0 <= a["p_exact_mean"] <= a["p_exact_max"] <= 1
            assert a["p_exact_max"] <= a["p_category_max"] <= 1
            assert u["op_ms"][kind]["median"] > 0
    assert data["speed"] == []  # quick mode skips the 30,139-row speed row
    assert sorted(data["figures"]) == [f"fig{i:02d}.png" for i in range(5, 17)]
    for f in data["figures"]:
        assert (out / f).stat().st_size > 1000
    report = (out / "report.md").read_text()
    assert "Table 9" in report and "Attack harness" in report
