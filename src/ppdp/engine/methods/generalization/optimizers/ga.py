"""Plain genetic algorithm: the "GA" baseline of ID-DGA (Table 2) and the GA step of HAEF
(Algorithm 2) and TLEF.

Each generation pairs the population at random; each pair makes one child by uniform crossover
(rate ``cr``) and per-gene mutation (rate ``mr``: G gene redrawn in [0, height], S bit flipped);
the child replaces the worse parent if it beats it under the two-dimension rule (docs/design/paper_notes.md
§4-5). No improvement operator. The papers do not give the GA baseline's parameters; the
defaults are ID-DGA's population (N = 40) and mutation rate (MR = 0.1) and HAEF's CR_ga = 0.5.
"""

from __future__ import annotations

from typing import Any

from ppdp.engine.methods.generalization.optimizers import (
    OPTIMIZERS,
    OptimizerResult,
    ProgressFn,
    checks_params,
    takes_objectives,
)
from ppdp.engine.methods.generalization.optimizers.evolutionary.island import Island
from ppdp.engine.methods.generalization.optimizers.evolutionary.master import run_islands
from ppdp.engine.methods.generalization.optimizers.evolutionary.params import (
    COMMON_DEFAULTS,
    parse_params,
)
from ppdp.engine.methods.generalization.optimizers.operators import (
    cx_uniform,
    mut_reset_flip,
    pair_up,
)
from ppdp.engine.methods.generalization.problem import Problem

GA_DEFAULTS: dict[str, Any] = {**COMMON_DEFAULTS, "pop_size": 40, "cr": 0.5, "mr": 0.1}


def ga_generation(isl: Island, *, cr: float, mr: float) -> tuple[int, int]:
    """One GA generation on an island (HAEF Algorithm 2) -> (children kept, children discarded).

    The children of all pairs are made at once (uniform crossover, then per-gene mutation) and
    evaluated as one batch; each replaces the worse of its parents if it beats it."""
    pairs = pair_up(isl.size, rng=isl.rng)
    if not len(pairs):
        return 0, 0
    a, b = pairs[:, 0], pairs[:, 1]
    G, S = cx_uniform(isl.G[a], isl.S[a], isl.G[b], isl.S[b], cr=cr, rng=isl.rng)
    G, S = mut_reset_flip(G, S, isl.heights, mr=mr, rng=isl.rng)
    out = isl.evaluate(G, S)
    if out is None:
        return 0, 0
    ev, S = out
    kept = int(isl.replace_if_better(isl.worse_of_pairs(pairs), G, S, ev).sum())
    return kept, len(ev) - kept


class GAIsland(Island):
    MIN_POP = 2

    def generation(self) -> None:
        ga_generation(self, cr=self.config["cr"], mr=self.config["mr"])


@checks_params("ga")
def _ga_params(params: dict[str, Any]) -> dict[str, Any]:
    return parse_params("ga", params, GA_DEFAULTS)


takes_objectives("ga", "fitness")


@OPTIMIZERS.register("ga")
def ga(problem: Problem, *, budget: int, seed: int = 0, params: dict[str, Any],
       progress: ProgressFn | None = None) -> OptimizerResult:
    """Plain GA (ID-DGA Table 2 baseline). Params: pop_size 40, cr 0.5, mr 0.1 + island options."""
    config = _ga_params(params)
    return run_islands(problem, GAIsland, config, name="ga", budget=budget, seed=seed, progress=progress)
