"""t-closeness clustering (the DRASL paper's ref. 11 baseline), greedy as the paper describes it:
"each equivalent group begins with a randomly selected record and continuously select the most
appropriate record to join the group ... For the t-closeness method, the criteria is to keep the
deviation between the distribution of sensitive attributes in an equivalence class and the
distribution of attributes in an entire data table within a threshold t".

Our reading: the deviation is the one the project's t-closeness model already uses
(engine/privacy/t_closeness.py, HAEF eq. 2-4): ``D = ||S - Q||_2`` with S the group's SA
distribution and Q the whole table's, over the catalogue's values. Each step takes a record of
the SA value that brings D lowest (the one nearest to the group's centroid among them, eq. 6);
a group stops at K records once ``D <= t``, and grows past K while ``D > t`` and some unassigned
record still lowers D (``static.greedy_sa_groups``).

t defaults to 0.35: for the paper's setting (32 diseases drawn uniformly, K = 8) a group of 8
distinct values has D = sqrt(96) / 32 = 0.306 and a group of 7 distinct values and one repeat
0.354, so 0.35 asks for all-distinct groups of K, the diversity a DRASL group of 8 can have.
Static: updates re-cluster the changed table.
"""

from __future__ import annotations

import math

import numpy as np

from ppdp.engine.methods.microaggregation.algorithms import ALGORITHMS
from ppdp.engine.methods.microaggregation.static import StaticAlgorithm, greedy_sa_groups
from ppdp.errors import SpecError

DEFAULT_T = 0.35


def distance_after_adding(counts: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``||S' - Q||_2`` for S' the distribution of ``counts`` plus one record of each SA code."""
    counts = np.asarray(counts, dtype=np.float64)
    n1 = counts.sum() + 1.0
    base = ((counts / n1 - q) ** 2).sum()
    delta = ((counts + 1.0) / n1 - q) ** 2 - (counts / n1 - q) ** 2
    return np.sqrt(np.maximum(base + delta, 0.0))


def distance_now(counts: np.ndarray, q: np.ndarray) -> float:
    """``||S - Q||_2`` for S the distribution of ``counts``."""
    counts = np.asarray(counts, dtype=np.float64)
    return float(np.sqrt(((counts / counts.sum() - q) ** 2).sum()))


class TClosenessClustering(StaticAlgorithm):
    """Greedy t-closeness clustering (module docstring)."""

    name = "t-closeness"

    def __init__(self, t: float = DEFAULT_T):
        if not (math.isfinite(t) and 0 < t <= 1):
            raise SpecError(f"t-closeness needs t in (0, 1], got {t!r}. Hint: t = {DEFAULT_T}.")
        self.t = t

    def groups(self, enc, sa_codes, catalogue, params):
        n_values = len(catalogue.values)
        q = np.bincount(np.asarray(sa_codes, dtype=np.int64), minlength=n_values) / len(sa_codes)
        return greedy_sa_groups(enc, sa_codes, n_values, params.k, params.seed,
                                cost_after=lambda counts: distance_after_adding(counts, q),
                                cost_now=lambda counts: distance_now(counts, q), target=self.t)


ALGORITHMS.register("t-closeness")(TClosenessClustering())
