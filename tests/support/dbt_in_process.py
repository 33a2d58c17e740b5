"""The ``dbt`` command line run in this process through dbt's programmatic API (``dbtRunner``,
https://docs.getdbt.com/reference/programmatic-invocations), with its stdout, stderr and exit
code captured as a ``subprocess.CompletedProcess`` like a ``dbt`` subprocess gives.

A ``dbt`` process pays a Python start and dbt's imports for every call, and a ``dbt build`` of a
project with a ppdp Python model also imports ppdp; here both are imported once per process.
What a dbt process would not share with the test is isolated for the call, as for the ppdp CLI
(tests/support/cli_in_process.py): the working directory (``--profiles-dir .`` and the paths a
model names are relative to it), the environment (``env`` is added to it, then the old one is
put back: dbt reads its flags and ``env_var()`` from it at each invocation, and loads a ``.env``
file into it) and the warning filters (Python's defaults, printed to the captured stderr).

dbt-duckdb keeps its DuckDB environment, and with it the database file, open for the life of the
process (``keep_open`` is its default): a ``dbt`` process releases it when it exits, so here it
is closed after each call (as dbt-duckdb's own tests do), else the next call would reuse it and
the test's own read-only connection to the file would be refused.

The exit code is the one the ``dbt`` executable gives for the same outcome
(https://docs.getdbt.com/reference/exit-codes): 0 success, 1 a handled error (a model or a test
failed: ``success`` false and no exception), 2 an unhandled error (``exception`` set).
"""

from __future__ import annotations

import contextlib
import gc
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from tests.support.cli_in_process import CapturedText, environment_added, python_default_warnings

# ``PPDP_TEST_DBT_SUBPROCESS=1``: the callers run every dbt command in a ``dbt`` subprocess again.
SUBPROCESS = os.environ.get("PPDP_TEST_DBT_SUBPROCESS") == "1"


def run_dbt(args: list[str], *, cwd: Path | str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess:
    """``dbt ARGS`` run in ``cwd``, in this process; ``env`` adds to the environment for the call only."""
    out, err = CapturedText(), CapturedText()
    previous_cwd = os.getcwd()
    try:
        with environment_added(dict(env or {})), python_default_warnings(), \
                contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            os.chdir(cwd)
            try:
                # imported in the call's environment, directory and warning filters: dbt loads
                # the working directory's .env file into the environment when imported
                from dbt.cli.main import dbtRunner
                from dbt_common.events.functions import reset_metadata_vars

                reset_metadata_vars()  # the DBT_ENV_CUSTOM_ENV_ variables, read once a process
                result = dbtRunner().invoke(list(args))
            finally:
                _close_duckdb()
                # dbt-duckdb gives the thread that runs a Python model an asyncio event loop that it
                # never closes, a reference cycle that only a full collection frees: freed here,
                # where its ResourceWarning is ignored as in a dbt process, not in a later test
                # where pytest's ``error`` filter would turn it into an error
                gc.collect()
    finally:
        os.chdir(previous_cwd)
    if result.exception is not None:
        print(f"dbt: {type(result.exception).__name__}: {result.exception}", file=err)
    code = 0 if result.success else 1 if result.exception is None else 2
    return subprocess.CompletedProcess(["dbt", *args], code, out.getvalue(), err.getvalue())


def _close_duckdb() -> None:
    """Close dbt-duckdb's DuckDB environment, if this process loaded dbt-duckdb and opened one."""
    connections = sys.modules.get("dbt.adapters.duckdb.connections")
    if connections is None:
        return
    manager = connections.DuckDBConnectionManager
    environment = manager._ENV  # the process-wide environment; close_all_connections only drops it
    manager.close_all_connections()
    if environment is not None:
        environment.close()
