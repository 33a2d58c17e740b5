"""The commit-msg hook (.githooks/commit-msg) refuses a subject longer than 72 characters.

CONTRIBUTING.md states the convention (a subject of 72 characters or fewer, a body that says why,
with figures); `make demo` and `make test` point git at the hook. Here the hook runs on a message
file as git would run it, without a repository: 72 characters pass, 73 fail, comment lines and
leading blank lines are not the subject, and the length counts characters, not bytes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support import paths as PATHS

HOOK = PATHS.REPO / ".githooks" / "commit-msg"


def run_hook(tmp_path: Path, message: str) -> subprocess.CompletedProcess[str]:
    msg = tmp_path / "COMMIT_EDITMSG"
    msg.write_text(message, encoding="utf-8")
    return subprocess.run(["sh", str(HOOK), str(msg)], capture_output=True, text=True)


def test_hook_is_an_executable_posix_script() -> None:
    assert HOOK.is_file()
    assert os.access(HOOK, os.X_OK), "git runs the hook only if it is executable"
    assert HOOK.read_text(encoding="utf-8").startswith("#!/bin/sh\n")


@pytest.mark.skipif(shutil.which("sh") is None, reason="no POSIX shell")
def test_72_characters_pass_73_fail(tmp_path: Path) -> None:
    assert run_hook(tmp_path, "a" * 72 + "\n\nWhy, with figures.\n").returncode == 0
    refused = run_hook(tmp_path, "a" * 73 + "\n\nWhy, with figures.\n")
    assert refused.returncode == 1
    assert "73 characters" in refused.stderr


@pytest.mark.skipif(shutil.which("sh") is None, reason="no POSIX shell")
def test_comments_and_blank_lines_are_not_the_subject(tmp_path: Path) -> None:
    message = "\n# " + "x" * 100 + "\n" + "a" * 72 + "\n\n" + "b" * 200 + "\n"
    assert run_hook(tmp_path, message).returncode == 0


@pytest.mark.skipif(shutil.which("sh") is None, reason="no POSIX shell")
def test_a_long_body_line_is_allowed(tmp_path: Path) -> None:
    assert run_hook(tmp_path, "Short subject\n\n" + "c" * 300 + "\n").returncode == 0
