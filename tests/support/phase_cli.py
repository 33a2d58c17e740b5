"""Run the ``ppdp`` CLI in this process with a fault at the "materialized" phase (tests only).

    python -m tests.support.phase_cli pause:SECONDS ARGS...   # announce on stderr, then sleep
    python -m tests.support.phase_cli raise ARGS...           # a bug: RuntimeError inside the run

The release's default phase hook (``no_phase``) is replaced, so every run the command starts
(``ppdp run``, ``ppdp job run``, each job ``ppdp worker`` serves) meets the fault. A test then
signals or kills the process, or reads the exit code of the bug.
"""

from __future__ import annotations

import sys
import time

import ppdp.engine.release.run as release
from ppdp.engine.app import cli


def fault_hook(fault: str):
    def on_phase(phase: str) -> None:
        if phase != "materialized":
            return
        if fault.startswith("pause:"):
            print("FAULT: paused after materialize", file=sys.stderr, flush=True)
            time.sleep(float(fault.split(":", 1)[1]))
        elif fault == "raise":
            raise RuntimeError("injected bug after materialize")

    return on_phase


if __name__ == "__main__":
    release.no_phase = fault_hook(sys.argv[1])  # type: ignore[assignment]
    sys.exit(cli.main(sys.argv[2:]))
