"""The master's Problem as data for another process (an island worker process, a Ray actor),
and the kernels such a process loads before it reports ready.

Both the island executors (engine/optimizers/evolutionary/executors/) and the Ray node workers
of the lattice search (ray_executor.py) ship a Problem this way.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ppdp.engine.encoding import EncodedTable
from ppdp.engine.models import PrivacyModel
from ppdp.engine.problem import Problem


@dataclass(frozen=True)
class ProblemSpec:
    """The Problem as data for a worker process: the encoded table (without its text values,
    which the evaluator does not need), the privacy models and the backend's name."""

    table: EncodedTable
    models: list[PrivacyModel]
    backend: str

    @classmethod
    def of(cls, problem: Problem) -> ProblemSpec:
        table = replace(problem.table, values_source=problem.table.values.clear())
        return cls(table, list(problem.models), problem.evaluator.name)

    def build(self) -> Problem:
        return Problem(self.table, self.models, backend=self.backend)


def warm_up(problem: Problem, oracle: bool = True) -> None:
    """Call once every kernel an island uses, so that a fresh process loads them from Numba's
    on-disk cache now (tens to hundreds of ms) and not inside the first epoch. Touches neither
    an island nor the problem's evaluation counter. ``oracle`` False skips the kernels of the
    oracle repair (each kernel loaded is start-up time, and compile time on a first run)."""
    g = np.zeros(problem.n_qids, dtype=np.int64)
    s = np.ones(problem.n_records, dtype=bool)
    retained = problem.retained_from_s(s[None])
    problem.evaluator.evaluate(g[None], retained)
    problem.record_class_sizes(g, s)
    if oracle:
        problem.optimal_retained(g)  # class statistics (and pairs) of the general path, oracle kernels
