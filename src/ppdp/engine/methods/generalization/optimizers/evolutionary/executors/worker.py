"""The worker process's side of ``ProcessExecutor``: serve the master's requests (``serve``)
and run an island's epochs on the ring of pipes (``ring_epochs``), sending the master reports.

Keeping the worker processes busy (the compute between two migrations is a millisecond or two
on the ID-DGA instances; a message costs tens of microseconds, a process wake-up more):

* The islands form a ring of pipes: after each epoch, island i sends its best straight to
  island i + 1 and waits only for island i - 1's best, never for the master or for a barrier
  over all islands. The master only collects reports. The worker ends its run by itself once
  the ring knows that every island is exhausted (a counter travels with the migrants), so an
  island may run a few cheap epochs (receive a migrant, nothing to evaluate) past the last one
  the master uses: results are those of ``LocalExecutor``'s lock step.
* A report is small: the number of evaluations, the island's new local bests only (the global
  best dominates every other row, so the master's history is the one of merging every
  evaluation), its best individual and, every ``diversity_every`` generations, the population's
  G and per-record S counts. Reports travel in batches (wire.py), sent while the island waits
  for its predecessor.
* Workers load the Numba kernels before reporting ready, so start-up is apart from the
  algorithm's run time.

A worker process starts in ``ppdp.engine.kernels.worker_entry.run``, which points Numba at the master's
cache directory before this module (and so Numba) is imported, then calls ``serve``.
"""

from __future__ import annotations

import os
import queue
import threading
import time
import traceback
from multiprocessing.connection import Connection, wait

from ppdp.engine.methods.generalization.optimizers.evolutionary.executors.wire import (
    decode_migrant,
    encode_migrant,
    pack_reports,
)
from ppdp.engine.methods.generalization.optimizers.evolutionary.island import (
    EpochReport,
    Individual,
    Island,
    warm_up_island,
)

# Largest pickled migrant written straight into the ring pipe (Linux pipes buffer 64 KiB). An
# island runs at most lag epochs ahead of its predecessor, so at most (n - 1) * lag of them
# ahead of its successor: a pipe holds at most n * lag + 2 unread migrants. With every message
# below half the buffer divided by that, islands blocked writing to their successor cannot close
# a cycle; a larger migrant (S of a very large table) goes through a sender thread so that the
# island keeps reading its predecessor.
_PIPE_BYTES = 64 * 1024


def direct_send_bytes(n: int, lag: int) -> int:
    """Largest migrant an island of ``n`` with this ``lag`` writes straight into its ring pipe."""
    return _PIPE_BYTES // (2 * (n * lag + 2))


class RingSender:
    """The writing end of an island's ring pipe: migrants to the successor, in order."""

    def __init__(self, conn: Connection, direct_bytes: int) -> None:
        self.conn = conn
        self.direct_bytes = direct_bytes
        self.queue: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()  # used once a thread sends
        self.thread: threading.Thread | None = None
        # The successor closed its end: it stopped (aborted, or failed and reports that itself
        # to the master). Not this island's error: it stops too, without a second report.
        self.broken = False

    def send(self, data: bytes) -> None:
        if self.broken:
            return
        if self.thread is None and len(data) <= self.direct_bytes:
            self._write(data)
            return
        if self.thread is None:
            self.thread = threading.Thread(target=self._loop, name="ppdp-ring-sender", daemon=True)
            self.thread.start()
        self.queue.put(data)

    def _write(self, data: bytes) -> bool:
        try:
            self.conn.send_bytes(data)
            return True
        except OSError:  # BrokenPipeError, ConnectionResetError: the successor stopped
            self.broken = True
            return False

    def _loop(self) -> None:
        while (data := self.queue.get()) is not None:
            if not self._write(data):
                return

    def close(self) -> None:
        """Send what is queued, then close: the successor reads end-of-file after the last migrant."""
        if self.thread is not None:
            self.queue.put(None)
            self.thread.join()
        self.conn.close()


# Reports travel to the master in batches, sent while the island waits for its predecessor
# (never between an epoch and the migrant it owes its successor) once this many seconds have
# passed since the last batch, and at once when the island is exhausted. Every batch wakes the
# master, which then takes a core from the islands; on the ID-DGA instances 5 ms and 50 ms
# give the same run times within the noise, 50 ms the steadier hops.
_REPORT_SECONDS = 0.05
# How long an island polls for its predecessor's migrant before blocking in the kernel, when the
# islands have a core each (waking a blocked process costs more than an epoch's messages).
_SPIN_SECONDS = 0.0005


