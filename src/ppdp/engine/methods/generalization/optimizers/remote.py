"""The master's Problem as data for another process (an island worker process, a Ray actor),
and the kernels such a process loads before it reports ready.

Both the island executors (engine/methods/generalization/optimizers/evolutionary/executors/) and the Ray node workers
of the lattice search (ray_executor.py) ship a Problem this way.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, replace

import numpy as np

from ppdp.engine.core.encoding import EncodedTable
from ppdp.engine.methods.generalization.problem import Problem
from ppdp.engine.privacy import PrivacyModel


@dataclass(frozen=True)
class ProblemSpec:
    """The Problem as data for a worker process: the encoded table (without its text values,
    which the evaluator does not need), the privacy models and the backend's name."""

    table: EncodedTable
    models: list[PrivacyModel]
    backend: str
    objective: str = "td"  # another: the fitness of objectives.FitnessProblem

    @classmethod
    def of(cls, problem: Problem) -> ProblemSpec:
        table = replace(problem.table, values_source=problem.table.values.clear())
        return cls(table, list(problem.models), problem.evaluator.name, getattr(problem, "objective", "td"))

    def build(self) -> Problem:
        if self.objective != "td":
            from ppdp.engine.methods.generalization.objectives import (
                FitnessProblem,  # (imports this package)
            )
            return FitnessProblem(self.table, self.models, self.objective, backend=self.backend)
        return Problem(self.table, self.models, backend=self.backend)

    def __reduce__(self):
        # One in-band pickle: Ray hands out-of-band NumPy buffers to a worker as read-only
        # views of its object store, and Numba types a read-only array apart from a writable
        # one, so every kernel of the worker's Problem was compiled a second time, never
        # served by the cache that ``ppdp warm-up`` and the local runs fill (ID-DGA's epoch
        # kernel, in each of the master and its actors on a cold cache). Unpickled
        # in-band, the arrays are the worker's own, writable, as in a local run.
        return _problem_spec_from_bytes, (pickle.dumps((self.table, self.models, self.backend, self.objective),
                                                       protocol=5),)


def _problem_spec_from_bytes(data: bytes) -> ProblemSpec:
    return ProblemSpec(*pickle.loads(data))


def writable(array: np.ndarray) -> np.ndarray:
    """``array``, or a writable copy when it is a read-only view (an argument Ray deserialized
    from its object store): the kernels then run the specialization a local run compiled."""
    return array if array.flags.writeable else array.copy()


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
