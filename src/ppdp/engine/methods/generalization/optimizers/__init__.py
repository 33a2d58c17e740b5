"""Optimizers, registered by name, all on one interface.

    optimize(problem, *, budget, seed, params, progress) -> OptimizerResult

``budget`` counts evaluations of (G, S) (docs/design/paper_notes.md §1); ``seed`` feeds a
``np.random.Generator``; ``params`` are the optimizer's own options (paper defaults when
absent); ``progress(evaluations, best_td, feasible)`` is called now and then. Each optimizer
records best-so-far per evaluation count through ``Tracker`` for convergence curves.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np

from ppdp.engine.methods.generalization.evaluators import Evaluation
from ppdp.engine.methods.generalization.problem import Problem, fitness_key
from ppdp.registry import Registry, registry

ProgressFn = Callable[[int, float, bool], None]


@dataclass(frozen=True, eq=False)
class OptimizerResult:
    """Best solution found, how it was found, and whether it is proven optimal."""

    optimizer: str
    g: np.ndarray  # (nQ,) levels
    retained: np.ndarray  # (H,) kept records per histogram row (S in compressed form)
    td: float
    feasible: bool
    ad: np.ndarray  # (n_models,)
    suppressed: int
    evaluations: int
    seconds: float
    history: np.ndarray  # (n, 3): evaluation count, best TD so far, best is feasible (0/1)
    certified: bool = False  # TD is proven maximal over all (G, S) (within the suppression limit, if the optimizer has one)
    info: dict[str, Any] = field(default_factory=dict)
    # Why a search that would otherwise have certified its result could not (models/oracle.py).
    not_certified_because: tuple[str, ...] = ()

    def curve(self, budget: int | None = None) -> np.ndarray:
        """Best TD after each evaluation 1..budget (NaN before the first feasible one)."""
        n = budget or self.evaluations
        out = np.full(n, np.nan)
        for (e, td, feas), nxt in zip(self.history, list(self.history[1:, 0]) + [n + 1], strict=False):
            if feas:
                out[int(e) - 1 : int(nxt) - 1] = td
        return out


class Optimizer(Protocol):
    def __call__(self, problem: Problem, *, budget: int, seed: int, params: dict[str, Any],
                 progress: ProgressFn | None = None) -> OptimizerResult: ...


# built-ins: ppdp/registry.py KINDS; other packages: entry points of group ``ppdp.optimizers``
OPTIMIZERS: Registry[Optimizer] = registry("optimizer")

# Each optimizer's check of its ``params`` alone (no problem needed), by optimizer name: a release
# runs it before anything is written; the optimizer runs the same code again.
ParamsCheck = Callable[[dict[str, Any]], object]
PARAMS_CHECKS: dict[str, ParamsCheck] = {}
_C = TypeVar("_C", bound=ParamsCheck)


# How an optimizer minimizes an objective other than TD (engine/methods/generalization/objectives.py),
# by optimizer name: "bounds" searches by the objective's own bounds (objectives.search, certified
# where the bound is sound); "fitness" takes it as the fitness of its population (objectives.evolve,
# never certified). An optimizer that declares neither runs TD alone: an objective is refused.
OBJECTIVE_SEARCH: dict[str, str] = {}


def takes_objectives(name: str, how: str) -> None:
    """Declare that optimizer ``name`` minimizes any objective, by its bounds or as its fitness."""
    if how not in ("bounds", "fitness"):
        raise ValueError(f"an optimizer takes objectives by 'bounds' or 'fitness', not {how!r}")
    OBJECTIVE_SEARCH[name] = how


def objective_search_of(name: str) -> str | None:
    """How optimizer ``name`` takes an objective ("bounds" or "fitness"), or None: TD alone."""
    OPTIMIZERS.names()  # the built-in optimizers declare themselves when their modules load
    return OBJECTIVE_SEARCH.get(name)


def checks_params(name: str) -> Callable[[_C], _C]:
    """Decorator: register ``check(params)`` (it raises SpecError; what it returns is the
    optimizer's own) as optimizer ``name``'s check of its parameters."""

    def add(check: _C) -> _C:
        PARAMS_CHECKS[name] = check
        return check

    return add


# Each optimizer's check of the privacy models it is given (e.g. Flash: monotone ones only).
ModelsCheck = Callable[[Sequence[Any]], object]
MODELS_CHECKS: dict[str, ModelsCheck] = {}


def checks_models(name: str) -> Callable[[ModelsCheck], ModelsCheck]:
    """Decorator: register ``check(models)`` (raises SpecError) as optimizer ``name``'s check of
    the privacy models of a problem."""

    def add(check: ModelsCheck) -> ModelsCheck:
        MODELS_CHECKS[name] = check
        return check

    return add


def check_optimizer_params(name: str, params: dict[str, Any]) -> None:
    """SpecError when optimizer ``name`` would refuse ``params``; reads and writes nothing."""
    OPTIMIZERS.get(name)  # loads the module that registers the optimizer and its checks
    check = PARAMS_CHECKS.get(name)
    if check is not None:
        check(dict(params))


def check_optimizer_models(name: str, models: Sequence[Any]) -> None:
    """SpecError when optimizer ``name`` would refuse these privacy models; writes nothing."""
    OPTIMIZERS.get(name)
    check = MODELS_CHECKS.get(name)
    if check is not None:
        check(models)


class Tracker:
    """Keeps the best solution under the two-dimension rule, the budget and the history."""

    def __init__(self, problem: Problem, budget: int, *, name: str, progress: ProgressFn | None = None) -> None:
        self.problem = problem
        self.budget = int(budget)
        self.name = name
        self.progress = progress
        self.used = 0
        self.best_key: tuple[int, float] | None = None
        self.best_g: np.ndarray | None = None
        self.best_retained: np.ndarray | None = None
        self.best_eval: Evaluation | None = None
        self.history: list[tuple[int, float, int]] = []
        self.start = time.perf_counter()
        self._last_report = self.start

    @property
    def remaining(self) -> int:
        return max(self.budget - self.used, 0)

    @property
    def exhausted(self) -> bool:
        return self.used >= self.budget

    def offer(self, G: np.ndarray, retained: np.ndarray, evaluation: Evaluation) -> None:
        """Record a batch of evaluated solutions, in order."""
        G = np.atleast_2d(G)
        retained = np.atleast_2d(retained)
        for i in range(len(evaluation)):
            self.used += 1
            key = fitness_key(bool(evaluation.feasible[i]), float(evaluation.violation[i]), float(evaluation.td[i]))
            if self.best_key is None or key > self.best_key:
                self.best_key = key
                self.best_g = np.array(G[i], dtype=np.int64)
                self.best_retained = np.array(retained[i], dtype=np.int64)
                self.best_eval = evaluation.row(i)
                self.history.append((self.used, float(evaluation.td[i]), int(evaluation.feasible[i])))
        self._report()

    def count(self, n: int) -> None:
        """Record ``n`` evaluated solutions known not to beat the best (e.g. an island's rows
        that did not improve its own best, which the global best already dominates)."""
        if n > 0:
            self.used += int(n)
            self._report()

    def _report(self) -> None:
        if self.progress is not None and self.best_eval is not None:
            now = time.perf_counter()
            if now - self._last_report > 0.1 or self.exhausted:
                self._last_report = now
                e = self.best_eval
                self.progress(self.used, float(e.td[0]), bool(e.feasible[0]))

    def result(self, *, certified: bool = False, info: dict[str, Any] | None = None) -> OptimizerResult:
        """The best solution found. ``certified``: the search proved it optimal *given an exact
        oracle*; it is certified only when the problem's S*(G) is exact for every model (the
        reasons otherwise go to ``not_certified_because``)."""
        if self.best_eval is None or self.best_g is None or self.best_retained is None:  # (all three are set together)
            raise RuntimeError(f"{self.name} evaluated nothing (budget {self.budget})")
        e = self.best_eval
        hist = np.array(self.history + [(self.used, self.history[-1][1], self.history[-1][2])], dtype=np.float64)
        return OptimizerResult(
            optimizer=self.name, g=self.best_g, retained=self.best_retained, td=float(e.td[0]),
            feasible=bool(e.feasible[0]), ad=e.ad[0].copy(), suppressed=int(e.suppressed[0]),
            evaluations=self.used, seconds=time.perf_counter() - self.start, history=hist,
            certified=certified and self.problem.oracle_exact, info=dict(info or {}),
            not_certified_because=self.problem.oracle_plan.reasons if certified else (),
        )


def run_optimizer(name: str, problem: Problem, *, budget: int, seed: int = 0, params: dict[str, Any] | None = None,
                  progress: ProgressFn | None = None) -> OptimizerResult:
    """Look up ``name`` in the registry and run it."""
    return OPTIMIZERS.get(name)(problem, budget=budget, seed=seed, params=dict(params or {}), progress=progress)


def optimizer_names() -> list[str]:
    """Every registered optimizer's name (the built-in modules imported first)."""
    return OPTIMIZERS.names()
