"""tests/support/numba_locks: two processes that meet the same cached kernel with one empty
NUMBA_CACHE_DIR compile it once between them; the other loads what the first saved, and both
get the kernel's result (a throw-away module in a temporary directory). The same holds for
processes that only inherit the run's environment (the lock folder and the sitecustomize folder
on PYTHONPATH), as Ray's actors and ``ppdp`` subprocesses do."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support import paths as PATHS
from tests.support.compile_lock import SITE_DIR
from tests.support.numba_locks.sitecustomize import LOCKS_ENV

KERNEL = '''
from numba import njit


@njit(cache=True)
def total(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
'''
RUN = '''
import json, sys
from pathlib import Path
from tests.support.numba_locks.sitecustomize import install
if sys.argv[1] != '-':
    install(Path(sys.argv[1]))
import kernel
value = kernel.total(1000)
print(json.dumps({"value": value, "hits": sum(kernel.total.stats.cache_hits.values()),
                  "misses": sum(kernel.total.stats.cache_misses.values())}))
'''


def _two_runs(tmp_path: Path, *, inherited: bool) -> list[dict]:
    (tmp_path / "kernel.py").write_text(KERNEL)
    cache, locks = tmp_path / "cache", tmp_path / "locks"
    cache.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CACHE") and k != LOCKS_ENV}
    path = [str(tmp_path), str(PATHS.REPO)]
    env |= {"NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": os.pathsep.join([str(SITE_DIR), *path] if inherited else path)}
    if inherited:
        env[LOCKS_ENV] = str(locks)
    procs = [subprocess.Popen([sys.executable, "-c", RUN, "-" if inherited else str(locks)], cwd=tmp_path, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outs]
    assert locks.is_dir()  # the lock was taken, not skipped
    return [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]


def test_two_processes_compile_a_cached_kernel_once(tmp_path: Path) -> None:
    runs = _two_runs(tmp_path, inherited=False)
    assert [r["value"] for r in runs] == [sum(i * i for i in range(1000))] * 2
    assert sorted((r["misses"], r["hits"]) for r in runs) == [(0, 1), (1, 0)]


def test_processes_that_inherit_the_run_environment_compile_once(tmp_path: Path) -> None:
    runs = _two_runs(tmp_path, inherited=True)
    assert [r["value"] for r in runs] == [sum(i * i for i in range(1000))] * 2
    assert sorted((r["misses"], r["hits"]) for r in runs) == [(0, 1), (1, 0)]


def test_the_hook_waits_for_numba_and_imports_nothing_at_start_up(tmp_path: Path) -> None:
    env = dict(os.environ) | {LOCKS_ENV: str(tmp_path / "locks"), "PYTHONPATH": str(SITE_DIR)}
    code = ("import sys; before = 'numba' in sys.modules; import numba.core.dispatcher as d; "
            "print(before, d.Dispatcher.compile._ppdp_compile_lock)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["False", "True"]
