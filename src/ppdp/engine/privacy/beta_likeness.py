"""beta-likeness (Cao and Karras 2012, "Publishing Microdata with a Robust Privacy Guarantee"),
basic or enhanced, as ARX's BasicBLikeness / EnhancedBLikeness: for every class and every
sensitive value s it holds, with p_s its share of the class and q_s its share of the source,
(p_s - q_s) / q_s <= beta (basic) or <= min(beta, -ln q_s) (enhanced). AD = the largest excess
(p_s - q_s) / q_s - bound(q_s) over classes and values; feasible when AD <= 0.

Protects against attribute disclosure by a relative gain in belief: learning someone's class
raises the probability of no sensitive value by more than a factor 1 + beta over its share of the
table, which bounds the gain for rare values (where t-closeness's absolute distance is lax);
enhanced also caps the gain of a frequent value by -ln q_s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ppdp.engine.kernels import kinds
from ppdp.engine.privacy import distributions as D
from ppdp.engine.privacy.base import (
    MODELS,
    ClassStats,
    PrivacyModel,
    ReferenceClasses,
    Requirements,
)
from ppdp.engine.privacy.oracle import OracleParams
from ppdp.errors import SpecError
from ppdp.sql import distributions as DS
from ppdp.sql.dialect import Dialect

if TYPE_CHECKING:
    from ppdp.engine.core.encoding import EncodedTable

TOLERANCE = 1e-12  # shares are ratios: a class exactly on the bound must not fail by rounding


@MODELS.register("beta-likeness")
@dataclass(frozen=True)
class BetaLikeness(PrivacyModel):
    beta: float
    enhanced: bool = False
    name: ClassVar[str] = "beta-likeness"
    requirements: ClassVar[Requirements] = Requirements(sensitive_counts=True)
    higher_is_safer: ClassVar[bool] = False
    # Each value's condition p_s <= q_s (1 + bound(q_s)) is linear in the class's distribution,
    # and a union's distribution is a convex mix of its classes': union-closed.
    union_closed: ClassVar[bool] = True
    # Not monotone with suppression (suppressing a class's over-represented records can fix it).
    monotone: ClassVar[bool] = False
    kernel_kind: ClassVar[int | None] = kinds.LIKENESS_EXCESS
    warm_up_example: ClassVar[dict[str, Any] | None] = {"beta": 2.0}

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> BetaLikeness:
        unknown = set(params) - {"beta", "enhanced"}
        if unknown:
            raise SpecError(f"beta-likeness takes only 'beta' and 'enhanced', not {sorted(unknown)}.")
        beta, enhanced = params.get("beta"), params.get("enhanced", False)
        if isinstance(beta, bool) or not isinstance(beta, int | float) or not math.isfinite(beta) or beta <= 0:
            raise SpecError(f"beta-likeness needs a finite number beta > 0, got {beta!r}. Hint: beta = 1.")
        if not isinstance(enhanced, bool):
            raise SpecError(f"beta-likeness enhanced must be true or false, got {enhanced!r}.")
        return cls(float(beta), enhanced)

    def params(self) -> dict[str, Any]:
        return {"beta": self.beta, "enhanced": self.enhanced}

    def impossible_reason(self, table: EncodedTable) -> str | None:
        """Never: the root class with nothing suppressed has p = q (gain 0 <= any bound)."""
        return None

    def class_ad(self, stats: ClassStats) -> np.ndarray:
        return D.likeness_excess(stats, self.beta, self.enhanced)

    def kernel_params(self) -> np.ndarray:
        return np.array([self.beta, 1.0 if self.enhanced else 0.0])

    def ad(self, stats: ClassStats) -> float:
        return D.largest(kinds.LIKENESS_EXCESS, self.kernel_params(), stats)

    def reference_ad(self, classes: ReferenceClasses, q: list[float]) -> float:
        return max((D.likeness_excess_ref(c, q, self.beta, self.enhanced) for c in classes.values() if sum(c.values()) > 0),
                   default=-math.inf)

    def feasible(self, ad: float) -> bool:
        return ad <= TOLERANCE

    def violation(self, ad: float) -> float:
        return 0.0 if self.feasible(ad) else min(ad / self.beta, 1e9)

    def oracle(self) -> OracleParams | None:
        """None: S*(G) has no beta-likeness term, so no result under it is certified optimal."""
        return None

    def describe(self, ad: float) -> str:
        kind = "enhanced" if self.enhanced else "basic"
        return f"{kind} beta-likeness: largest relative gain over its bound {ad:+.4f} (beta = {self.beta:g}; <= 0 passes)"

    def version_sql(self, relation: str, qids: list[str], sensitive: list[str], q_relation: str, d: Dialect) -> str:
        """The independent SQL check of a version: (ad, classes) against the stored Q."""
        counts = DS.version_counts(relation, qids, sensitive, d)
        return DS.with_largest_gain(DS.version_check(DS.likeness_excess(counts, q_relation, self.beta, self.enhanced)),
                                    counts, q_relation)

    def achieved_value(self, frame: Any, ad: float | None) -> float | None:
        """The largest relative gain (p - q) / q of a value in a class, which beta bounds (basic;
        enhanced: min(beta, -ln q) per value); AD is its excess over the bound."""
        gain = frame.row(0, named=True).get("gain") if "gain" in frame.columns else None
        return None if gain is None else float(gain)

    def history_failures(self, sig: str, values_at, q_at, versions: list[int], d: Dialect) -> list[str]:
        """Queries of the history classes (sig_now) over the bound in some version."""
        return [DS.failing(DS.likeness_excess(DS.history_counts(values_at(v)), q_at(v), self.beta, self.enhanced), 0.0)
                for v in versions]
