"""Run the ``ppdp`` command line under test.

By default this checkout's CLI, in this process (tests/support/cli_in_process.py: the same argv,
stdout, stderr and exit code as ``python -m ppdp.engine.app.cli`` with the caller's PYTHONPATH, without
a Python start per call; ``PPDP_TEST_CLI_SUBPROCESS=1`` runs it in a subprocess). To
show that a test fails on an older commit, point it at that commit's CLI instead:
``PPDP_TEST_CLI_MODULE=engine.app.cli PPDP_TEST_CLI_PATH=/tmp/old pytest ...`` (6e1dadf's layout had
top-level ``engine/``); the test's scenario, database and checks stay the same.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.cli_in_process import SUBPROCESS, run_cli

CLI_MODULE = os.environ.get("PPDP_TEST_CLI_MODULE", "ppdp.engine.app.cli")
CLI_PATH = os.environ.get("PPDP_TEST_CLI_PATH")


def ppdp(*args: str, cwd: Path | str | None = None, env: dict[str, str] | None = None,
         timeout: float = 600) -> subprocess.CompletedProcess:
    """``ppdp ARGS`` (the CLI under test); ``env`` adds to the inherited environment."""
    if CLI_MODULE == "ppdp.engine.app.cli" and not CLI_PATH and not SUBPROCESS:
        return run_cli(list(args), cwd=cwd, env=env)
    full = dict(os.environ) | (env or {})
    if CLI_PATH:
        full["PYTHONPATH"] = CLI_PATH
    return subprocess.run([sys.executable, "-m", CLI_MODULE, *args], capture_output=True, text=True,
                          cwd=str(cwd) if cwd else None, env=full, timeout=timeout)


def one_line_error(proc: subprocess.CompletedProcess, *fragments: str) -> str:
    """Assert exit code 2 and exactly one ``ppdp: error:`` line on stderr holding ``fragments``."""
    assert proc.returncode == 2, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ppdp: error: "), proc.stderr
    for f in fragments:
        assert f in lines[0], lines[0]
    return lines[0]
