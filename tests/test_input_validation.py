"""Brief H3: every bad input is refused before any write, with one line; CLI hygiene.

Each test names the finding it reproduces (review findings 4, 5, 7, 10, 15, 16).
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from engine.errors import DataError, SpecError
from engine.release import run_release
from engine.spec import load_spec
from tests.conftest import load_adult, snapshot, write_spec

SMALL = ["age", "sex", "race"]
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def small_db(tmp_path) -> Path:
    return load_adult(tmp_path / "small.duckdb", rows=500)


def cli(*args: str, **kw) -> subprocess.CompletedProcess:
    """``python -m engine.cli`` from the repository root (so this checkout's code runs)."""
    return subprocess.run([sys.executable, "-m", "engine.cli", *args], capture_output=True, text=True, cwd=ROOT, **kw)


def assert_one_line_error(proc: subprocess.CompletedProcess, *fragments: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ppdp: error: "), proc.stderr
    for f in fragments:
        assert f in lines[0], lines[0]


# --- finding 10: impossible parameters must not publish an empty release ----------------------


def test_tiny_t_is_satisfied_by_a_nonempty_release(small_db, tmp_path):
    """t = 1e-9: the root class (distributed exactly like Q) has distance 0, so S* must keep
    records. The oracle's sum of q^2 over absent values cancelled to ~1e-17 (distance ~3e-9)."""
    spec = write_spec(tmp_path / "s.toml", db=small_db, qids=SMALL, output="tiny_t",
                      models='[[privacy.models]]\nname = "t-closeness"\nt = 1e-9\n')
    out = run_release(load_spec(spec), progress=False)
    assert out.run.verification["passed"]
    assert out.run.metrics["released_records"] > 0
    assert out.run.verification["checks"][0]["ad"] <= 1e-9
