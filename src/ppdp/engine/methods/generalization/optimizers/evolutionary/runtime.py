"""Where runs with islands in worker processes take their workers, and what runs measured for
the next ones: an ``IslandRuntime``.

A runtime holds a ``WorkerPool`` per start method (workers stay alive across runs, so only the
first run in processes pays for starting them; or none: every run starts its own workers and
stops them) and the ``Measurements`` of ``executor = "auto"`` (how long workers took to start,
how far the serial estimates were off). Its lifecycle is explicit: create it, use it, ``close``
it (which stops its idle workers); as a context manager it is also the current runtime within
the ``with`` block::

    with IslandRuntime() as runtime:          # workers started once for the block
        run_optimizer("id-dga", problem, budget=..., params={"executor": "process"})
    with IslandRuntime(pooled=False):         # no pool: what a run costs in a new process
        ...

Runs outside any block use the default runtime (``default_runtime()``), created on first use
and kept for the life of the process, so that an application's runs share warm workers. Nothing
closes it at exit: its workers are daemon processes, which ``multiprocessing`` stops when this
process exits; call ``default_runtime().close()`` to stop them earlier (the next run then
makes a new default runtime). ``run_islands``, ``ProcessExecutor``, ``choose_executor`` and
``measure_worker_start`` also take a runtime explicitly.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from types import TracebackType

from ppdp.engine.methods.generalization.optimizers.evolutionary.executors.pool import WorkerPool


@dataclass
class Measurements:
    """What runs of a runtime measured, for the estimates of ``executor = "auto"`` (auto.py)."""

    # Start method -> seconds for a round of fresh workers (as many as cores) to get ready
    # (``ProcessExecutor.start``, ``measure_worker_start``); auto's prior until then.
    worker_start_seconds: dict[str, float] = field(default_factory=dict)
    # Run time over the probe's estimate of the last local runs chosen by "auto" (auto.py says why).
    serial_correction: deque[float] = field(default_factory=lambda: deque(maxlen=5))


class IslandRuntime:
    """Worker pools (one per start method, made on first use; none when ``pooled`` is False)
    and ``Measurements``; see the module docstring. ``measurements`` may be shared with another
    runtime (by default a runtime starts with none)."""

    def __init__(self, *, pooled: bool = True, max_idle: int = 8, measurements: Measurements | None = None) -> None:
        self.pooled = pooled
        self.max_idle = max_idle
        self.measurements = Measurements() if measurements is None else measurements
        self.closed = False
        self._pools: dict[str, WorkerPool] = {}
        self._lock = threading.Lock()
        self._tokens: list[Token[IslandRuntime | None]] = []

    def pool(self, start_method: str = "spawn") -> WorkerPool | None:
        """The pool runs with this start method take their workers from (None: fresh workers)."""
        if not self.pooled:
            return None
        with self._lock:
            if self.closed:
                raise RuntimeError("this IslandRuntime is closed: its worker pools are gone")
            pool = self._pools.get(start_method)
            if pool is None or pool.pid != os.getpid():  # (a forked child: not its parent's workers)
                pool = self._pools[start_method] = WorkerPool(start_method, self.max_idle)
            return pool

    def close(self) -> None:
        """Stop the idle workers of every pool; workers of a run still going stop at its end."""
        with self._lock:
            pools, self._pools = list(self._pools.values()), {}
            self.closed = True
        for pool in pools:
            if pool.pid == os.getpid():
                pool.close()

    def __enter__(self) -> IslandRuntime:
        self._tokens.append(_CURRENT.set(self))
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        _CURRENT.reset(self._tokens.pop())
        self.close()


# The runtime of the innermost ``with IslandRuntime()`` block (per thread and task), if any.
_CURRENT: ContextVar[IslandRuntime | None] = ContextVar("ppdp_island_runtime", default=None)
_DEFAULT: IslandRuntime | None = None  # the default runtime, once made
_DEFAULT_LOCK = threading.Lock()


def default_runtime() -> IslandRuntime:
    """The runtime of runs outside any ``with IslandRuntime()`` block: made on first use (again
    after it was closed), kept until this process exits."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None or _DEFAULT.closed:
            _DEFAULT = IslandRuntime()
        return _DEFAULT


def current_runtime() -> IslandRuntime:
    """The runtime of the innermost ``with IslandRuntime()`` block, else the default one."""
    runtime = _CURRENT.get()
    return runtime if runtime is not None else default_runtime()
