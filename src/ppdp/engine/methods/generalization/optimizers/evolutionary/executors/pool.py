"""Island worker processes as the master sees them: one ``WorkerProcess`` (the process and the
master's end of its pipe), and a ``WorkerPool`` that keeps idle ones alive across runs.

Which pool a run uses is the business of its ``IslandRuntime`` (evolutionary/runtime.py).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
from multiprocessing.context import BaseContext
from multiprocessing.process import BaseProcess

from ppdp.engine.kernels import worker_entry

# What a worker process runs once ``worker_entry`` has set its Numba cache directory.
SERVE = "ppdp.engine.methods.generalization.optimizers.evolutionary.executors.worker:serve"


def numba_cache_dir() -> str | None:
    """This process's Numba cache directory (None: Numba's default, next to the sources)."""
    from numba.core import config as numba_config

    # CACHE_DIR is set by Numba's config reader at run time (no static attribute for mypy).
    cache_dir: str = getattr(numba_config, "CACHE_DIR", "")
    return cache_dir or None


class WorkerProcess:
    """One worker process and the master's end of its pipe.

    The process starts in ``worker_entry.run`` with this process's Numba cache directory, so
    that it loads the kernels the master compiled instead of compiling them again; ``target``
    is what it then runs (``serve``: the island worker).
    """

    def __init__(self, ctx: BaseContext, name: str, *, target: str = SERVE) -> None:
        parent, child = ctx.Pipe()
        # (typeshed's BaseContext lacks Process, which every concrete context has)
        self.proc: BaseProcess = ctx.Process(  # type: ignore[attr-defined]
            target=worker_entry.run, args=(numba_cache_dir(), target, child), daemon=True, name=name)
        self.proc.start()
        child.close()
        self.conn = parent

    def stop(self) -> None:
        """Ask the process to exit and wait for it (terminate it if it does not)."""
        try:
            self.conn.send(None)
        except (OSError, ValueError):
            pass
        self.proc.join(timeout=5)
        self.kill()

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.terminate()
            self.proc.join(timeout=5)
        self.conn.close()


class WorkerPool:
    """Island worker processes of one start method kept alive across runs.

    A run takes as many idle workers as it has islands (starting new ones when needed) and
    gives them back at the end; a worker whose run failed is stopped, not reused. At most
    ``max_idle`` workers wait idle (the others are stopped when given back). ``close`` stops
    the idle workers; workers given back after it are stopped too.
    """

    def __init__(self, start_method: str = "spawn", max_idle: int = 8) -> None:
        self.start_method = start_method
        self.ctx = mp.get_context(start_method)
        self.idle: list[WorkerProcess] = []
        self.started = 0
        self.max_idle = max_idle
        self.pid = os.getpid()  # a forked child must not use its parent's workers
        self.closed = False
        self._lock = threading.Lock()

    def acquire(self, n: int) -> list[WorkerProcess]:
        out: list[WorkerProcess] = []
        with self._lock:
            while self.idle and len(out) < n:
                w = self.idle.pop(0)
                if w.proc.is_alive():
                    out.append(w)
                else:
                    w.kill()
            fresh = n - len(out)
            first = self.started
            self.started += fresh
        out.extend(WorkerProcess(self.ctx, f"ppdp-island-pool-{first + i}") for i in range(fresh))
        return out

    def idle_count(self) -> int:
        """Idle workers still alive (what the next run can take without starting processes)."""
        with self._lock:
            return sum(1 for w in self.idle if w.proc.is_alive())

    def release(self, workers: list[WorkerProcess]) -> None:
        with self._lock:
            keep = 0 if self.closed else max(self.max_idle - len(self.idle), 0)
            self.idle.extend(workers[:keep])
            extra = workers[keep:]
        for w in extra:
            w.stop()

    def close(self) -> None:
        with self._lock:
            idle, self.idle = self.idle, []
            self.closed = True
        for w in idle:
            w.stop()

