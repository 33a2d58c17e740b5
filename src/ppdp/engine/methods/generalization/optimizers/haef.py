"""HAEF: hierarchical adaptive evolution framework (papers/haef_t-closeness_ga-de.txt), and TLEF.

Algorithm 1 (loop ``while g < gamma``, docs/design/paper_notes.md §5): each generation either the GA step
(Algorithm 2, engine/methods/generalization/optimizers/ga.py) or the DE step (Algorithm 3, engine/methods/generalization/optimizers/de.py)
updates the whole population. Two adaptive hierarchies choose:

* GA-DE adaptation (§4.2.1): GA with probability p_ga, DE with p_de; p_ga = 1, p_de = 0 at
  first; every UpdateInterval generations both are renewed by eq. 9-10 from the successes and
  failures of GA and DE children since the last update (eq. 9 typo fixed, ``p_ga_de``).
* DEs adaptation (§4.3.1): each DE target picks one of the six strategies eq. 14-19 with
  probabilities p_de^1..6, 1/6 at first, renewed every UpdateInterval generations by eq. 11-13
  (``p_de_strategies``).

g / gamma: gamma follows from the evaluation budget (docs/design/paper_notes.md §5); a GA generation costs
NP/2 evaluations and a DE one NP, so we measure g / gamma as the fraction of the evaluation
budget spent. The loop ends when the budget is spent.

Registered names (HAEF Tables 2-5, docs/design/paper_notes.md §5):

* ``haef``: NP = 30, CR_ga = 0.5, MR_ga = 0.2, F = 1.3, CR_de = 0.3, UpdateInterval = 10.
* ``haef-without-priority``: the g/gamma terms of eq. 9, 10, 12, 13 dropped.
* ``haef-without-ga-de-adaptation``: DE strategies only (p_de = 1), still adaptive among them.
* ``haef-without-de-adaptation``: GA and DE/best/1 only, GA-DE adaptation kept.
* ``tlef``: GA and DE alternate generation by generation (even: GA, odd: DE/best/1).
* ``haef+oracle`` (ours): every evaluated solution repaired with S := S*(G) (docs/design/paper_notes.md §3).
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
from ppdp.engine.methods.generalization.optimizers.de import de_generation
from ppdp.engine.methods.generalization.optimizers.evolutionary.island import Island
from ppdp.engine.methods.generalization.optimizers.evolutionary.master import run_islands
from ppdp.engine.methods.generalization.optimizers.evolutionary.params import (
    COMMON_DEFAULTS,
    parse_params,
)
from ppdp.engine.methods.generalization.optimizers.ga import ga_generation
from ppdp.engine.methods.generalization.optimizers.operators import (
    DE_NAMES,
    p_de_strategies,
    p_ga_de,
)
from ppdp.engine.methods.generalization.problem import Problem
from ppdp.errors import SpecError

HAEF_DEFAULTS: dict[str, Any] = {
    **COMMON_DEFAULTS,
    "pop_size": 30,  # NP (§6.1.1)
    "cr_ga": 0.5,
    "mr_ga": 0.2,
    "f": 1.3,
    "cr_de": 0.3,
    "update_interval": 10,  # generations
    "priority": True,  # GA-prioritized and random-prioritized terms (g / gamma)
    "ga_de_adaptation": True,  # False: DE only
    "de_adaptation": True,  # False: DE/best/1 only
    "schedule": "adaptive",  # "adaptive" (HAEF) or "alternate" (TLEF)
}

BEST_1 = DE_NAMES.index("best/1")


def _one_hot(k: int) -> np.ndarray:
    p = np.zeros(len(DE_NAMES))
    p[k] = 1.0
    return p


class HAEFIsland(Island):
    """HAEF (or TLEF) on one (sub-)population."""

    MIN_POP = 6  # DE/rand/2 needs five individuals besides the target

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        c = self.config
        self.p_ga, self.p_de = (1.0, 0.0) if c["ga_de_adaptation"] else (0.0, 1.0)
        self.p_strat = np.full(len(DE_NAMES), 1.0 / len(DE_NAMES)) if c["de_adaptation"] else _one_hot(BEST_1)
        self._reset_counts()
        self.extras["adaptation"] = [self._snapshot()]
        self.extras["ga_generations"] = 0
        self.extras["de_generations"] = 0

    def _reset_counts(self) -> None:
        self.ns_ga = self.nf_ga = 0
        self.ns_s = np.zeros(len(DE_NAMES), dtype=np.int64)
        self.nf_s = np.zeros(len(DE_NAMES), dtype=np.int64)

    def _snapshot(self) -> tuple[float, ...]:
        """(evaluations, p_ga, p_de^1..6) for the record of the adaptation."""
        return (float(self.used), float(self.p_ga), *map(float, self.p_strat))

    def _update(self) -> None:
        """Steps 7-8 of Algorithm 1: eq. 9-10 and eq. 11-13, then reset the counts."""
        c = self.config
        g_over_gamma = self.progress
        if c["ga_de_adaptation"]:
            ns_de, nf_de = int(self.ns_s.sum()), int(self.nf_s.sum())
            self.p_ga, self.p_de = p_ga_de(self.ns_ga, self.nf_ga, ns_de, nf_de, g_over_gamma, priority=c["priority"])
        if c["de_adaptation"]:
            self.p_strat = p_de_strategies(self.ns_s, self.nf_s, g_over_gamma, priority=c["priority"])
        self._reset_counts()
        self.extras["adaptation"].append(self._snapshot())

    def generation(self) -> None:
        c = self.config
        if c["schedule"] == "alternate":  # TLEF: even generations GA, odd DE/best/1
            use_ga = self.generations % 2 == 0
            probs = _one_hot(BEST_1)
        else:
            if self.generations > 0 and self.generations % c["update_interval"] == 0:
                self._update()
            use_ga = bool(self.rng.random() < self.p_ga)
            probs = self.p_strat
        if use_ga:
            ns, nf = ga_generation(self, cr=c["cr_ga"], mr=c["mr_ga"])
            self.ns_ga += ns
            self.nf_ga += nf
            self.extras["ga_generations"] += 1
        else:
            ns_s, nf_s = de_generation(self, probs, f=c["f"], cr=c["cr_de"])
            self.ns_s += ns_s
            self.nf_s += nf_s
            self.extras["de_generations"] += 1


def _register(name: str, preset: dict[str, Any], doc: str) -> None:
    @checks_params(name)
    def configure(params: dict[str, Any]) -> dict[str, Any]:
        fixed = set(preset) & set(params)
        if fixed:
            raise SpecError(f"{name} optimizer: {sorted(fixed)} fixed by this variant. Hint: use 'haef' with the parameter.")
        config = parse_params(name, params, {k: v for k, v in HAEF_DEFAULTS.items() if k not in preset})
        config.update(preset)
        if config["schedule"] not in ("adaptive", "alternate"):
            raise SpecError(f"{name} optimizer: schedule must be 'adaptive' or 'alternate', not {config['schedule']!r}.")
        if config["update_interval"] < 1:
            raise SpecError(f"{name} optimizer: update_interval must be at least 1.")
        return config

    def optimizer(problem: Problem, *, budget: int, seed: int = 0, params: dict[str, Any],
                  progress: ProgressFn | None = None) -> OptimizerResult:
        return run_islands(problem, HAEFIsland, configure(params), name=name, budget=budget, seed=seed, progress=progress)

    optimizer.__name__ = name.replace("-", "_").replace("+", "_")
    optimizer.__doc__ = doc
    OPTIMIZERS.register(name)(optimizer)
    takes_objectives(name, "fitness")


_register("haef", {}, "HAEF (pop_size 30, cr_ga 0.5, mr_ga 0.2, f 1.3, cr_de 0.3, update_interval 10).")
_register("haef-without-priority", {"priority": False}, "Ablation (HAEF Table 5): no g/gamma terms.")
_register("haef-without-ga-de-adaptation", {"ga_de_adaptation": False}, "Ablation: the six DEs only.")
_register("haef-without-de-adaptation", {"de_adaptation": False}, "Ablation: GA + DE/best/1 only.")
_register("tlef", {"schedule": "alternate", "ga_de_adaptation": False, "de_adaptation": False,
                   "priority": False, "update_interval": 10},
          "TLEF: GA and DE/best/1 alternate generation by generation.")
_register("haef+oracle", {"oracle": True}, "HAEF with the exact suppression oracle as repair (ours).")
