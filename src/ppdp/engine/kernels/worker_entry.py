"""Entry point of ppdp's worker processes: point Numba at the master's cache directory, then run
the worker's code.

A spawned worker is a fresh interpreter: Numba takes its cache directory from NUMBA_CACHE_DIR
when the kernel modules are imported (else the directory next to the sources). A master whose
directory is set in ``numba.config`` only (not in the environment) would send its workers to
another cache, where each compiles every kernel again (far longer than the run itself).
So the master passes its directory as an argument, and ``run`` sets it in the worker's own
environment before it imports the worker's module (and through it Numba and the kernels); the
master's environment is never changed.

This module imports nothing of ppdp's (``ppdp`` and ``ppdp.engine`` are light), so that
unpickling the worker's target does not load Numba before the directory is set. (A main module
that spawn re-imports first, e.g. a script that imports ppdp's kernels at its top, has loaded
those with the inherited environment; set NUMBA_CACHE_DIR in the environment for such scripts.)
"""

from __future__ import annotations

import importlib
import os
import sys


def run(numba_cache_dir: str | None, target: str, *args: object) -> None:
    """Set this process's Numba cache directory (None: leave it), then call ``target``
    (``"package.module:function"``) with ``args``."""
    if numba_cache_dir:
        os.environ["NUMBA_CACHE_DIR"] = numba_cache_dir  # this worker's environment, read by Numba below
        if "numba" in sys.modules:  # already imported (see the module docstring): for later kernels
            from numba.core import config

            config.reload_config()
    module, _, name = target.partition(":")
    getattr(importlib.import_module(module), name)(*args)
