"""``RayExecutor``: islands as Ray actors, one per island.

The Problem travels once, as a ``ProblemSpec`` (encoded arrays, models, backend) put in the
object store; each actor builds its Problem and island from it and loads the Numba kernels
before reporting ready (start-up, apart from the run). Epoch e of island i is an actor call
whose migrant argument is the object ref of island i - 1's best after epoch e - 1 - lag: Ray
hands the best from actor to actor (the master never reads it) and runs an actor's calls in
the order they were submitted, so the islands receive exactly the migrants of
``LocalExecutor``'s lock step, whatever the scheduling: a seed gives the same result as
"local" and "process". The master submits up to ``window`` epochs ahead of the reports it has
read, so an island waits only for its predecessor's best, as with the ring of pipes.

The actors, the cluster and the actor pool (``ray_actor_pool``) are those of
engine/methods/generalization/optimizers/ray_executor.py, which the lattice search's Ray workers share.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ppdp.engine.methods.generalization.optimizers.evolutionary.island import (
    EpochReport,
    IslandSpec,
)
from ppdp.engine.methods.generalization.optimizers.ray_executor import (
    RayActorPool,
    acquire_hosts,
    actor_error,
    connect,
    give_back,
)
from ppdp.engine.methods.generalization.optimizers.remote import ProblemSpec
from ppdp.engine.methods.generalization.problem import Problem

# Epochs the master submits ahead of the reports it has read. Every submitted epoch runs (an
# island past the master's last epoch only receives migrants), so a few suffice to keep the
# actors busy without wasting much at the end of a run.
WINDOW_EPOCHS = 8


class RayExecutor:
    """One Ray actor per island; see the module docstring. The cluster outlives the run (a local
    one lives as long as this process); the actors go back to the active ``ray_actor_pool`` at
    ``close``, else are stopped."""

    name = "ray"
    parallel = True

    def __init__(self, problem: Problem, *, address: str | None = None, window: int = WINDOW_EPOCHS) -> None:
        self.problem = problem
        self.ray = connect(address)
        self.window = max(int(window), 1)
        self.actors: list[Any] = []
        self.pids: list[int] = []
        self.failed = False
        self._pool: RayActorPool | None = None

    def start(self, specs: list[IslandSpec]) -> None:
        ray = self.ray
        self.actors, self._pool = acquire_hosts(ray, len(specs))
        problem_ref = ray.put(ProblemSpec.of(self.problem))  # once, shared by every actor
        try:
            self.pids = ray.get([a.setup_island.remote(problem_ref, spec)
                                 for a, spec in zip(self.actors, specs, strict=True)])
        except ray.exceptions.RayError as err:
            self.failed = True
            raise actor_error(ray, err, "starting the islands") from None

    def epochs(self, generations: int, lag: int = 0) -> Generator[list[EpochReport], None, None]:
        ray = self.ray
        n = len(self.actors)
        reports: list[list[Any]] = []  # object refs per submitted epoch, per island
        bests: list[list[Any]] = []

        def submit() -> None:
            e = len(reports)
            # Epoch e receives the bests of epoch e - 1 - lag (LocalExecutor's lock step): island
            # i that of island i - 1, handed over by Ray from actor to actor.
            source = e - 1 - lag
            migrants = ([bests[source][(i - 1) % n] for i in range(n)] if n > 1 and source >= 0 else [None] * n)
            # Two returns: the report goes to the master, the best to the next island only.
            refs = [a.run.options(num_returns=2).remote(generations, m)
                    for a, m in zip(self.actors, migrants, strict=True)]
            reports.append([r for r, _ in refs])
            bests.append([b for _, b in refs])
            if source >= 0:
                bests[source] = []  # no later epoch needs them: let Ray free them

        read = 0
        while True:
            while len(reports) < read + self.window:
                submit()
            try:
                out = ray.get(reports[read])
            except ray.exceptions.RayError as err:
                self.failed = True
                raise actor_error(ray, err, f"an island (epoch {read + 1})") from None
            reports[read] = []
            read += 1
            yield out

    def close(self) -> None:
        # A pooled actor may still run the epochs submitted ahead: its next setup waits for them
        # (an actor runs its calls in order), and their results are dropped.
        actors, self.actors = self.actors, []
        give_back(self.ray, actors, self._pool, not self.failed)
