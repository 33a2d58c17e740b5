"""examples/sparcs_microaggregation.py runs end to end: v1 and v2 of a DRASL release over the SPARCS
sample, with a batch of SQL changes between them, both verified, and a non-empty delta."""

from __future__ import annotations

import polars as pl

from examples.sparcs_microaggregation import CHANGES, main


def test_sparcs_example_publishes_two_verified_versions_with_a_delta(tmp_path, capsys):
    out = main(tmp_path)
    v1, v2 = out["v1"], out["v2"]
    assert (v1.status, v1.version, v2.status, v2.version) == ("succeeded", 1, "succeeded", 2)
    assert v1.verification["passed"] and v2.verification["passed"]
    assert all(c["passed"] for c in v2.verification["method_checks"])
    cert1, cert2 = out["certificates"]
    assert (cert1["version"], cert2["version"]) == (1, 2) and cert2["verification_passed"]
    assert cert2["models"][0]["achieved"] >= 8  # every published group of v2 holds K = 8 or more
    # the method saw the batch: the new discharges (minus those the DELETE also hit) and deletions
    updates = v2.metrics["updates"]
    assert 190 <= updates["inserted"] <= 200 and updates["deleted"] > 0
    assert updates["modified_sensitive"] > 0 and updates["modified_qids"] > 0
    # the delta holds v2's changes only, and the published rows grew by what it added minus removed
    delta = out["delta"]
    assert delta.height > 0 and delta["version"].to_list() == [2] * delta.height
    n = {op: int(delta.filter(pl.col("op") == op)["rows"].sum()) for op in ("+", "-")}
    assert n["+"] > 0 and cert2["released_rows"] == cert1["released_rows"] + n["+"] - n["-"]
    printed = capsys.readouterr().out
    assert "v2: succeeded" in printed and all(what in printed for what, _, _ in CHANGES)
    assert not list(tmp_path.iterdir())  # the example removed its database
