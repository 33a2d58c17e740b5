"""``LocalExecutor``: every island in this process, one after the other, in lock step."""

from __future__ import annotations

from collections import deque
from collections.abc import Generator

from ppdp.engine.methods.generalization.optimizers.evolutionary.island import (
    EpochReport,
    Individual,
    Island,
    IslandSpec,
)
from ppdp.engine.methods.generalization.problem import Problem


def mig_ring(bests: list[Individual | None]) -> list[Individual | None]:
    """Ring topology (ID-DGA §4.1): island i receives the best of island i - 1."""
    n = len(bests)
    return [None] * n if n < 2 else [bests[(i - 1) % n] for i in range(n)]


class LocalExecutor:
    """All islands in this process, one after the other, in lock step."""

    name = "local"
    parallel = False

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.islands: list[Island] = []

    def start(self, specs: list[IslandSpec]) -> None:
        self.islands = [spec.build(self.problem) for spec in specs]

    def epochs(self, generations: int, lag: int = 0) -> Generator[list[EpochReport], None, None]:
        n = len(self.islands)
        migrants: list[Individual | None] = [None] * n
        bests: deque[list[Individual | None]] = deque(maxlen=lag + 1)  # the last lag + 1 epochs
        while True:
            reports = [isl.run(generations, m) for isl, m in zip(self.islands, migrants, strict=True)]
            yield reports
            bests.append([r.best for r in reports])
            migrants = mig_ring(bests[0]) if len(bests) == lag + 1 else [None] * n

    def close(self) -> None:
        self.islands = []
