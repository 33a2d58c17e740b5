"""The paper benchmark's helpers: the run journal --resume reads back, and the tally of the papers' claims."""

from __future__ import annotations

import gzip
import importlib.util
import json
import sys

import pytest

from tests.support import paths as PATHS

BENCH = PATHS.REPO / "benchmarks"


@pytest.fixture(scope="module")
def papers():
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("papers_bench", BENCH / "papers.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod  # dataclasses look their module up while the class is built
        spec.loader.exec_module(mod)
        yield mod
    finally:
        sys.modules.pop("papers_bench", None)
        sys.path.remove(str(BENCH))


def _line(key: str, td: float) -> str:
    return json.dumps({"key": key, "result": {"td": td}}) + "\n"


def test_torn_last_line_is_ignored(papers, tmp_path):
    journal = tmp_path / "runs.jsonl"
    journal.write_text(_line("a", 1.0) + _line("b", 2.0) + '{"key": "c", "res', encoding="utf-8")
    assert papers._read_journal(journal) == {"a": {"td": 1.0}, "b": {"td": 2.0}}


def test_gzipped_checkpoint_is_read_and_live_journal_wins(papers, tmp_path):
    journal = tmp_path / "runs.jsonl"
    (tmp_path / "runs.jsonl.gz").write_bytes(gzip.compress((_line("a", 1.0) + _line("b", 2.0)).encode()))
    journal.write_text(_line("b", 5.0) + _line("c", 3.0), encoding="utf-8")
    assert papers._read_journal(journal) == {"a": {"td": 1.0}, "b": {"td": 5.0}, "c": {"td": 3.0}}
    journal.unlink()  # a fresh clone has only the committed checkpoint
    assert papers._read_journal(journal) == {"a": {"td": 1.0}, "b": {"td": 2.0}}


def test_task_key_separates_runs(papers):
    base = {"family": "haef", "instance": "D1", "t": 0.1, "label": "HAEF", "name": "haef", "params": {},
            "seed": 1001, "run": 1, "budget": 18000}
    assert papers._task_key(base) == papers._task_key(dict(base))
    assert papers._task_key(base) != papers._task_key({**base, "seed": 1002, "run": 2})
    assert papers._task_key(base) != papers._task_key({**base, "t": 0.2})


def _case(**scores: list[float]) -> dict:
    return {"algos": {k: {"mean": sum(v) / len(v), "scores": v} for k, v in scores.items()}}


def test_claim_tally_splits_cases_by_side_and_significance(papers):
    far_ahead = _case(A=[10.0 + i for i in range(10)], B=[1.0 + i / 10 for i in range(10)])
    slightly_behind = _case(A=[5.0, 6.0, 7.0], B=[5.5, 6.0, 7.0])
    tie = _case(A=[3.0, 3.0], B=[3.0, 3.0])
    far_behind = _case(A=[1.0] * 10, B=[9.0] * 10)
    missing = {"algos": {"A": {"mean": 1.0, "scores": [1.0]}}}  # rival not run: not counted
    t = papers.claim_tally([far_ahead, slightly_behind, tie, far_behind, missing], "A", "B")
    assert (t["cases"], t["ahead_sig"], t["ahead"], t["tie"], t["behind"], t["behind_sig"]) == (5 - 1, 1, 0, 1, 1, 1)
    # 100 (mean A - mean B) / mean B per counted case
    assert t["diff"][0] == pytest.approx(100 * (14.5 - 1.45) / 1.45)
    assert t["diff"][2] == 0.0 and t["diff"][3] == pytest.approx(-100 * 8 / 9)
    papers.CLAIMS["test"] = ("A", ["B"])
    try:
        rendered = papers._claims_table("test", [far_ahead, far_behind])
    finally:
        del papers.CLAIMS["test"]
    assert "| A ahead of B | 2 | 1 | 0 | 0 | 0 | 1 |" in rendered and "does not hold" in rendered


@pytest.mark.parametrize("family", ["id-dga", "haef"])
def test_missing_data_directory_is_a_clear_error(papers, tmp_path, family):
    """Without the data the benchmarks stop with where they looked and how to point them at it."""
    inst = sys.modules["instances"]
    with pytest.raises(SystemExit) as err:
        inst.build(family, tmp_path / "nowhere")
    msg = str(err.value)
    assert str(tmp_path / "nowhere") in msg and "--data" in msg and "PPDP_DATA" in msg
