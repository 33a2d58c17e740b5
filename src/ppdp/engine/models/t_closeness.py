"""t-closeness with the Euclidean distance of HAEF eq. 2-4.

S = distribution of the (joint) sensitive value among a class's retained records, Q = its
distribution over the whole source table (PAPER_NOTES §2), D = ||S - Q||_2, AD = max over
classes; feasible when AD <= t.

Protects against attribute disclosure by skew: no class's sensitive distribution is far from
the table's, so learning someone's class teaches little beyond the table as a whole.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ppdp.engine.errors import SpecError
from ppdp.engine.evaluator import _kernels as K
from ppdp.engine.evaluator import kinds
from ppdp.engine.models.base import MODELS, ClassStats, PrivacyModel, ReferenceClasses, Requirements
from ppdp.engine.models.oracle import OracleParams
from ppdp.sql import evaluator as esql
from ppdp.sql import history as H
from ppdp.sql import verify as V

if TYPE_CHECKING:
    from ppdp.engine.encoding import EncodedTable

# Distances are sums of squares of ratios; allow for rounding when a class sits exactly on t.
TOLERANCE = 1e-12


@MODELS.register("t-closeness")
@dataclass(frozen=True)
class TCloseness(PrivacyModel):
    t: float
    name: ClassVar[str] = "t-closeness"
    requirements: ClassVar[Requirements] = Requirements(sensitive_counts=True)
    higher_is_safer: ClassVar[bool] = False
    # The distance is a norm: a union's distribution is a convex mix of its classes', so its
    # distance to Q is at most the largest of theirs (the cross-version check relies on it).
    union_closed: ClassVar[bool] = True
    # Not monotone with suppression: merging a failing class into a passing one can fail.
    monotone: ClassVar[bool] = False
    kernel_kind: ClassVar[int | None] = kinds.LARGEST_EUCLIDEAN_DISTANCE
    warm_up_example: ClassVar[dict[str, Any] | None] = {"t": 0.3}

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> TCloseness:
        unknown = set(params) - {"t", "distance"}
        if unknown:
            raise SpecError(f"t-closeness takes 't' (and 'distance'), not {sorted(unknown)}.")
        if params.get("distance", "euclidean") != "euclidean":
            raise SpecError(f"t-closeness distance {params['distance']!r} is not available. Hint: distance = \"euclidean\".")
        t = params.get("t")
        if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t) or not 0 < t <= 1:
            raise SpecError(f"t-closeness needs t in (0, 1], got {t!r}. Hint: t = 0.2.")
        return cls(float(t))

    def ad(self, stats: ClassStats) -> float:
        return float(K.ad_t_closeness(stats.size, stats.pair_class, stats.pair_sa, stats.pair_n, stats.q))

    def reference_ad(self, classes: ReferenceClasses, q: list[float]) -> float:
        """HAEF eq. 2-4 over every SA value."""
        worst = 0.0
        for counts in classes.values():
            n = sum(counts.values())
            d2 = sum((counts.get(v, 0) / n - q[v]) ** 2 for v in range(len(q)))
            worst = max(worst, math.sqrt(d2))
        return worst

    def class_ad(self, stats: ClassStats) -> np.ndarray:
        """HAEF eq. 2 per class, term by term as in _kernels.ad_t_closeness."""
        size = stats.size
        m = len(size)
        frac = stats.pair_n / np.maximum(size[stats.pair_class], 1)
        qv = stats.q[stats.pair_sa]
        d2 = np.bincount(stats.pair_class, weights=(frac - qv) ** 2, minlength=m)
        absent = float((stats.q ** 2).sum()) - np.bincount(stats.pair_class, weights=qv ** 2, minlength=m)
        return np.sqrt(d2 + np.maximum(absent, 0.0))

    def feasible(self, ad: float) -> bool:
        return ad <= self.t + TOLERANCE

    def violation(self, ad: float) -> float:
        return 0.0 if self.feasible(ad) else (ad - self.t) / self.t

    def oracle(self) -> OracleParams:
        return OracleParams(t=self.t + TOLERANCE)

    def params(self) -> dict[str, Any]:
        return {"t": self.t, "distance": "euclidean"}

    def impossible_reason(self, table: EncodedTable) -> str | None:
        """Never: the root class with nothing suppressed is distributed exactly like Q (distance 0)."""
        return None

    def describe(self, ad: float) -> str:
        return f"t-closeness: largest class distance {ad:.4f} (t = {self.t})"

    def version_sql(self, relation: str, qids: list[str], sensitive: list[str], q_relation: str, d: str) -> str:
        """The independent SQL check of a version: (ad, classes) against the stored Q."""
        return V.verify_t_stored(relation, qids, sensitive, q_relation, d)

    def history_failures(self, sig: str, values_at, q_at, versions: list[int]) -> list[str]:
        """Queries of the history classes (sig_now) farther than t from Q in some version."""
        return [H.failing_t(values_at(v), q_at(v), self.t) for v in versions]

    def evaluator_term(self) -> esql.AdTerm:
        return esql.largest_euclidean_distance()
