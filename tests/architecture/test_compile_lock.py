"""tests/support/compile_lock.py: two processes that meet the same cached kernel with one empty
NUMBA_CACHE_DIR compile it once between them; the other loads what the first saved, and both
get the kernel's result (a throw-away module in a temporary directory)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support import paths as PATHS

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
from tests.support.compile_lock import install
install(Path(sys.argv[1]))
import kernel
value = kernel.total(1000)
print(json.dumps({"value": value, "hits": sum(kernel.total.stats.cache_hits.values()),
                  "misses": sum(kernel.total.stats.cache_misses.values())}))
'''


def test_two_processes_compile_a_cached_kernel_once(tmp_path: Path) -> None:
    (tmp_path / "kernel.py").write_text(KERNEL)
    cache, locks = tmp_path / "cache", tmp_path / "locks"
    cache.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CACHE")}
    env |= {"NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": os.pathsep.join([str(tmp_path), str(PATHS.REPO)])}
    procs = [subprocess.Popen([sys.executable, "-c", RUN, str(locks)], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outs]
    runs = [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]
    assert [r["value"] for r in runs] == [sum(i * i for i in range(1000))] * 2
    assert sorted((r["misses"], r["hits"]) for r in runs) == [(0, 1), (1, 0)]
