"""``ProcessExecutor``: one worker process per island, the islands joined in a ring of pipes.

The master's side: it takes workers from its ``IslandRuntime``'s pool (or starts them), sends
each its island, starts the run, and collects the islands' reports; the workers' side is
worker.py. Processes and pipes live in this subpackage only.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from collections import deque
from collections.abc import Generator
from multiprocessing.connection import Connection, wait
from typing import Any

from ppdp.engine.methods.generalization.optimizers.evolutionary.executors.pool import WorkerProcess
from ppdp.engine.methods.generalization.optimizers.evolutionary.executors.wire import unpack_reports
from ppdp.engine.methods.generalization.optimizers.evolutionary.executors.worker import usable_cores
from ppdp.engine.methods.generalization.optimizers.evolutionary.island import (
    EpochReport,
    IslandSpec,
    warm_up_island,
)
from ppdp.engine.methods.generalization.optimizers.evolutionary.runtime import (
    IslandRuntime,
    current_runtime,
)
from ppdp.engine.methods.generalization.optimizers.remote import ProblemSpec
from ppdp.engine.methods.generalization.problem import Problem


class ProcessExecutor:
    """One worker process per island (ID-DGA's master/slave model), the islands joined in a ring
    of pipes: island i sends its best straight to island i + 1 after each epoch, and its report
    to the master, which only collects (see ``worker.ring_epochs``).

    Workers come from the pool of ``runtime`` (default: the current ``IslandRuntime``) for
    ``start_method``; with no pool they are started for the run and stopped at ``close``. Fresh
    workers load the kernels the master compiled first (``warm_up_island``); their start-up time
    goes into the runtime's measurements for ``choose_executor``.
    """

    name = "process"
    parallel = True

    def __init__(self, problem: Problem, *, start_method: str = "spawn", runtime: IslandRuntime | None = None) -> None:
        self.problem = problem
        self.start_method = start_method
        self.ctx = mp.get_context(start_method)
        self.runtime = current_runtime() if runtime is None else runtime
        self.pool = self.runtime.pool(start_method)
        self.fresh = 0  # workers started for this run (not taken idle from a pool)
        self.workers: list[WorkerProcess] = []
        self.running: list[bool] = []  # ``run`` sent and ``done`` not yet received, per island
        self.failed = False

    def _recv(self, i: int) -> tuple[str, Any]:
        w = self.workers[i]
        try:
            kind, payload = w.conn.recv()
        except (EOFError, OSError):
            raise RuntimeError(f"island {i}: worker process died (exit code {w.proc.exitcode})") from None
        if kind == "error":
            raise RuntimeError(f"island {i} failed in its worker process:\n{payload}")
        if kind == "done":
            self.running[i] = False
        return kind, payload

    def start(self, specs: list[IslandSpec]) -> None:
        n = len(specs)
        self.running = [False] * n
        ring: list[tuple[Connection, Connection]] = []
        try:
            self.fresh = n - min(self.pool.idle_count(), n) if self.pool is not None else n
            if self.fresh:  # compile (first run) or load the kernels here once, before the workers load them
                warm_up_island(self.problem, specs[0])
            t0 = time.perf_counter()
            self.workers = (self.pool.acquire(n) if self.pool is not None
                            else [WorkerProcess(self.ctx, f"ppdp-island-{spec.index}") for spec in specs])
            # (reader, writer) of the pipe i -> i + 1; made after the workers exist, so that a
            # forked worker does not inherit (and keep open) the ends of the other islands' pipes.
            ring = [self.ctx.Pipe(duplex=False) for _ in range(n)] if n > 1 else []
            pspec = ProblemSpec.of(self.problem)
            for i, spec in enumerate(specs):
                pred, succ = (ring[i - 1][0], ring[i][1]) if n > 1 else (None, None)
                self.workers[i].conn.send(("setup", pspec, spec, pred, succ, n))
            for i in range(n):
                self._recv(i)
            if self.fresh:
                rounds = -(-self.fresh // usable_cores())
                self.runtime.measurements.worker_start_seconds[self.start_method] = (time.perf_counter() - t0) / rounds
        except BaseException:
            self.failed = True
            raise
        finally:
            for reader, writer in ring:  # the workers hold their own copies now
                reader.close()
                writer.close()

    def epochs(self, generations: int, lag: int = 0) -> Generator[list[EpochReport], None, None]:
        n = len(self.workers)
        index: dict[object, int] = {w.conn: i for i, w in enumerate(self.workers)}
        pending: list[deque[EpochReport]] = [deque() for _ in range(n)]
        try:
            for i, w in enumerate(self.workers):
                w.conn.send(("run", generations, lag))
                self.running[i] = True
            while True:
                live = [w.conn for i, w in enumerate(self.workers) if self.running[i]]
                if not live:
                    raise RuntimeError("the islands stopped before every island was exhausted")
                for conn in wait(live):
                    i = index[conn]
                    kind, payload = self._recv(i)
                    if kind == "ok":
                        pending[i].extend(unpack_reports(payload))
                while all(pending):
                    yield [q.popleft() for q in pending]
        except GeneratorExit:
            raise
        except BaseException:
            self.failed = True
            raise

    def _finish_runs(self, timeout: float = 30.0) -> bool:
        """Stop the islands' loops (they may be a few cheap epochs past the master's last one)
        and read until each says ``done``. False when a worker does not answer or fails."""
        try:
            for i, w in enumerate(self.workers):
                if self.running[i]:
                    w.conn.send(("abort",))
            for i, w in enumerate(self.workers):
                while self.running[i]:
                    if not w.conn.poll(timeout):
                        return False
                    self._recv(i)
        except (RuntimeError, OSError, EOFError):
            return False
        return True

    def close(self) -> None:
        if not self.workers:
            return
        healthy = not self.failed and self._finish_runs()
        workers, self.workers = self.workers, []
        if self.pool is not None and healthy:
            self.pool.release(workers)
            return
        for w in workers:
            if healthy:
                w.stop()
            else:
                w.kill()
