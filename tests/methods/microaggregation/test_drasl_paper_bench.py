"""benchmarks/drasl_paper.py: a static algorithm's checkpoint (the changed table clustered once) is
the state that re-clustering after every change ends with, and every part runs end to end on a
few hundred adult rows and feeds the report (verdicts first)."""

from __future__ import annotations

import json

import pytest

from benchmarks import drasl as bench
from benchmarks import drasl_paper as dp
from ppdp.engine.methods.microaggregation import dynamic
from ppdp.engine.methods.microaggregation.algorithms import ALGORITHMS, Params
from ppdp.engine.methods.microaggregation.dynamic import Modification, NewRecord


@pytest.fixture(scope="module")
def adult():
    return bench.load_adult(bench.data_dir(None))


def _groups(state):
    return sorted(sorted(state.member_ids(i)) for i in range(len(state.groups)))


@pytest.mark.parametrize("method", ["mdav", "ika", "oka"])
def test_static_checkpoint_is_reclustering_after_every_change(adult, method):
    ds = adult.head(260)
    most = 10
    base_n, deletes, modifies, new_sa = bench.plan_changes(ds, most, 0)
    base = ds.head(base_n)
    held, held_sa = ds.rows[base_n:], ds.sa[base_n:]
    schema, enc = bench._encode(base)
    cat = ds.catalogue
    algo = ALGORITHMS.get(method)
    params = Params(k=8, seed=0)
    start = algo.first_release(enc, cat.codes(base.sa), list(range(base_n)), cat, params)
    for kind in ("insert", "delete", "modify"):
        state = start
        for j in range(most):
            if kind == "insert":
                state, row = dynamic.encode_record(state, schema, dict(zip(ds.columns, held[j], strict=True)))
                state = algo.insert(state, NewRecord(base_n + j, row, cat.code(held_sa[j])))
            elif kind == "delete":
                state = algo.delete(state, deletes[j])
            elif j % 2 == 0:
                state, row = dynamic.encode_record(state, schema, dict(zip(ds.columns, held[j], strict=True)))
                state = algo.modify(state, modifies[j], Modification(qids=row))
            else:
                state = algo.modify(state, modifies[j], Modification(sa=cat.code(new_sa[j])))
        once = dp._static_checkpoint(algo, start, ds, schema, kind, most, base_n, held, held_sa, deletes, modifies,
                                     new_sa, params)
        assert _groups(once) == _groups(state), kind
        assert dp.describe(once)["average_il"] == pytest.approx(dp.describe(state)["average_il"], rel=1e-12)


@pytest.mark.slow
def test_every_part_runs_and_the_report_opens_with_the_verdicts(tmp_path):
    out, report = tmp_path / "paper", tmp_path / "report.md"
    common = ["--datasets", "adult", "--out", str(out)]
    assert dp.main(["first", "--rows", "300", "--k", "4", "8", *common]) == 0
    assert dp.main(["updates", "--rows", "300", "--sweep", "3", "6", *common]) == 0
    assert dp.main(["tradeoff", "--rows", "200", "--out", str(out)]) == 0
    assert dp.main(["audit", "--rows", "200", "--out", str(out)]) == 0
    assert dp.main(["report", "--out", str(out), "--report", str(report)]) == 0
    first = json.loads((out / "first.json").read_text())["rows"]
    assert {(r["method"], r["k"]) for r in first} == {(m, k) for m in dp.METHODS for k in (4, 8)}
    for r in first:
        assert r["groups"] == 300 // r["k"]  # Alg. 1-style: floor(|T| / K) groups
        assert r["average_il"] == pytest.approx(r["groups"] / r["records"] * r["mean_group_il"], rel=1e-12)
    updates = json.loads((out / "updates.json").read_text())["rows"]
    for u in updates:
        for kind, sign in (("insert", 1), ("delete", -1), ("modify", 0)):
            assert [p["records"] for p in u["sweeps"][kind]] == [294 + sign * 3, 294 + sign * 6]
            assert all(p["forged_rows"] == 0 for p in u["sweeps"][kind]) == (not ALGORITHMS.get(u["method"]).forges)
    audit = json.loads((out / "audit.json").read_text())["rows"]
    assert audit["twin_matches_cluster_py"] is True
    assert {r["reading"] for r in audit["eq14"]} == {"ours", "literal", "plus", "ln"}
    text = report.read_text().splitlines()
    assert text[2] == "## Verdicts on the paper's three claims"
    assert [line[:3] for line in text[4:7]] == ["1. ", "2. ", "3. "]
    assert all(name in report.read_text() for name in ("fig05.png", "fig12.png", "table9.png", "pareto.png"))
