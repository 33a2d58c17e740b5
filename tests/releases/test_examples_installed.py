"""Every example runs to its end from an installed ppdp, outside the checkout.

An installed ppdp holds the package's modules and the package data that pyproject.toml lists,
nothing else of the repository: ``installed`` lays out exactly that in a folder of its own
(what the wheel carries, without building one), and each example is copied to another temporary
folder and run there with the venv's Python and ``PYTHONPATH`` naming only that folder. So an
example that reads ``src/...``, the repository's data, or a path relative to the checkout fails
here, and so does one that stops before its end (postgres_walkthrough.py's second ``job run`` is
the documented skip, exit 99).

``PPDP_TEST_CLI_PATH=/old/checkout/src`` takes the package and the examples from that checkout
instead (to show that these tests failed there).
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from ppdp.engine.kernels.cache import STAMP_SUFFIX
from tests.support.paths import REPO

CHECKOUT = Path(os.environ["PPDP_TEST_CLI_PATH"]).resolve().parent if os.environ.get("PPDP_TEST_CLI_PATH") else REPO


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A folder holding what installing ppdp puts on sys.path: ``ppdp/`` with its modules and the
    package data of pyproject.toml's [tool.setuptools.package-data], nothing more."""
    site = tmp_path_factory.mktemp("site-packages")
    src = CHECKOUT / "src"
    data = tomllib.loads((CHECKOUT / "pyproject.toml").read_text())["tool"]["setuptools"].get("package-data", {})
    for path in (src / "ppdp").rglob("*"):
        if path.is_file() and path.parent.name == "__pycache__" and (
                path.suffix in (".nbi", ".nbc") or path.name.endswith(f".{STAMP_SUFFIX}")):
            # Numba's compiled kernels, as the warm-up of an installed ppdp leaves them beside its
            # modules (indexed by each module's mtime and size, which copy2 keeps), with the
            # stamps of engine/kernels/cache.py's guard (without a stamp the guard drops the
            # module's kernels): without them every example here would recompile every kernel.
            (site / path.relative_to(src)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, site / path.relative_to(src))
            continue
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        rel = path.relative_to(src)
        package = next((p for p in sorted(data, key=len, reverse=True)
                        if rel.parts[:-1][: len(p.split("."))] == tuple(p.split("."))), None)
        within = "/".join(rel.parts[len(package.split(".")):]) if package else ""
        if path.suffix == ".py" or (package and any(fnmatch.fnmatch(within, g) for g in data[package])):
            (site / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, site / rel)
    return site


def environment(site: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return env | {"PYTHONPATH": str(site), "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", **extra}


def outside(tmp_path: Path) -> Path:
    """A copy of the checkout's examples/ in a folder that is not the checkout."""
    target = tmp_path / "examples"
    shutil.copytree(CHECKOUT / "examples", target,
                    ignore=shutil.ignore_patterns("__pycache__", "target", "dbt_packages", "logs", "*.duckdb*"))
    return target


def test_the_installed_layout_is_the_one_imported(installed, tmp_path):
    found = subprocess.run([sys.executable, "-c", "import ppdp, ppdp.dbt; print(ppdp.__file__); print(ppdp.dbt.package_path())"],
                           capture_output=True, text=True, cwd=tmp_path, env=environment(installed))
    assert found.returncode == 0, found.stderr
    module, package = found.stdout.split()
    assert Path(module).is_relative_to(installed) and (Path(package) / "dbt_project.yml").exists()


@pytest.mark.slow
def test_sparcs_example_runs_to_its_end_installed(installed, tmp_path):
    examples = outside(tmp_path)
    proc = subprocess.run([sys.executable, str(examples / "sparcs_microaggregation.py")], capture_output=True, text=True,
                          cwd=tmp_path, env=environment(installed), timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "v2: succeeded" in proc.stdout and "removed" in proc.stdout.splitlines()[-1]


@pytest.mark.slow
@pytest.mark.postgres
def test_postgres_walkthrough_runs_to_its_end_installed(installed, tmp_path, postgres_server):
    """``postgres_server`` only to skip (or fail under PPDP_REQUIRE_POSTGRES) where PostgreSQL
    cannot start: the walkthrough starts a server of its own."""
    examples = outside(tmp_path)
    proc = subprocess.run([sys.executable, str(examples / "postgres_walkthrough.py")], capture_output=True, text=True,
                          cwd=tmp_path, env=environment(installed), timeout=1800)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-3000:])
    out = proc.stdout
    assert "skipped" in out and "# Release certificate" in out and "5. server stopped and removed" in out
    assert "UNEXPECTED" not in out


@pytest.mark.slow
def test_dbt_example_builds_installed(installed, tmp_path):
    dbt = Path(sys.executable).with_name("dbt")
    if not dbt.exists():
        if os.environ.get("PPDP_REQUIRE_DBT", "") not in ("", "0"):
            pytest.fail("PPDP_REQUIRE_DBT=1 but dbt is not installed beside this Python")
        pytest.skip("dbt is not installed (pip install 'ppdp[dbt]')")
    project = outside(tmp_path) / "dbt"
    # as the example's packages.yml tells a user of an installed ppdp to do
    package = subprocess.run([sys.executable, "-c", "import ppdp.dbt; print(ppdp.dbt.package_path())"],
                             capture_output=True, text=True, cwd=tmp_path, env=environment(installed)).stdout.strip()
    env = environment(installed, PPDP_DBT_PACKAGE=package)
    for step in ("deps", "build"):
        proc = subprocess.run([str(dbt), step, "--profiles-dir", "."], capture_output=True, text=True, cwd=project,
                              env=env, timeout=900)
        assert proc.returncode == 0, proc.stdout[-3000:]
    assert "ERROR=0" in proc.stdout and "SKIP=0" in proc.stdout
