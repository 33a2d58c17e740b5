"""ID-DGA: information-driven distributed genetic algorithm (papers/id-dga_k-anonymity_distributed-ga.txt).

Per island (ID-DGA §4.7, Algorithm 1 slave node), each generation pairs the individuals at
random; per pair one child: information-driven crossover (§4.3), information-driven mutation
(§4.4), evaluation; if the mutant is infeasible, information-driven improvement (§4.5: suppress
the retained records with the lowest AD, i.e. of the smallest classes for k-anonymity) and a
second evaluation; the child replaces the worse parent if it beats it (§4.6). Islands and ring
migration every MI generations come from engine/methods/generalization/optimizers/evolutionary/ (§4.1).

Evaluation count: deciding that the mutant is infeasible needs its AD, i.e. one evaluation of
(G, S); the improved child is a second one. Both count against the budget (engine/methods/generalization/problem.py:
every evaluated (G, S) is one evaluation) and both are candidates for the best-so-far.

Registered names and their presets (docs/design/paper_notes.md §4, ID-DGA Tables 2 and 4):

* ``id-dga``: N = 40 over NSP = 4 islands, MR = 0.1, MI = 5.
* ``id-ga`` and ``id-dga-without-framework``: one population of 40 (islands = 1).
* ``id-dga-without-mutation``: plain GA mutation (per-gene random reset / bit flip, rate MR).
* ``id-dga-without-improvement``: no improvement operator.
* ``id-dga+oracle`` (ours, not the paper's): every evaluated solution is repaired with the exact
  suppression oracle S := S*(G) (docs/design/paper_notes.md §3); the improvement step is then never needed.

Speed (ours, not the paper's): with a single k-anonymity model an epoch's generations run as one
Numba call (engine/methods/generalization/optimizers/_id_dga_kernel.py, parameter ``fused``, on by default), with the
same draws and numbers as ``IDDGAIsland.generation``, about 2.5 times faster on the ID-DGA
instances.

For models other than k-anonymity (ID-DGA as a t-closeness baseline in HAEF), a record's AD is
the AD of its class under each model; "lowest AD" becomes "largest normalized violation".
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ppdp.engine.kernels import classes as K
from ppdp.engine.methods.generalization.evaluators import Evaluation
from ppdp.engine.methods.generalization.evaluators.numba_backend import NumbaEvaluator
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
    cx_info_driven,
    imp_info_driven,
    mut_info_driven,
    mut_reset_flip,
    pair_up,
)
from ppdp.engine.methods.generalization.problem import Problem
from ppdp.engine.privacy import ClassStats
from ppdp.engine.privacy.k_anonymity import KAnonymity
from ppdp.errors import SpecError

ID_DGA_DEFAULTS: dict[str, Any] = {
    **COMMON_DEFAULTS,
    "islands": 4,  # NSP (§5.2)
    "pop_size": 40,  # N, the whole population (§5.2)
    "mr": 0.1,  # MR (§5.2)
    "cr": 0.5,  # probability that a G gene comes from the second parent (§4.3: "randomly selected")
    "mutation": "info",  # "info" (§4.4) or "plain" (per-gene reset / flip: the ablation)
    "mutation_per_gene": False,  # option of docs/design/paper_notes.md §4: every gene with probability MR
    "improvement": True,  # §4.5; False = the ablation
    "improve_until_feasible": False,  # option of docs/design/paper_notes.md §4: repeat the improvement
    # Ours: a generation as one Numba call where it applies (one k-anonymity model, the numba
    # evaluator, info-driven mutation, no oracle); the same results. False = the Python reference.
    "fused": True,
}


def record_disclosure(problem: Problem, g: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, bool]:
    """Each record's AD for the improvement operator -> (values, higher_is_safer).

    Models whose AD is the smallest class (k-anonymity) alone: the record's class size (``Problem.record_class_sizes``, ID-DGA §4.5).
    Otherwise: the sum over models of the normalized violation of the record's class (higher is
    less safe). Suppressed records get 0 and are ignored by ``imp_info_driven``.
    """
    if all(m.ad_is_smallest_class for m in problem.models):
        return problem.record_class_sizes(g, s), True
    t = problem.table
    retained = problem.retained_from_s(s)[0]
    if problem.needs_population:  # the classes with their persons (delta-presence, k-map)
        cls, stats, _ = problem.class_stats(g, retained)
        m = len(stats.size)
    else:
        gen, _, n_gen = t.lookup
        cls, m = K.classify(np.ascontiguousarray(g, dtype=np.int64), t.codes, gen, n_gen, retained > 0)
        size = K.class_sizes(cls, m, retained)
        _, pc, ps, pn = K.class_sa_pairs(cls, t.sa, t.n_sa, retained)
        stats = ClassStats(size, pc, ps, pn, t.sa_distribution)
    viol = np.zeros(m)
    for model in problem.models:
        viol += np.array([model.violation(a) for a in model.class_ad(stats)])
    per_row = np.where(cls >= 0, viol[np.maximum(cls, 0)], 0.0)
    return np.where(s, per_row[t.row_of_record], 0.0), False


class IDDGAIsland(Island):
    """One ID-DGA sub-population (Algorithm 1, slave node).

    ``generation`` is the reference; with one k-anonymity model, the Numba evaluator, the
    paper's operators, no oracle and no diversity recording, an epoch's generations are one
    call of ``_id_dga_kernel.epoch_k_anonymity`` instead (same draws, same numbers).
    """

    MIN_POP = 2

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fused = self._fused_arguments() if self.config["fused"] else None

    def _fused_arguments(self) -> tuple | None:
        c, p = self.config, self.problem
        models = p.models
        if (self.oracle or self.diversity_every or c["mutation"] != "info" or c["mutation_per_gene"]
                or c["improve_until_feasible"] or len(models) != 1 or not isinstance(models[0], KAnonymity)
                or not isinstance(p.evaluator, NumbaEvaluator) or p.evaluator.kinds is None
                or getattr(p, "objective", "td") != "td"):  # the kernel's fitness is TD
            return None
        from ppdp.engine.methods.generalization.optimizers._id_dga_kernel import epoch_k_anonymity

        ev, t = p.evaluator, p.table
        return (epoch_k_anonymity, float(models[0].min_class_size()),
                (t.codes, ev.gen, ev.n_gen, ev.weight, t.sa, t.n_sa, ev.q, ev.kinds, t.n_records, t.offsets,
                 t.row_of_record))

    def warm_up(self) -> None:
        """Load the fused kernel (Numba's on-disk cache) with zero generations, drawing nothing
        from the island's generator."""
        if self.fused is None:
            return
        kernel, k, tables = self.fused
        nq, nr = self.G.shape[1], self.S.shape[1]
        kernel(np.random.default_rng(0), 0, np.zeros((2, nq), dtype=np.int64), np.zeros((2, nr), dtype=bool),
               np.zeros(2, dtype=bool), np.zeros(2), np.zeros(2), np.zeros((2, 1)), np.zeros(2, dtype=np.int64),
               self.heights, 0.5, 0.1, k, 0, True, *tables, False, False, 0.0)

    def evolve(self, generations: int) -> None:
        if self.fused is None or not self.can_evolve():
            super().evolve(generations)
            return
        kernel, k, tables = self.fused
        c = self.config
        logged = self._log_best
        done, EG, ER, EA, ET, ES, EF, EV, best_rows = kernel(
            self.rng, generations, self.G, self.S, self.feas, self.viol, self.td, self.ad, self.sup, self.heights,
            c["cr"], c["mr"], k, self.remaining, bool(c["improvement"]), *tables,
            logged is not None, bool(logged and logged[0]), float(logged[1]) if logged else 0.0)
        self.record_evaluations(EG, ER, Evaluation(EA, ET, EF, EV, ES), best_rows=best_rows)
        self.generations += done

    def _mutate(self, g: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        c = self.config
        if c["mutation"] == "plain":
            return mut_reset_flip(g, s, self.heights, mr=c["mr"], rng=self.rng)
        return mut_info_driven(g, s, self.heights, mr=c["mr"], rng=self.rng, per_gene=c["mutation_per_gene"])

    def generation(self) -> None:
        c = self.config
        pairs = pair_up(self.size, rng=self.rng)
        if not len(pairs):
            return
        G = np.empty((len(pairs), self.G.shape[1]), dtype=np.int64)
        S = np.empty((len(pairs), self.S.shape[1]), dtype=bool)
        for j, (a, b) in enumerate(pairs.tolist()):  # one child per pair, in pair order (same draws)
            G[j], S[j] = self._mutate(*cx_info_driven(self.G[a], self.S[a], self.G[b], self.S[b], rng=self.rng,
                                                      cr=c["cr"]))
        out = self.evaluate(G, S)
        if out is None:
            return
        ev, S = out
        n = len(ev)
        # Each child's latest evaluation (batch, row) and S.
        cur: list[tuple[Any, int]] = [(ev, j) for j in range(n)]
        cur_s = [S[j] for j in range(n)]
        # Improvement (§4.5) of the infeasible mutants, one evaluated batch per round.
        todo = [j for j in range(n) if not ev.feasible[j]] if c["improvement"] else []
        while todo and not self.exhausted:
            changed, new_s = [], []
            for j in todo:
                ad, higher_is_safer = record_disclosure(self.problem, G[j], cur_s[j])
                s2 = imp_info_driven(cur_s[j], ad, higher_is_safer=higher_is_safer)
                if not np.array_equal(s2, cur_s[j]):
                    changed.append(j)
                    new_s.append(s2)
            if not changed:
                break
            res = self.evaluate(G[changed], np.stack(new_s))
            if res is None:
                break
            ev2, S2 = res
            for pos in range(len(ev2)):
                cur[changed[pos]] = (ev2, pos)
                cur_s[changed[pos]] = S2[pos]
            if not c["improve_until_feasible"]:
                break
            todo = [changed[pos] for pos in range(len(ev2)) if not ev2.feasible[pos]]
        # Selection (§4.6): the child replaces the worse parent if it beats it.
        for j in range(n):
            bev, r = cur[j]
            worse = self.worse_of(*pairs[j])
            if self.beats(bev, r, worse):
                self.put(worse, G[j], cur_s[j], bev, r)


def _configure(name: str, params: dict[str, Any], preset: dict[str, Any]) -> dict[str, Any]:
    fixed = set(preset) & set(params)
    if fixed:
        raise SpecError(f"{name} optimizer: {sorted(fixed)} fixed by this variant. Hint: use 'id-dga' with the parameter.")
    config = parse_params(name, params, {k: v for k, v in ID_DGA_DEFAULTS.items() if k not in preset})
    config.update(preset)
    if config["mutation"] not in ("info", "plain"):
        raise SpecError(f"{name} optimizer: mutation must be 'info' or 'plain', not {config['mutation']!r}.")
    return config


def _run(name: str, problem: Problem, budget: int, seed: int, params: dict[str, Any], preset: dict[str, Any],
         progress: ProgressFn | None) -> OptimizerResult:
    config = _configure(name, params, preset)
    return run_islands(problem, IDDGAIsland, config, name=name, budget=budget, seed=seed, progress=progress)


def _register(name: str, preset: dict[str, Any], doc: str) -> None:
    def optimizer(problem: Problem, *, budget: int, seed: int = 0, params: dict[str, Any],
                  progress: ProgressFn | None = None) -> OptimizerResult:
        return _run(name, problem, budget, seed, params, preset, progress)

    @checks_params(name)
    def configure(params: dict[str, Any]) -> dict[str, Any]:
        return _configure(name, params, preset)

    optimizer.__name__ = name.replace("-", "_").replace("+", "_")
    optimizer.__doc__ = doc
    OPTIMIZERS.register(name)(optimizer)
    takes_objectives(name, "fitness")


_register("id-dga", {}, "ID-DGA (islands 4, pop_size 40, mr 0.1, migration_interval 5).")
_register("id-ga", {"islands": 1}, "ID-GA: ID-DGA's operators on one population of 40.")
_register("id-dga-without-framework", {"islands": 1}, "Ablation (ID-DGA Table 4): one population (= ID-GA).")
_register("id-dga-without-mutation", {"mutation": "plain"}, "Ablation: plain per-gene reset / flip mutation.")
_register("id-dga-without-improvement", {"improvement": False}, "Ablation: no improvement operator.")
_register("id-dga+oracle", {"oracle": True}, "ID-DGA with the exact suppression oracle as repair (ours).")
