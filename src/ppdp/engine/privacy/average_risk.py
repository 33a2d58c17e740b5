"""Average re-identification risk (ARX's ``AverageReidentificationRisk``; El Emam and Dankar 2008).

The prosecutor risk of a record in a class of f records is 1/f; its average over the released
records is classes / records. Feasible when that is at most ``threshold``; optionally, as ARX,
also when at most ``records_at_risk`` of the records lie in classes smaller than the size that
``highest_risk`` allows (ARX's ``ParameterTranslation.getSizeThreshold``).

AD is the average risk, or 1 + the share of records at risk when that share exceeds its bound
(so one number says both: AD > 1 fails whatever the threshold). The empty release has AD 0.
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

TOLERANCE = 1e-12  # the SQL check divides in floating point, too


def size_threshold(highest_risk: float) -> int:
    """ARX's ``ParameterTranslation.getSizeThreshold``: the smallest class size whose risk is at
    most ``highest_risk`` (within 1 % of it)."""
    size = 1.0 / highest_risk
    floor = math.floor(size)
    if (1.0 / floor) - (1.0 / size) >= 0.01 * highest_risk:
        floor += 1
    return int(floor)


def _fraction(value: Any, what: str, hint: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or not 0 < value <= 1:
        raise SpecError(f"average-risk needs {what} in (0, 1], got {value!r}. Hint: {hint}.")
    return float(value)


@MODELS.register("average-risk")
@dataclass(frozen=True)
class AverageRisk(PrivacyModel):
    threshold: float
    highest_risk: float | None = None
    records_at_risk: float | None = None
    name: ClassVar[str] = "average-risk"
    higher_is_safer: ClassVar[bool] = False
    # A class that satisfies the model alone has >= 1/threshold records (and none at risk), and
    # classes/records of a union of such classes is at most threshold: closed under union.
    union_closed: ClassVar[bool] = True
    # Generalization merges classes (fewer classes, none smaller), suppression with a class
    # oracle removes whole small classes: average risk, highest risk and the share at risk only
    # fall (ARX declares it monotonic with generalization and suppression).
    monotone: ClassVar[bool] = True
    warm_up_example: ClassVar[dict[str, Any] | None] = {"threshold": 0.2}

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> AverageRisk:
        unknown = set(params) - {"threshold", "highest_risk", "records_at_risk"}
        if unknown:
            raise SpecError(f"average-risk takes 'threshold' (and 'highest_risk', 'records_at_risk'), not {sorted(unknown)}.")
        t = _fraction(params.get("threshold"), "a threshold", "threshold = 0.05")
        h, r = params.get("highest_risk"), params.get("records_at_risk")
        if (h is None) != (r is None):
            raise SpecError("average-risk needs 'highest_risk' and 'records_at_risk' together. Hint: highest_risk = 0.2, records_at_risk = 0.05.")
        if h is None:
            return cls(t)
        if isinstance(r, bool) or not isinstance(r, int | float) or not 0 <= r <= 1:
            raise SpecError(f"average-risk needs records_at_risk in [0, 1], got {r!r}. Hint: records_at_risk = 0.05.")
        return cls(t, _fraction(h, "highest_risk", "highest_risk = 0.2"), float(r))

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"threshold": self.threshold}
        if self.highest_risk is not None:
            out.update(highest_risk=self.highest_risk, records_at_risk=self.records_at_risk)
        return out

    @property
    def smallest_size(self) -> int:
        return size_threshold(self.highest_risk) if self.highest_risk is not None else 1

    def _ad(self, sizes: np.ndarray) -> float:
        sizes = sizes[sizes > 0]
        n = float(sizes.sum())
        if n == 0:
            return 0.0
        if self.records_at_risk is not None:
            share = float(sizes[sizes < self.smallest_size].sum()) / n
            if share > self.records_at_risk:
                return 1.0 + share
        return len(sizes) / n

    def ad(self, stats: ClassStats) -> float:
        return self._ad(np.asarray(stats.size))

    def reference_ad(self, classes: ReferenceClasses, q: list[float]) -> float:
        sizes = [sum(c.values()) for c in classes.values() if sum(c.values()) > 0]
        if not sizes:
            return 0.0
        n = sum(sizes)
        if self.records_at_risk is not None:
            share = sum(s for s in sizes if s < self.smallest_size) / n
            if share > self.records_at_risk:
                return 1.0 + share
        return len(sizes) / n

    def class_ad(self, stats: ClassStats) -> np.ndarray:
        """A class alone: average risk 1/size (1 + 1 when it is at risk and none may be)."""
        size = np.maximum(stats.size.astype(np.float64), 1.0)
        out = 1.0 / size
        if self.records_at_risk is not None and self.records_at_risk < 1:
            out = np.where(size < self.smallest_size, 2.0, out)
        return out

    def feasible(self, ad: float) -> bool:
        return ad <= self.threshold + TOLERANCE

    def violation(self, ad: float) -> float:
        return 0.0 if self.feasible(ad) else (ad - self.threshold) / (1.0 + 1.0 - self.threshold)

    def min_class_size(self) -> int:
        return self.smallest_size if self.records_at_risk == 0 else 1

    def impossible_reason(self, table: EncodedTable) -> str | None:
        """The most general release is one class of every record: average risk 1/n."""
        n = table.n_records
        if 1.0 / n > self.threshold + TOLERANCE:
            return (f"average risk {self.threshold:g} needs classes of {math.ceil(1 / self.threshold)} records on average, "
                    f"but the table has {n} rows. Hint: threshold >= {1.0 / n:.3g}")
        if self.records_at_risk is not None and self.smallest_size > n and self.records_at_risk < 1:
            return f"highest risk {self.highest_risk:g} needs classes of {self.smallest_size} records, the table has {n} rows"
        return None

    def describe(self, ad: float) -> str:
        if ad > 1:
            return f"average-risk: {ad - 1:.2%} of records at risk > {self.records_at_risk:g} ({self.params()})"
        return f"average-risk: average prosecutor risk {ad:.6g} (threshold {self.threshold:g})"

    def version_sql(self, relation: str, qids: list[str], sensitive: list[str], q_relation: str, d: Dialect) -> str:
        """Average risk (and the share at risk) over ``relation``, by GROUP BY."""
        return R.average_risk_check(relation, qids, self.smallest_size, self.records_at_risk, d)
