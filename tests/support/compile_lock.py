"""One compilation of each cached Numba kernel across the pytest-xdist workers of a run.

The workers share NUMBA_CACHE_DIR, but with a cold cache both meet the same kernels at the same
time (they run neighbouring tests) and each compiled the whole set itself: on 2 cores that is
the costliest part of a cold run, paid twice. Here a worker compiles a kernel that has an
on-disk cache (``cache=True``) under an exclusive file lock named after the kernel: the other
worker waits, then Numba's own ``compile`` finds the overload in the cache the first one saved.
The compiled code is Numba's either way. Installed only in xdist workers.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import time
from pathlib import Path

import pytest

__all__ = ["pytest_configure", "install"]

WAIT_SECONDS = 900.0  # past this, compile without the lock (a stuck holder must not hang the run)


def _acquire(handle, deadline: float) -> bool:
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)


def install(lock_dir: Path) -> None:
    """Wrap ``numba`` Dispatcher.compile with a per-kernel file lock in ``lock_dir``."""
    from numba.core.caching import NullCache
    from numba.core.dispatcher import Dispatcher

    lock_dir.mkdir(parents=True, exist_ok=True)
    original = Dispatcher.compile
    if getattr(original, "_ppdp_compile_lock", False):
        return

    def compile(self, sig):  # noqa: A001 (Numba's method name)
        if isinstance(getattr(self, "_cache", None), NullCache):  # not cached: nothing to share
            return original(self, sig)
        name = f"{self.py_func.__module__}.{self.py_func.__qualname__}"
        path = lock_dir / (hashlib.sha1(name.encode()).hexdigest()[:20] + ".lock")
        with open(path, "w") as handle:
            locked = _acquire(handle, time.monotonic() + WAIT_SECONDS)
            try:
                return original(self, sig)
            finally:
                if locked:
                    fcntl.flock(handle, fcntl.LOCK_UN)

    compile._ppdp_compile_lock = True  # type: ignore[attr-defined]
    Dispatcher.compile = compile  # type: ignore[method-assign]


def pytest_configure(config: pytest.Config) -> None:
    # a worker's basetemp is <the run's basetemp>/popen-gwN: the lock folder sits beside them
    if os.environ.get("PYTEST_XDIST_WORKER") and config.option.basetemp:
        install(Path(config.option.basetemp).parent / "numba-compile-locks")
