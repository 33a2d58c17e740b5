"""One compilation of each cached Numba kernel across the processes of a test run.

The lock itself, and why, is in tests/support/numba_locks/sitecustomize.py. Here the process
that starts the run (pytest-xdist's controller, or a plain ``pytest``) names a lock folder in
PPDP_TEST_NUMBA_LOCKS and puts the sitecustomize folder first on PYTHONPATH, before it starts
any worker: every Python process started from then on (workers, Ray actors, subprocesses) takes
the same locks. The process itself installs the lock directly.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.support.numba_locks.sitecustomize import LOCKS_ENV, install

__all__ = ["pytest_configure", "SITE_DIR"]

SITE_DIR = Path(__file__).parent / "numba_locks"


def pytest_configure(config: pytest.Config) -> None:
    if not os.environ.get(LOCKS_ENV):  # the first process of the run (workers inherit the folder)
        lock_dir = tempfile.mkdtemp(prefix="ppdp-numba-locks-")
        os.environ[LOCKS_ENV] = lock_dir
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(SITE_DIR), os.environ.get("PYTHONPATH")) if p)
        config.add_cleanup(lambda: shutil.rmtree(lock_dir, ignore_errors=True))
    install(Path(os.environ[LOCKS_ENV]))
