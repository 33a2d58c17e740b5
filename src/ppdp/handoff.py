"""A committed release handed to its caller: the window in which an interruption waits.

Once a release run's transaction commits, its version is published. A signal that unwound the
process between that commit and the moment its caller holds the outcome would have the caller
report an interrupted run that published nothing, while the version stands. So a caller that
reports on the run (the CLI) makes the call inside ``expecting()``; the run calls
``committing()`` just before its commit; the caller's signal handler defers its raise while
``holding()``, and raises it once the ``expecting`` block has ended, the outcome stored. A run
that fails after ``committing()`` (its commit refused) calls ``release()`` first. Outside an
``expecting`` block (the Python API, dbt) nothing is held.

Signals are handled in the main thread, where these calls are made: plain module state.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

_EXPECTING = [0]  # open expecting() blocks
_HOLDING = [False]


@contextmanager
def expecting() -> Iterator[None]:
    """The caller will hold a committed run's outcome when this block ends."""
    _EXPECTING[0] += 1
    try:
        yield
    finally:
        _EXPECTING[0] -= 1
        if not _EXPECTING[0]:
            _HOLDING[0] = False


def committing() -> None:
    """The run is about to commit: from here an interruption waits for the caller (when one
    expects the outcome)."""
    if _EXPECTING[0]:
        _HOLDING[0] = True


def release() -> None:
    """The run ends without handing over a committed outcome (its commit failed)."""
    _HOLDING[0] = False


def holding() -> bool:
    return _HOLDING[0]