def ring_epochs(conn: Connection, island: Island, pred: Connection | None, succ: Connection | None, n: int,
                generations: int, lag: int = 0) -> None:
    """One run of an island in its worker: epochs until the ring is done, without the master.

    After each epoch the island sends its best to the next island, then waits for its
    predecessor's best; its reports go to the master in batches while it waits (``_REPORT_SECONDS``).
    Each migrant carries ``chain``: how many islands in a row along the ring, ending with the
    sender, were exhausted at their epochs (the island's own epoch, its predecessor's previous
    one, ...). Exhaustion is permanent, so ``chain >= n`` means that every island is exhausted:
    the master, which stops at the first epoch where all are, has every report it needs, and
    the island stops (at most n cheap epochs after that one). A message from the master during
    the run asks it to stop early (``abort``). With ``lag`` > 0 the island reads, after epoch e,
    the migrant its predecessor sent after epoch e - lag (none for the first ``lag`` epochs), so
    it waits only when it is ``lag`` epochs ahead.
    """
    sender = RingSender(succ, direct_send_bytes(n, lag)) if succ is not None else None
    epoch = 0
    spin = _SPIN_SECONDS if n <= usable_cores() else 0.0
    migrant: Individual | None = None
    sent: Individual | None = None  # the last migrant sent, and received: an unchanged best
    received: Individual | None = None  # travels as b"S" (no copy of S every epoch)
    chain = 0
    reports: list[EpochReport] = []
    flushed = time.perf_counter()
    ok = False
    try:
        while True:
            report = island.run(generations, migrant)
            epoch += 1
            chain = chain + 1 if report.exhausted else 0
            if sender is not None:
                sender.send(encode_migrant(report.best, sent, chain))
                sent = report.best
            report.best = None  # the master does not need it
            reports.append(report)
            if chain >= n or conn.poll() or (sender is not None and sender.broken):  # done, aborted, or the successor stopped
                break
            ready = pred is not None and pred.poll()
            # An exhausted island's reports go at once: the master may be waiting for them.
            if report.exhausted or (not ready and time.perf_counter() - flushed >= _REPORT_SECONDS):
                conn.send(("ok", pack_reports(reports)))
                reports, flushed = [], time.perf_counter()
            if pred is None or epoch <= lag:  # one island, or no migrant due yet (lag)
                migrant, chain = None, 0
                continue
            ready = ready or pred.poll()
            if not ready and spin:
                deadline = time.perf_counter() + spin
                while not ready and time.perf_counter() < deadline:
                    ready = pred.poll()
            if not ready and conn in wait([pred, conn]):
                break  # aborted
            try:
                migrant, chain = decode_migrant(pred.recv_bytes(), received)
                received = migrant
            except EOFError:  # the predecessor stopped: it was aborted, or the ring is done
                break
        ok = True
    finally:
        if sender is not None:
            sender.close()
        if pred is not None:
            if ok:  # read the predecessor's last migrants until it closes its end
                try:
                    while True:
                        pred.recv_bytes()
                except (EOFError, OSError):
                    pass
            pred.close()
    if conn.poll():
        conn.recv()  # the abort, if any
    if reports:
        conn.send(("ok", pack_reports(reports)))
    conn.send(("done", None))


def usable_cores() -> int:
    """Cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def serve(conn: Connection) -> None:
    """Worker process: serve ``setup`` (build the problem and an island, receive the ring pipe
    ends) and ``run`` (the island's epochs, see ``ring_epochs``) until told to stop (None).
    The process outlives a run, so a ``WorkerPool`` reuses it."""
    island: Island | None = None
    pred: Connection | None = None
    succ: Connection | None = None
    n = 1
    try:
        while True:
            msg = conn.recv()
            if msg is None:
                break
            kind = msg[0]
            if kind == "warm":  # load the kernels of ``spec``'s island only (``measure_worker_start``)
                _, pspec, spec = msg
                warm_up_island(pspec.build(), spec)
                conn.send(("ready", None))
            elif kind == "setup":
                _, pspec, spec, pred, succ, n = msg
                problem = pspec.build()
                warm_up_island(problem, spec)
                island = spec.build(problem)
                conn.send(("ready", None))
                # The master sends "run" as soon as every island is ready: wait for it awake
                # (a blocked process takes a while to wake; the run's clock is already going).
                deadline = time.perf_counter() + _SPIN_SECONDS * 4
                while not conn.poll() and time.perf_counter() < deadline:
                    pass
            elif kind == "run":
                if island is None:
                    raise RuntimeError("island worker: 'run' before 'setup'")
                ring_epochs(conn, island, pred, succ, n, msg[1], msg[2])
                island, pred, succ = None, None, None
            # anything else (an ``abort`` that arrived after the run ended) is ignored
    except (EOFError, KeyboardInterrupt):
        pass
    except BaseException:  # noqa: BLE001 - report everything to the master
        try:
            conn.send(("error", traceback.format_exc()))
        except (OSError, EOFError):
            pass
    finally:
        conn.close()
