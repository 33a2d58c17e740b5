"""The ``ppdp`` command line run in this process: ``ppdp.engine.app.cli.main(argv)`` with its stdout,
stderr and exit code captured, as a ``subprocess.CompletedProcess`` like a real subprocess gives.

A subprocess pays a Python start and the package's imports (2-6 s on a loaded 2-core machine)
for every call; the suite made hundreds. The tests that use this are about what ppdp does with
a command (its output, its exit code, what it writes), not about the process boundary: the
entry point itself (``python -m ppdp.engine.app.cli``, signals, a closed pipe, the environment of a
fresh interpreter) keeps its real-subprocess tests, and ``PPDP_TEST_CLI_SUBPROCESS=1`` runs every
call in a subprocess again (tests/support/cli.py, tests/support/cli_under_test.py).

What a subprocess would not share with the test is isolated for the call: the working
directory, the environment (``env`` is added to it, then the old one is put back), the
warning filters (Python's defaults, which print to the captured stderr: pytest's ``error``
filter would turn a warning into an exception the subprocess never sees) and the defaults the
CLI read from the environment at import (``PPDP_DB``).
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path

SUBPROCESS = os.environ.get("PPDP_TEST_CLI_SUBPROCESS") == "1"


@contextlib.contextmanager
def environment_added(extra: Mapping[str, str]) -> Iterator[None]:
    """The process environment with ``extra`` added, the previous one put back afterwards."""
    saved = dict(os.environ)
    os.environ.update(extra)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def python_default_warnings() -> Iterator[None]:
    """The warning filters of a fresh interpreter started without -W (see ``warnings`` docs)."""
    with warnings.catch_warnings():
        warnings.resetwarnings()
        warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
        for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
            warnings.filterwarnings("ignore", category=category)
        # printed on (the captured) stderr, not recorded by pytest's own catch_warnings around the test
        warnings.showwarning = _print_warning
        yield


def _print_warning(message, category, filename, lineno, file=None, line=None) -> None:
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


class CapturedText(io.StringIO):
    """A captured stream that says it is no terminal and has no file descriptor, like a pipe
    read by ``capture_output`` as far as ppdp can tell (progress.py asks ``isatty``)."""

    def isatty(self) -> bool:
        return False


def run_cli(args: list[str], *, cwd: Path | str | None = None,
            env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess:
    """``ppdp ARGS`` in this process; ``env`` adds to the environment for the call only."""
    from ppdp.engine.app import cli

    out, err = CapturedText(), CapturedText()
    env = dict(env or {})
    default_db = os.environ.get("PPDP_DB", "duckdb://demo.duckdb") if "PPDP_DB" not in env else env["PPDP_DB"]
    previous_cwd, previous_default_db = os.getcwd(), cli.DEFAULT_DB
    try:
        with environment_added(env), python_default_warnings(), \
                contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            if cwd is not None:
                os.chdir(cwd)
            cli.DEFAULT_DB = default_db
            try:
                code = cli.main(list(args))
            except SystemExit as exit_:  # argparse: --help, a usage error
                code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
                if exit_.code is not None and not isinstance(exit_.code, int):
                    print(exit_.code, file=sys.stderr)
    finally:
        cli.DEFAULT_DB = previous_default_db
        os.chdir(previous_cwd)
        # a subprocess's exit closes every DuckDB handle of the command; here a handle kept alive
        # by a reference cycle would still hold the file when the test opens it read-only next.
        # The command's objects are young: a full collection costs ~0.5 s in a worker that has
        # imported numba, polars and pyspark, the young generations a few milliseconds.
        gc.collect(1)
    return subprocess.CompletedProcess(["ppdp", *args], int(code), out.getvalue(), err.getvalue())
