"""The ``ppdp`` command line as a user runs it, and the refusal contract.

Calls run in this process (tests/support/cli_in_process.py: same argv, stdout, stderr and exit
code, without a Python start per call); ``PPDP_TEST_CLI_SUBPROCESS=1`` runs them in a subprocess.

``PPDP_CLI_CHECKOUT=/path/to/checkout`` runs that checkout's CLI instead (``python -m engine.app.cli``
of the layout before ``src/``, e.g. a worktree of 6e1dadf): the issue-28 tests were run that way
to show that each of them fails on the code the issue was filed against.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb

from tests.support import paths as PATHS
from tests.support.cli_in_process import SUBPROCESS, run_cli

OLD_CHECKOUT = os.environ.get("PPDP_CLI_CHECKOUT")
# ``PPDP_CLI_SRC=/path/to/worktree/src`` runs that worktree's ``ppdp`` (the src/ layout, before or
# after engine/app/) in a subprocess: the probe-37 tests were run so against 1175431.
OLD_SRC = os.environ.get("PPDP_CLI_SRC")


def _src_module(src: str) -> str:
    return "ppdp.engine.app.cli" if (Path(src) / "ppdp" / "engine" / "app" / "cli.py").exists() else "ppdp.engine.cli"


def ppdp(*args: str, timeout: float = 600, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``ppdp ARGS`` from the repository root (this checkout's code, in this process unless
    ``PPDP_TEST_CLI_SUBPROCESS=1``; an old checkout's always in a subprocess)."""
    if not OLD_CHECKOUT and not OLD_SRC and not SUBPROCESS:
        return run_cli(list(args), cwd=PATHS.REPO, env=env)
    if OLD_SRC:
        cmd, cwd = [sys.executable, "-m", _src_module(OLD_SRC), *args], str(PATHS.REPO)
        env = {**os.environ, **(env or {}), "PYTHONPATH": OLD_SRC}
    elif OLD_CHECKOUT:
        cmd, cwd = [sys.executable, "-m", "engine.app.cli", *args], OLD_CHECKOUT
        env = {**os.environ, **(env or {}), "PYTHONPATH": OLD_CHECKOUT}
    else:
        cmd, cwd = [sys.executable, "-m", "ppdp.engine.app.cli", *args], str(PATHS.REPO)
        env = {**os.environ, **(env or {})}
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=timeout, env=env)


def assert_refused(proc: subprocess.CompletedProcess, *fragments: str, code: int = 2) -> str:
    """The refusal contract: exit code ``code`` (2, a spec or data error; 3, refused by the privacy
    model: docs/reference/exit-codes.md) and exactly one line on stderr, ``ppdp: error: ...``, containing
    each fragment. Returns the line."""
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == code and len(lines) == 1 and lines[0].startswith("ppdp: error: "), \
        f"exit {proc.returncode}, stderr:\n{proc.stderr[-3000:]}"
    for f in fragments:
        assert f in lines[0], lines[0]
    return lines[0]


def assert_ok(proc: subprocess.CompletedProcess) -> str:
    """Exit code 0 and nothing on stderr; returns stdout."""
    assert proc.returncode == 0 and not proc.stderr.strip(), f"exit {proc.returncode}, stderr:\n{proc.stderr[-3000:]}"
    return proc.stdout


def file_state(db: Path) -> tuple:
    """A DuckDB file's schemas, relations and row counts, or ``()`` when the file does not
    exist: equal before and after means nothing was written."""
    if not db.exists():
        return ()
    con = duckdb.connect(str(db), read_only=True)
    try:
        schemas = con.execute("SELECT schema_name FROM information_schema.schemata ORDER BY 1").fetchall()
        rels = con.execute("SELECT table_schema, table_name, table_type FROM information_schema.tables ORDER BY 1, 2").fetchall()
        counts = [con.execute(f'SELECT COUNT(*) FROM "{s}"."{t.replace(chr(34), chr(34) * 2)}"').fetchone()[0] for s, t, _ in rels]
        return tuple(schemas), tuple(rels), tuple(counts)
    finally:
        con.close()
