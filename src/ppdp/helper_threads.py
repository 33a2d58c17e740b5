"""The process's helper threads: one pool, made on first use, for work that runs beside the
calling thread while the GIL is released (a DuckDB query turning its rows into Arrow, a nogil
kernel, an Arrow compute function)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

_LOCK = threading.Lock()
_POOL: list[tuple[int, ThreadPoolExecutor]] = []  # (threads, the pool); it lives with the process


def helper_pool(workers: int = 1) -> ThreadPoolExecutor:
    """The pool, with at least ``workers`` threads (a larger one replaces it; the old one's
    threads end with the work they hold)."""
    with _LOCK:
        if not _POOL or _POOL[0][0] < workers:
            n = max(workers, 1)
            _POOL[:] = [(n, ThreadPoolExecutor(max_workers=n, thread_name_prefix="ppdp-helper"))]
        return _POOL[0][1]
