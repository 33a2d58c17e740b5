"""The in-process ``ppdp`` runner of the tests (tests/support/cli_in_process.py) gives what the
real entry point gives: the same exit code, stdout and stderr as ``python -m ppdp.engine.app.cli`` in
a subprocess, for a refusal, an argparse error, ``--help`` and a default read from the environment
(``PPDP_DB``); and it leaves the test's environment and working directory as they were."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import paths as PATHS
from tests.support.cli_in_process import run_cli


def real(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ppdp.engine.app.cli", *args], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, **(env or {})}, timeout=300)


CASES = {
    "refusal": (["runs", "--db", "notaurl"], None),
    "no-command": ([], None),
    "unknown-option": (["show", "x", "--database", "duckdb://x.duckdb"], None),
    "help": (["--help"], None),
    "default-db-from-the-environment": (["runs"], {"PPDP_DB": "duckdb:///nonexistent/suite2/x.duckdb"}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_in_process_run_equals_the_entry_point(case, tmp_path):
    args, env = CASES[case]
    environ, cwd = dict(os.environ), os.getcwd()
    mine = run_cli(args, cwd=tmp_path, env=env)
    assert dict(os.environ) == environ and os.getcwd() == cwd
    theirs = real(args, tmp_path, env)
    assert (mine.returncode, mine.stdout, mine.stderr) == (theirs.returncode, theirs.stdout, theirs.stderr)
    assert theirs.stdout or theirs.stderr  # each case says something


def test_a_warning_goes_to_stderr_as_in_a_fresh_interpreter(monkeypatch, tmp_path):
    """pytest's ``error`` filter would turn it into an exception (a traceback, exit code 70);
    a subprocess prints it on stderr and goes on: so does the in-process run."""
    import warnings

    from ppdp.engine.app import cli

    def warn_then_refuse(args):
        warnings.warn("a library warns", UserWarning, stacklevel=1)
        return 2

    monkeypatch.setitem(cli.COMMANDS, "runs", warn_then_refuse)
    out = run_cli(["runs", "--db", "duckdb://x.duckdb"], cwd=PATHS.REPO)
    assert out.returncode == 2 and "UserWarning: a library warns" in out.stderr and "Traceback" not in out.stderr


def test_only_the_process_entry_tunes_the_collector(tmp_path):
    """``entry`` (the ``ppdp`` command, ``python -m``) makes collections rarer and freezes what
    is left once the command has returned; ``main``, which the tests call in their own process,
    leaves the collector as it was. Either way the command's exit code and output are the same
    (test_in_process_run_equals_the_entry_point)."""
    import gc

    probe = ("import atexit, gc, sys\n"
             "from ppdp.engine.app import cli\n"
             "atexit.register(lambda: print('gc', list(gc.get_threshold()), gc.get_freeze_count() > 0))\n"
             "sys.argv = ['ppdp', 'runs', '--db', 'notaurl']\n"
             "cli.entry()\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    from ppdp.engine.app.cli import PROCESS_GC_THRESHOLDS

    assert done.returncode == real(["runs", "--db", "notaurl"], tmp_path).returncode != 0
    assert done.stdout.strip() == f"gc {list(PROCESS_GC_THRESHOLDS)} True"
    before = (gc.get_threshold(), gc.get_freeze_count())
    run_cli(["runs", "--db", "notaurl"], cwd=tmp_path)
    assert (gc.get_threshold(), gc.get_freeze_count()) == before
