"""A terminal progress bar for long runs: evaluations, best TD, feasible or not.

Silent for the first second (short runs stay quiet) and when stderr is not a terminal, unless
PPDP_PROGRESS=1 forces it (then one line per second, for logs).
"""

from __future__ import annotations

import os
import sys
import time


class ProgressBar:
    def __init__(self, total: int, *, label: str = "search", stream=None) -> None:
        self.total = max(int(total), 1)
        self.label = label
        self.stream = stream or sys.stderr
        self.start = time.perf_counter()
        self.tty = self.stream.isatty()
        self.forced = os.environ.get("PPDP_PROGRESS") == "1"
        self.shown = False
        self._last = 0.0

    def __call__(self, evaluations: int, best_td: float, feasible: bool) -> None:
        now = time.perf_counter()
        elapsed = now - self.start
        if elapsed < 1.0 or not (self.tty or self.forced):
            return
        if not self.tty and now - self._last < 1.0:
            return
        self._last = now
        frac = min(evaluations / self.total, 1.0)
        width = 28
        bar = "#" * int(frac * width) + "-" * (width - int(frac * width))
        state = "feasible" if feasible else "infeasible"
        line = f"{self.label} [{bar}] {evaluations}/{self.total} evals  best TD {best_td:,.2f} ({state})  {elapsed:.1f}s"
        self.stream.write(("\r" + line) if self.tty else (line + "\n"))
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown and self.tty:
            self.stream.write("\n")
            self.stream.flush()
