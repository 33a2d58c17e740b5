"""Differential evolution on both vectors: the "DE" baseline of ID-DGA (Table 2) and the DE
step of HAEF (Algorithm 3) and TLEF.

For each target X_i a mutant V_i is built in reals from G and S (one strategy of HAEF eq. 14-19,
the same random indices for both vectors), brought back to levels/bits by the boundary rules of
HAEF §4.3.2 (docs/design/paper_notes.md §5), crossed with the target by binomial crossover eq. 20 (separately
for G and S, each with its own j_rand over its length), evaluated, and the trial replaces the
target if it beats it (eq. 21, two-dimension rule). The generation is synchronous: all trials
come from the population at the start of the generation.

The ID-DGA paper does not give DE's parameters; the defaults are HAEF's F = 1.3 and
CR_de = 0.3 (§6.1.1) with ID-DGA's population N = 40.
"""

from __future__ import annotations

from typing import Any

import numpy as np

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
    DE_NAMES,
    DE_STRATEGIES,
    bound_g,
    bound_s,
    cx_binomial,
    de_indices,
)
from ppdp.engine.methods.generalization.problem import Problem
from ppdp.errors import SpecError

DE_DEFAULTS: dict[str, Any] = {**COMMON_DEFAULTS, "pop_size": 40, "f": 1.3, "cr": 0.3, "strategy": "rand/1"}


def de_generation(isl: Island, probs: np.ndarray, *, f: float, cr: float) -> tuple[np.ndarray, np.ndarray]:
    """One DE generation (HAEF Algorithm 3) where each target picks its strategy with
    probabilities ``probs`` over ``DE_NAMES`` -> (successes, failures) per strategy."""
    P = isl.size
    rng = isl.rng
    best = isl.best_index()
    strat = rng.choice(len(DE_NAMES), size=P, p=probs)
    XG = isl.G.astype(np.float64)
    XS = isl.S.astype(np.float64)
    VG = np.empty_like(XG)
    VS = np.empty_like(XS)
    for d in np.unique(strat):
        fn, k = DE_STRATEGIES[DE_NAMES[d]]
        idx = np.flatnonzero(strat == d)
        r = de_indices(P, idx, k, rng=rng)
        VG[idx] = fn(XG, idx, best, r, f=f)
        VS[idx] = fn(XS, idx, best, r, f=f)
    UG = cx_binomial(isl.G, bound_g(VG, isl.heights, rng=rng), cr=cr, rng=rng)
    US = cx_binomial(isl.S, bound_s(VS, rng=rng), cr=cr, rng=rng)
    ns = np.zeros(len(DE_NAMES), dtype=np.int64)
    nf = np.zeros(len(DE_NAMES), dtype=np.int64)
    out = isl.evaluate(UG, US)
    if out is None:
        return ns, nf
    ev, US = out
    kept = isl.replace_if_better(np.arange(P), UG, US, ev)
    m = len(ev)
    ns = np.bincount(strat[:m][kept], minlength=len(DE_NAMES)).astype(np.int64)
    nf = np.bincount(strat[:m][~kept], minlength=len(DE_NAMES)).astype(np.int64)
    return ns, nf


class DEIsland(Island):
    MIN_POP = 6  # DE/rand/2 needs five individuals besides the target

    def generation(self) -> None:
        probs = np.zeros(len(DE_NAMES))
        probs[DE_NAMES.index(self.config["strategy"])] = 1.0
        de_generation(self, probs, f=self.config["f"], cr=self.config["cr"])


@checks_params("de")
def _de_params(params: dict[str, Any]) -> dict[str, Any]:
    config = parse_params("de", params, DE_DEFAULTS)
    if config["strategy"] not in DE_NAMES:
        raise SpecError(f"de optimizer: strategy must be one of {list(DE_NAMES)}, not {config['strategy']!r}.")
    return config


takes_objectives("de", "fitness")


@OPTIMIZERS.register("de")
def de(problem: Problem, *, budget: int, seed: int = 0, params: dict[str, Any],
       progress: ProgressFn | None = None) -> OptimizerResult:
    """DE/rand/1 on G and S with HAEF's boundary rules. Params: pop_size 40, f 1.3, cr 0.3,
    strategy "rand/1" (any of eq. 14-19) + island options."""
    config = _de_params(params)
    return run_islands(problem, DEIsland, config, name="de", budget=budget, seed=seed, progress=progress)
