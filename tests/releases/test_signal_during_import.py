"""A SIGINT or SIGTERM that lands while a module is being imported interrupts the command once the
import has ended, not inside it: raised out of a C extension's initialisation (DuckDB's module
imports what it needs while it starts) the exception aborted the process with SIGABRT (exit -6)
instead of ending it with INTERRUPTED (130), which tests/releases/test_bad_input.py's probe of
six signalled runs met when a signal landed in ``import duckdb``."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

import pytest

from ppdp.engine.app import cli
from ppdp.engine.app.outcome import Interrupted

SLOW_MODULE = """
import os, signal, time
os.kill(os.getpid(), signal.SIGTERM)  # lands here, inside this module's import
for _ in range(20):
    time.sleep(0.005)
IMPORTED_WHOLE = True
"""


@pytest.fixture
def cli_handlers():
    """The CLI's signal handlers, as a command runs under them; restored afterwards."""
    previous = cli._on_sigterm()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        for signum, handler in previous:
            signal.signal(signum, handler)
        cli._SIGNALLED = False


def test_a_signal_during_an_import_is_raised_once_the_import_has_ended(tmp_path, monkeypatch, cli_handlers):
    (tmp_path / "ppdp_test_slow_import.py").write_text(SLOW_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "ppdp_test_slow_import", raising=False)
    waited = None
    with pytest.raises(Interrupted, match="SIGTERM"):
        import ppdp_test_slow_import  # noqa: F401

        start = time.monotonic()
        try:
            time.sleep(2)  # the interruption lands here, a retry after the import ended
        finally:
            waited = time.monotonic() - start
    assert sys.modules["ppdp_test_slow_import"].IMPORTED_WHOLE  # the import ran to its end
    assert waited is not None and waited < 1.0


def test_a_signal_outside_an_import_is_raised_where_it_lands(cli_handlers):
    with pytest.raises(Interrupted, match="SIGTERM"):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(2)  # not reached: the handler raises at once
    assert not cli._importing(sys._getframe())


LLVMLITE_CALLBACK = """
import os, signal, time
os.kill(os.getpid(), signal.SIGTERM)  # lands here, as in a callback LLVM makes into llvmlite
for _ in range(20):
    time.sleep(0.005)
RAN_WHOLE = True
"""


def test_a_signal_inside_llvmlite_is_raised_once_it_has_returned(cli_handlers):
    """Numba reading a kernel from its cache runs llvmlite's ctypes callbacks; an exception raised
    in one is ignored by ctypes and LLVM then segfaults (a probe run ended with -11). The signal
    waits until no llvmlite code is in the stack."""
    code = compile(LLVMLITE_CALLBACK, os.path.join(os.sep, "site-packages", "llvmlite", "binding", "callback.py"), "exec")
    scope: dict = {}
    waited = None
    with pytest.raises(Interrupted, match="SIGTERM"):
        exec(code, scope)
        start = time.monotonic()
        try:
            time.sleep(2)  # the interruption lands here, a retry after the callback returned
        finally:
            waited = time.monotonic() - start
    assert scope["RAN_WHOLE"]
    assert waited is not None and waited < 1.0
    assert not cli._in_llvmlite(sys._getframe())


def test_a_signal_after_the_commit_waits_until_the_command_holds_the_outcome(cli_handlers):
    """ppdp/handoff.py: from ``committing()`` a signal waits (the timer looks again and finds the
    hold), and ``_committed`` raises it once ``args.committed`` holds the outcome."""
    from ppdp import handoff

    args = argparse.Namespace()
    ran_whole = []

    def run():
        handoff.committing()
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(20):  # several timer ticks: each finds the hold and waits again
            time.sleep(0.005)
        ran_whole.append(True)
        return "the outcome"

    with pytest.raises(Interrupted, match="SIGTERM"):
        cli._committed(args, run)
    assert ran_whole and args.committed == "the outcome"
    assert not handoff.holding() and not cli._PENDING


def test_a_run_failing_after_committing_unwinds_with_its_own_error(cli_handlers):
    """A commit refused after ``committing()``: the run releases the hold and its error unwinds;
    the signal is remembered (the command exits INTERRUPTED) and no raise is left pending."""
    from ppdp import handoff

    def run():
        handoff.committing()
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.02)
        handoff.release()
        time.sleep(0.05)  # the run records its failure (run.py): no timer may raise meanwhile
        raise RuntimeError("commit refused")

    try:
        with pytest.raises(RuntimeError, match="commit refused"):
            cli._committed(argparse.Namespace(), run)
    except KeyboardInterrupt as exc:  # Interrupted would end the test session: fail this test instead
        pytest.fail(f"the deferred signal was raised after release(): {exc!r}")
    assert cli._SIGNALLED and not cli._PENDING and not handoff.holding()
    time.sleep(0.05)  # no timer left to raise it later


def test_nothing_is_held_without_a_caller_expecting_the_outcome(cli_handlers):
    from ppdp import handoff

    handoff.committing()  # the Python API, dbt: no expecting() block
    assert not handoff.holding()
    with pytest.raises(Interrupted, match="SIGTERM"):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(2)  # not reached: the handler raises at once
