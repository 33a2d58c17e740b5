"""Run a stored job in this process with a fault injected at a phase of the release (tests only).

    python -m tests.support.fault_runner URL JOB pause-after-materialize:SECONDS
    python -m tests.support.fault_runner URL JOB exit-after-materialize

``pause`` announces itself on stderr and sleeps (a test then kills the process or starts a
concurrent run); ``exit`` ends the process inside the open transaction (exit code 9).
"""

from __future__ import annotations

import os
import sys
import time

from ppdp.engine.app import jobs


def hook(fault: str):
    def on_phase(phase: str) -> None:
        if phase != "materialized":
            return
        if fault.startswith("pause-after-materialize:"):
            print("FAULT: paused after materialize", file=sys.stderr, flush=True)
            time.sleep(float(fault.split(":", 1)[1]))
        elif fault == "exit-after-materialize":
            os._exit(9)

    return on_phase


def main(argv: list[str]) -> int:
    url, job, fault = argv
    jobs.run_job(url, job, progress=False, on_phase=hook(fault))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
