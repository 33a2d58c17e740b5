"""What every evaluator backend shares: the batch result, feasibility from raw AD, the registry."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from ppdp.registry import Registry, registry

if TYPE_CHECKING:
    from ppdp.engine.privacy import PrivacyModel


@dataclass(frozen=True, eq=False)
class Evaluation:
    """Results for a batch of P solutions."""

    ad: np.ndarray  # (P, n_models) disclosure value per model
    td: np.ndarray  # (P,) transparency degree
    feasible: np.ndarray  # (P,) all models satisfied
    violation: np.ndarray  # (P,) sum of normalized distances to feasibility (0 if feasible)
    suppressed: np.ndarray  # (P,) suppressed records

    def __len__(self) -> int:
        return int(self.td.shape[0])

    def row(self, i: int) -> Evaluation:
        """The i-th solution as a batch of one."""
        s = slice(i, i + 1)
        return Evaluation(self.ad[s], self.td[s], self.feasible[s], self.violation[s], self.suppressed[s])

    @staticmethod
    def concat(parts: list[Evaluation]) -> Evaluation:
        return Evaluation(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("ad", "td", "feasible", "violation", "suppressed")))


def finish(models: list[PrivacyModel], ad: np.ndarray, td: np.ndarray, suppressed: np.ndarray) -> Evaluation:
    """Feasibility and violation from raw AD values; shared by every backend."""
    ad = np.asarray(ad, dtype=np.float64).reshape(len(td), len(models))
    feasible = [True] * len(td)
    violation = [0.0] * len(td)
    for j, m in enumerate(models):
        for p, a in enumerate(ad[:, j].tolist()):
            if not m.feasible(a):
                feasible[p] = False
                violation[p] += m.violation(a)
    return Evaluation(ad, np.asarray(td, dtype=np.float64), np.array(feasible, dtype=bool), np.array(violation),
                      np.asarray(suppressed, dtype=np.int64))


class EvaluatorBackend(Protocol):
    name: str

    def evaluate(self, G: np.ndarray, retained: np.ndarray) -> Evaluation:
        """G: (P, nQ) levels; retained: (P, H) kept records per histogram row."""
        ...

    def record_class_sizes(self, g: np.ndarray, retained: np.ndarray) -> np.ndarray:
        """Class size of every record for one solution (0 for suppressed records)."""
        ...


EVALUATORS: Registry[type] = registry("evaluator")
