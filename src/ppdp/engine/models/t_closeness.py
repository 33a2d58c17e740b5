"""t-closeness with the Euclidean distance of HAEF eq. 2-4.

S = distribution of the (joint) sensitive value among a class's retained records, Q = its
distribution over the whole source table (PAPER_NOTES §2), D = ||S - Q||_2, AD = max over
classes; feasible when AD <= t.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ppdp.engine.errors import SpecError
from ppdp.engine.evaluator import _kernels as K
from ppdp.engine.models import MODELS, ClassStats, OracleParams
from ppdp.sql import history as H
from ppdp.sql import verify as V

if TYPE_CHECKING:
    from ppdp.engine.encoding import EncodedTable

# Distances are sums of squares of ratios; allow for rounding when a class sits exactly on t.
TOLERANCE = 1e-12


@MODELS.register("t-closeness")
@dataclass(frozen=True)
class TCloseness:
    t: float
    name: str = "t-closeness"
    needs_pairs: bool = True
    higher_is_safer: bool = False

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
