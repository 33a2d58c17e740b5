"""The process's C heap: freed memory kept for the next allocation instead of handed back to the
operating system at once.

A search's kernels allocate their scratch arrays on every call (Numba's runtime takes them from
malloc) and free them on return. Under glibc's defaults a freed top of the heap larger than
twice the mapping threshold goes back to the system, and so does each block that was mapped on
its own, so the next call faults every page it touches in again: for a table of some ten thousand
histogram rows, most of the time of evaluating one lattice node. ``keep_freed_memory`` raises
both thresholds (``mallopt``), as a warm JVM keeps its heap: what one call freed, the next
reuses, with up to ``TRIM_THRESHOLD`` kept free.

Process-wide and once per process: the CLI and every release run (engine/release/run.py) call
it; ``PPDP_KEEP_HEAP=0`` leaves the allocator as it found it. Nothing changes where the C
library is not glibc (macOS, musl) or refuses a value.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from typing import Any

# glibc's mallopt parameters (malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3

# Blocks below this are taken from the heap, not mapped one by one (glibc's largest allowed
# value on 64-bit systems: HEAP_MAX_SIZE / 2); larger arrays (a 10M-row table's) are still mapped.
MMAP_THRESHOLD = 32 << 20
# The most freed memory the heap keeps at its top before returning it to the system.
TRIM_THRESHOLD = 128 << 20

_LOCK = threading.Lock()
_DONE: list[bool] = []


def keep_freed_memory() -> bool:
    """Set the heap's thresholds once per process; whether they are set (False: opted out with
    ``PPDP_KEEP_HEAP=0``, no glibc, or a value refused)."""
    with _LOCK:
        if not _DONE:
            _DONE.append(_apply())
        return _DONE[0]


def _apply() -> bool:
    if os.environ.get("PPDP_KEEP_HEAP", "1").strip() == "0":
        return False
    mallopt = _mallopt()
    if mallopt is None:
        return False
    # mmap first: a refused value leaves glibc's defaults (and its dynamic threshold) whole
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))


def _mallopt() -> Any:
    """glibc's ``int mallopt(int, int)``, or None."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
        # gnu_get_libc_version exists only in glibc: musl's mallopt is a stub that does nothing
        libc.gnu_get_libc_version  # noqa: B018
    except (OSError, AttributeError):
        return None
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return mallopt
