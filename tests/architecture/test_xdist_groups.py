"""The worker groups of ``make test`` (tests/support/conftest_xdist.py) hold under the installed
pytest and pytest-xdist: a throw-away project with the same conftest hook runs in 2 workers, and
every Spark test, and every test of a listed module-scoped fixture, ran in one worker, with the
``@group`` node-id suffix that xdist's loadgroup scheduler reads (pytest 9.2 ignores the one
xdist 3.8 sets, which split the Spark tests over both workers)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import paths as PATHS

pytest.importorskip("xdist")

CONFTEST = '''
import pytest
from tests.support.conftest_xdist import *  # noqa: F401,F403
from tests.support.conftest_xdist import COSTLY_MODULE_FIXTURES

COSTLY_MODULE_FIXTURES["test_module_things.py"] = "shared"


@pytest.fixture(scope="module")
def shared():
    return object()
'''
RECORD = '''
import os
from pathlib import Path

import pytest


def record(name):
    Path(os.environ["GROUPS_OUT"], name).write_text(os.environ["PYTEST_XDIST_WORKER"])
'''
SPARK = RECORD + '''

@pytest.mark.spark
@pytest.mark.parametrize("i", range(6))
def test_spark(i):
    record(f"spark-{i}")


@pytest.mark.parametrize("database", ["duckdb", "spark"])
@pytest.mark.parametrize("i", range(3))
def test_dialect(i, database):
    record(f"dialect-{database}-{i}")
'''
MODULE = RECORD + '''

@pytest.mark.parametrize("i", range(6))
def test_shared(i, shared):
    record(f"shared-{i}")
'''


def test_spark_and_module_fixture_tests_each_run_in_one_worker(tmp_path: Path) -> None:
    project, out = tmp_path / "project", tmp_path / "out"
    project.mkdir()
    out.mkdir()
    (project / "conftest.py").write_text(CONFTEST)
    (project / "test_spark_things.py").write_text(SPARK)
    (project / "test_module_things.py").write_text(MODULE)
    env = {**os.environ, "GROUPS_OUT": str(out), "PYTHONPATH": os.pathsep.join([str(PATHS.REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup",
                           "-v", "-W", "ignore::pytest.PytestUnknownMarkWarning", str(project)],
                          cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    worker = {p.name: p.read_text() for p in out.iterdir()}
    assert len(worker) == 6 + 6 + 6
    spark = {w for name, w in worker.items() if name.startswith(("spark-", "dialect-spark-"))}
    shared = {w for name, w in worker.items() if name.startswith("shared-")}
    assert len(spark) == 1 and len(shared) == 1, worker
    passed = [line.rstrip() for line in proc.stdout.splitlines() if " PASSED " in line]
    assert len(passed) == 18
    assert sum(line.endswith("@spark") for line in passed) == 9, proc.stdout
    assert sum(line.endswith("@test_module_things.py") for line in passed) == 6, proc.stdout
