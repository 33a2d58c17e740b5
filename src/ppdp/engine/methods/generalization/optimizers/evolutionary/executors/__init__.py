"""Executors: what runs the islands of one run, behind one interface (``IslandExecutor``).

* ``local.LocalExecutor``: the islands in this process, one after the other, in lock step.
* ``process.ProcessExecutor``: one worker process per island (``multiprocessing``, spawn by
  default: Polars warns when a process that started threads forks, so the workers are fresh
  interpreters that rebuild the Problem from NumPy arrays), joined in a ring of pipes; the
  workers come from the run's ``IslandRuntime`` (runtime.py). ``worker`` is their side of it,
  ``wire`` the messages they send.
* ``ray.RayExecutor``: one Ray actor per island (engine/methods/generalization/optimizers/ray_executor.py).

Every executor gives the islands the migrants of ``LocalExecutor``'s lock step, so a seed gives
the same result whichever runs it. A distributed engine would be one more executor.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Protocol

from ppdp.engine.methods.generalization.optimizers.evolutionary.island import (
    EpochReport,
    IslandSpec,
)


class IslandExecutor(Protocol):
    """Runs the islands. ``parallel`` says whether the islands' compute overlaps in time.

    ``epochs(generations, lag)`` yields one list of reports (one per island, in island order)
    per epoch: every island evolves ``generations`` generations, then island i + 1 receives
    island i's best (ring migration, ID-DGA §4.1) before its next epoch; with ``lag`` > 0 the
    best island i had ``lag`` epochs earlier (none before epoch lag + 2). The caller stops
    iterating when it is done (it closes the generator), then calls ``close``.
    """

    name: str  # as the run's info says: "local", "process", "ray"
    parallel: bool

    def start(self, specs: list[IslandSpec]) -> None: ...
    def epochs(self, generations: int, lag: int = 0) -> Generator[list[EpochReport], None, None]: ...
    def close(self) -> None: ...
