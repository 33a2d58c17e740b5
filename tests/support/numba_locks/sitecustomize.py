"""One compilation of each cached Numba kernel across every process of a test run.

Python imports ``sitecustomize`` at start-up from sys.path: the test run puts this folder on
PYTHONPATH (tests/support/compile_lock.py), so that the processes a test starts (the pytest-xdist
workers, Ray's actors, ``ppdp`` and ``dbt`` subprocesses) all take a per-kernel file lock around
Numba's compilation. With a cold cache, the processes meet the same kernels at the same time and
each compiled the whole set itself: Ray's three actors and the test process compiled ID-DGA's
kernels at the same time, several times over. Under the lock one process compiles and the others
wait, then Numba's own ``compile`` finds the overload in the on-disk cache the first one saved.
The compiled code is Numba's either way.

Nothing happens unless PPDP_TEST_NUMBA_LOCKS names the lock folder, and nothing is imported at
start-up: the hook patches ``Dispatcher.compile`` when a process imports Numba. Test machinery
only: the package never sees this folder.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.abc
import os
import sys
import time
from pathlib import Path

__all__ = ["install", "LOCKS_ENV"]

LOCKS_ENV = "PPDP_TEST_NUMBA_LOCKS"
WAIT_SECONDS = 900.0  # past this, compile without the lock (a stuck holder must not hang the run)
_DISPATCHER = "numba.core.dispatcher"


def _acquire(handle, deadline: float) -> bool:
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)


def install(lock_dir: Path, dispatcher_module=None) -> None:
    """Wrap Numba's ``Dispatcher.compile`` with a per-kernel file lock in ``lock_dir``."""
    from numba.core.caching import NullCache

    Dispatcher = (dispatcher_module or sys.modules[_DISPATCHER]).Dispatcher
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


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Installs the lock right after ``numba.core.dispatcher`` has been executed."""

    def __init__(self, lock_dir: Path) -> None:
        self.lock_dir = lock_dir

    def find_spec(self, fullname, path, target=None):
        if fullname != _DISPATCHER:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                break
        else:
            return None
        sys.meta_path.remove(self)  # once per process
        loader, lock_dir = spec.loader, self.lock_dir
        execute = loader.exec_module

        class _Loader(importlib.abc.Loader):
            def create_module(self, spec):
                return loader.create_module(spec)

            def exec_module(self, module):
                execute(module)
                install(lock_dir, module)

        spec.loader = _Loader()
        return spec


if __name__ == "sitecustomize" and os.environ.get(LOCKS_ENV):  # not when imported by the plugin
    if _DISPATCHER in sys.modules:  # pragma: no cover - Numba imported before site (not in practice)
        install(Path(os.environ[LOCKS_ENV]))
    else:
        sys.meta_path.insert(0, _PatchOnImport(Path(os.environ[LOCKS_ENV])))
