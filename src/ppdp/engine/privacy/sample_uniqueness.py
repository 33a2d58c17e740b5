"""Sample uniqueness (ARX's ``SampleUniqueness``): the share of released records that are alone
in their class (prosecutor risk 1) is at most ``threshold``. AD is that share.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ppdp.engine.privacy.base import MODELS, ClassStats, PrivacyModel, ReferenceClasses
from ppdp.errors import SpecError
from ppdp.sql import risk as R
from ppdp.sql.dialect import Dialect

if TYPE_CHECKING:
    from ppdp.engine.core.encoding import EncodedTable

TOLERANCE = 1e-12


@MODELS.register("sample-uniqueness")
@dataclass(frozen=True)
class SampleUniqueness(PrivacyModel):
    threshold: float
    name: ClassVar[str] = "sample-uniqueness"
    warm_up_example: ClassVar[dict[str, Any] | None] = {"threshold": 0.05}
    higher_is_safer: ClassVar[bool] = False
    # A class that satisfies it alone (threshold < 1) has >= 2 records; a union of those has no
    # unique: closed under union.
    union_closed: ClassVar[bool] = True
    # Merging classes never creates a unique, and suppressing with a class oracle removes
    # records of small classes; the share of uniques cannot grow (ARX: monotonic).
    monotone: ClassVar[bool] = True

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> SampleUniqueness:
        unknown = set(params) - {"threshold"}
        if unknown:
            raise SpecError(f"sample-uniqueness takes only 'threshold', not {sorted(unknown)}.")
        t = params.get("threshold")
        if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t) or not 0 <= t <= 1:
            raise SpecError(f"sample-uniqueness needs a threshold in [0, 1], got {t!r}. Hint: threshold = 0.01.")
        return cls(float(t))

    def params(self) -> dict[str, Any]:
        return {"threshold": self.threshold}

    def ad(self, stats: ClassStats) -> float:
        size = np.asarray(stats.size)
        n = float(size[size > 0].sum())
        return 0.0 if n == 0 else float((size == 1).sum()) / n

    def reference_ad(self, classes: ReferenceClasses, q: list[float]) -> float:
        sizes = [sum(c.values()) for c in classes.values()]
        n = sum(sizes)
        return 0.0 if n == 0 else sum(1 for s in sizes if s == 1) / n

    def class_ad(self, stats: ClassStats) -> np.ndarray:
        return (stats.size == 1).astype(np.float64)

    def feasible(self, ad: float) -> bool:
        return ad <= self.threshold + TOLERANCE

    def violation(self, ad: float) -> float:
        return 0.0 if self.feasible(ad) else (ad - self.threshold) / max(1.0 - self.threshold, 1e-12)

    def min_class_size(self) -> int:
        return 2 if self.threshold == 0 else 1

    def impossible_reason(self, table: EncodedTable) -> str | None:
        if table.n_records == 1 and self.threshold < 1:
            return "a one-row table is always unique"
        return None

    def describe(self, ad: float) -> str:
        return f"sample-uniqueness: {ad:.4%} of records unique (threshold {self.threshold:g})"

    def version_sql(self, relation: str, qids: list[str], sensitive: list[str], q_relation: str, d: Dialect) -> str:
        return R.sample_uniques_check(relation, qids, d)
