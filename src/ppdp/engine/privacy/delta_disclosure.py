"""delta-disclosure privacy (Brickell and Shmatikov 2008, "The cost of privacy: destruction of
data-mining utility in anonymized data publishing", KDD 2008), as ARX 3.9.2's DDisclosurePrivacy:
for every class and every sensitive value s PRESENT in it, with p_s its share of the class and
q_s its share of the source, |log2(p_s / q_s)| < delta (strict). AD = the largest
|log2(p_s / q_s)| over classes and present values; feasible when AD < delta.

Protects against attribute disclosure by a bounded change of belief in both directions: learning
someone's class neither raises nor lowers the probability of a sensitive value by more than a
factor 2^delta. Where this follows ARX rather than the paper (which is what ARX users get):

- ARX takes log base 2 (the paper writes ln): delta here is ARX's delta;
- ARX loops over the values present in a class only, so a value absent from a class (ln 0 =
  -inf in the paper, a failing class) is NOT checked: such a class passes if its present values
  do. Because of that the model is not union-closed (below).

The sensitive value is the joint value of the sensitive columns, as for beta-likeness (ARX
takes one attribute; with one sensitive column the two are the same).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

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

LOG2 = math.log(2.0)  # ARX's log2(x) = Math.log(x) / LOG2: the same operations give the same bits


@MODELS.register("delta-disclosure")
@dataclass(frozen=True)
class DeltaDisclosure(PrivacyModel):
    delta: float
    name: ClassVar[str] = "delta-disclosure"
    requirements: ClassVar[Requirements] = Requirements(sensitive_counts=True)
    higher_is_safer: ClassVar[bool] = False
    # Not union-closed: a value absent from a class is unchecked there, but it dilutes the
    # value's share in a union (q = (0.8, 0.2), delta = 0.5: A = {s: 9} and B = {s: 4, t: 1}
    # both pass, A u B has p_t = 1/14, |log2(p_t / q_t)| = 1.49). So no history check either.
    union_closed: ClassVar[bool] = False
    # ARX declares it monotonic neither with generalization nor with suppression.
    monotone: ClassVar[bool] = False
    kernel_kind: ClassVar[int | None] = None  # the general evaluator path: ``ad`` below, NumPy
    warm_up_example: ClassVar[dict[str, Any] | None] = {"delta": 2.0}

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> DeltaDisclosure:
        unknown = set(params) - {"delta"}
        if unknown:
            raise SpecError(f"delta-disclosure takes only 'delta', not {sorted(unknown)}.")
        delta = params.get("delta")
        if isinstance(delta, bool) or not isinstance(delta, int | float) or not math.isfinite(delta) or delta <= 0:
            raise SpecError(f"delta-disclosure needs a finite number delta > 0, got {delta!r}. Hint: delta = 1.")
        return cls(float(delta))

    def params(self) -> dict[str, Any]:
        return {"delta": self.delta}

    def impossible_reason(self, table: EncodedTable) -> str | None:
        """Never: the root class with nothing suppressed has p = q (|log2 1| = 0 < any delta)."""
        return None

    def class_ad(self, stats: ClassStats) -> np.ndarray:
        """Per class, the largest |log2(p / q)| over its present values (0 for a class without
        any; a value with q = 0, never in a release of its own source, gives inf)."""
        out = np.zeros(len(stats.size))
        if len(stats.pair_n):
            size = stats.size[stats.pair_class].astype(np.float64)
            with np.errstate(divide="ignore"):
                ratio = (stats.pair_n / size) / stats.q[stats.pair_sa]
                gap = np.abs(np.log(ratio) / LOG2)
            np.maximum.at(out, stats.pair_class, gap)
        return out

    def ad(self, stats: ClassStats) -> float:
        per_class = self.class_ad(stats)
        return float(per_class.max()) if len(per_class) else 0.0

    def reference_ad(self, classes: ReferenceClasses, q: list[float]) -> float:
        worst = 0.0
        for counts in classes.values():
            n = sum(counts.values())
            for v, c in counts.items():
                if c <= 0:
                    continue  # absent: ARX does not check it
                worst = max(worst, math.inf if q[v] <= 0 else abs(math.log((c / n) / q[v]) / LOG2))
        return worst

    def feasible(self, ad: float) -> bool:
        return ad < self.delta  # ARX fails a class at value >= delta: no tolerance either way

    def violation(self, ad: float) -> float:
        return 0.0 if self.feasible(ad) else min(ad / self.delta, 1e9)

    def oracle(self) -> OracleParams | None:
        """None: S*(G) has no delta-disclosure term, so no result under it is certified optimal."""
        return None

    def describe(self, ad: float) -> str:
        return f"delta-disclosure: largest |log2(p / q)| {ad:.4f} (delta = {self.delta:g}; < delta passes)"

    def version_sql(self, relation: str, qids: list[str], sensitive: list[str], q_relation: str, d: Dialect) -> str:
        """The independent SQL check of a version: (ad, classes) against the stored Q. No history
        check: the model is not union-closed (above), so a later version is refused by the guards
        rather than checked against the classes an attacker can intersect."""
        return DS.version_check(DS.disclosure_gap(DS.version_counts(relation, qids, sensitive, d), q_relation))
