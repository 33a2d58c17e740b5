"""k-anonymity (ID-DGA paper): AD = smallest class size; feasible when AD >= k.

Protects against identity disclosure by linkage on the quasi-identifiers: every released
record shares its QID values with at least k - 1 others.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ppdp.engine.kernels import classes as K
from ppdp.engine.kernels import kinds
from ppdp.engine.privacy.base import MODELS, ClassStats, PrivacyModel, ReferenceClasses
from ppdp.engine.privacy.oracle import OracleParams
from ppdp.errors import SpecError
from ppdp.sql import evaluator as esql
from ppdp.sql import history as H
from ppdp.sql import queries as Q
from ppdp.sql.dialect import Dialect

if TYPE_CHECKING:
    from ppdp.engine.core.encoding import EncodedTable


@MODELS.register("k-anonymity")
@dataclass(frozen=True)
class KAnonymity(PrivacyModel):
    k: int
    name: ClassVar[str] = "k-anonymity"
    union_closed: ClassVar[bool] = True  # a union of classes of >= k records has >= k records
    monotone: ClassVar[bool] = True  # merging classes only grows them (Flash's predictive tagging)
    ad_is_smallest_class: ClassVar[bool] = True
    kernel_kind: ClassVar[int | None] = kinds.SMALLEST_CLASS
    warm_up_example: ClassVar[dict[str, Any] | None] = {"k": 3}

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> KAnonymity:
        unknown = set(params) - {"k"}
        if unknown:
            raise SpecError(f"k-anonymity takes only 'k', not {sorted(unknown)}.")
        k = params.get("k")
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise SpecError(f"k-anonymity needs an integer k >= 1, got {k!r}. Hint: k = 5.")
        return cls(k)

    def ad(self, stats: ClassStats) -> float:
        return float(K.ad_k_anonymity(stats.size))

    def reference_ad(self, classes: ReferenceClasses, q: list[float]) -> float:
        return min((sum(c.values()) for c in classes.values()), default=math.inf)

    def class_ad(self, stats: ClassStats) -> np.ndarray:
        return stats.size.astype(np.float64)

    def feasible(self, ad: float) -> bool:
        # An empty release (AD = inf) is feasible with TD 0 (docs/design/paper_notes.md §2).
        return ad >= self.k

    def kernel_feasibility(self) -> tuple[int, float] | None:
        return kinds.AT_LEAST, float(self.k)  # k is an int below 2**53: exact as a float

    def violation(self, ad: float) -> float:
        """Normalized distance to feasibility; monotone in AD, so it ranks like AD does."""
        return 0.0 if ad >= self.k else (self.k - ad) / self.k

    def min_class_size(self) -> int:
        return self.k

    def oracle(self) -> OracleParams:
        return OracleParams(k=self.k)

    def params(self) -> dict[str, Any]:
        return {"k": self.k}

    def impossible_reason(self, table: EncodedTable) -> str | None:
        """Any non-empty release has a class of at most all the table's records."""
        if self.k > table.n_records:
            return f"k = {self.k} is larger than the table ({table.n_records} rows). Hint: choose k <= {table.n_records}"
        return None

    def describe(self, ad: float) -> str:
        return f"k-anonymity: smallest class {'(empty release)' if math.isinf(ad) else int(ad)} (k = {self.k})"

    def version_sql(self, relation: str, qids: list[str], sensitive: list[str], q_relation: str, d: Dialect) -> str:
        """The independent SQL check of a version: (ad, classes) over ``relation``."""
        return Q.verify_k_query(relation, qids, d)

    def history_failures(self, sig, values_at, q_at, versions: list[int], d: Dialect) -> list[str]:
        """Queries of the history classes (sig_now) that fail: fewer than k rows."""
        return [H.small_classes_k(sig, self.k)]

    def evaluator_term(self) -> esql.AdTerm:
        return esql.smallest_class()
