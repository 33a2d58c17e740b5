"""The paper benchmark's run journal: what --resume reads back after an interrupted run."""

from __future__ import annotations

import gzip
import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


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
