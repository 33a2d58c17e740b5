"""Distinct and entropy l-diversity (Machanavajjhala et al. 2007), beyond the papers (§2).

Protect against attribute disclosure by homogeneity: every class holds several well-represented
sensitive values, so knowing someone's class does not reveal their value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ppdp.engine.kernels import classes as K
from ppdp.engine.kernels import kinds
from ppdp.engine.privacy.base import (
    MODELS,
    ClassStats,
    PrivacyModel,
    ReferenceClasses,
    Requirements,
    distinct_sensitive_values,
)
from ppdp.engine.privacy.oracle import OracleParams
from ppdp.errors import SpecError
from ppdp.sql import evaluator as esql
from ppdp.sql import history as H
from ppdp.sql import queries as Q
from ppdp.sql.dialect import Dialect

if TYPE_CHECKING:
    from ppdp.engine.core.encoding import EncodedTable

TOLERANCE = 1e-12


def _read_l(name: str, params: dict[str, Any], *, integer: bool) -> float:
    unknown = set(params) - {"l"}
    if unknown:
        raise SpecError(f"{name} takes only 'l', not {sorted(unknown)}.")
    value = params.get("l")
    ok = isinstance(value, int) if integer else isinstance(value, int | float)
    if isinstance(value, bool) or not ok or not isinstance(value, int | float) or not math.isfinite(value) or value < 1:
        kind = "an integer" if integer else "a finite number"
        raise SpecError(f"{name} needs {kind} l >= 1, got {value!r}. Hint: l = 2.")
    return float(value)


@MODELS.register("distinct-l-diversity")
@dataclass(frozen=True)
class DistinctLDiversity(PrivacyModel):
    """Every class holds at least l distinct sensitive values. AD = the smallest count."""

    l: int  # noqa: E741 (the papers' name)
    name: ClassVar[str] = "distinct-l-diversity"
    requirements: ClassVar[Requirements] = Requirements(sensitive_counts=True)
    union_closed: ClassVar[bool] = True  # a union holds every value of each of its classes
    # Monotone in theory (ARX declares it), but Flash has not been tested against exhaustive
    # search with it: not declared until it is.
    monotone: ClassVar[bool] = False
    kernel_kind: ClassVar[int | None] = kinds.FEWEST_DISTINCT
    warm_up_example: ClassVar[dict[str, Any] | None] = {"l": 2}

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> DistinctLDiversity:
        return cls(int(_read_l("distinct-l-diversity", params, integer=True)))

    def ad(self, stats: ClassStats) -> float:
        return float(K.ad_distinct_l(stats.size, stats.pair_class, stats.pair_n))

    def reference_ad(self, classes: ReferenceClasses, q: list[float]) -> float:
        return min((sum(1 for n in c.values() if n > 0) for c in classes.values()), default=math.inf)

    def class_ad(self, stats: ClassStats) -> np.ndarray:
        live = stats.pair_n > 0
        return np.bincount(stats.pair_class[live], minlength=len(stats.size)).astype(np.float64)

    def feasible(self, ad: float) -> bool:
        return ad >= self.l

    def min_class_size(self) -> int:
        return self.l

    def violation(self, ad: float) -> float:
        return 0.0 if ad >= self.l else (self.l - ad) / self.l

    def oracle(self) -> OracleParams:
        return OracleParams(l_distinct=self.l)

    def params(self) -> dict[str, Any]:
        return {"l": self.l}

    def impossible_reason(self, table: EncodedTable) -> str | None:
        """Every class's values are among the table's; the root class has them all, so exact."""
        d = distinct_sensitive_values(table)
        if self.l > d:
            return (f"l = {self.l} but the sensitive attribute has only {d} distinct value(s) in the table. "
                    f"Hint: choose l <= {d}")
        return None

    def describe(self, ad: float) -> str:
        return f"distinct l-diversity: fewest distinct values {'-' if math.isinf(ad) else int(ad)} (l = {self.l})"

    def version_sql(self, relation: str, qids: list[str], sensitive: list[str], q_relation: str, d: Dialect) -> str:
        """The independent SQL check of a version: (ad, classes) over ``relation``."""
        return Q.verify_l_query(relation, qids, sensitive, entropy=False, d=d)

    def history_failures(self, sig: str, values_at, q_at, versions: list[int], d: Dialect) -> list[str]:
        """Queries of the history classes (sig_now) with fewer than l values in some version."""
        return [H.failing_distinct_l(values_at(v), self.l) for v in versions]

    def evaluator_term(self) -> esql.AdTerm:
        return esql.fewest_distinct()


@MODELS.register("entropy-l-diversity")
@dataclass(frozen=True)
class EntropyLDiversity(PrivacyModel):
    """Entropy of every class's sensitive values >= log(l). AD = smallest exp(entropy)."""

    l: float  # noqa: E741
    name: ClassVar[str] = "entropy-l-diversity"
    requirements: ClassVar[Requirements] = Requirements(sensitive_counts=True)
    # Entropy is concave: a union's entropy is at least the smallest of its classes'.
    union_closed: ClassVar[bool] = True
    monotone: ClassVar[bool] = False  # S*(G) suppresses inside classes: not shown monotone
    kernel_kind: ClassVar[int | None] = kinds.SMALLEST_EXP_ENTROPY
    warm_up_example: ClassVar[dict[str, Any] | None] = {"l": 1.5}

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> EntropyLDiversity:
        return cls(float(_read_l("entropy-l-diversity", params, integer=False)))

    def ad(self, stats: ClassStats) -> float:
        return float(K.ad_entropy_l(stats.size, stats.pair_class, stats.pair_n))

    def reference_ad(self, classes: ReferenceClasses, q: list[float]) -> float:
        out = math.inf
        for counts in classes.values():
            n = sum(counts.values())
            h = -sum(c / n * math.log(c / n) for c in counts.values() if c > 0)
            out = min(out, math.exp(h))
        return out

    def feasible(self, ad: float) -> bool:
        # Compare in log space with a tolerance: a class (1, 1) has entropy log 2 exactly.
        return math.isinf(ad) or math.log(ad) >= math.log(self.l) - TOLERANCE

    def violation(self, ad: float) -> float:
        return 0.0 if self.feasible(ad) else (self.l - ad) / self.l

    def oracle(self) -> OracleParams:
        return OracleParams(l_entropy=self.l)

    def params(self) -> dict[str, Any]:
        return {"l": self.l}

    def impossible_reason(self, table: EncodedTable) -> str | None:
        """exp(entropy) of a class is at most its number of distinct values, which is at most d
        (the table's). Suppression reaches d: one record of each value is a class with entropy
        log d, so l <= d is satisfiable (the whole table's own entropy may be lower) and l > d
        is not, whatever is suppressed."""
        d = distinct_sensitive_values(table)
        if math.log(self.l) > math.log(d) + TOLERANCE:
            return (f"l = {self.l:g} but the sensitive attribute has only {d} distinct value(s) in the table, so no class "
                    f"has an effective l above {d}. Hint: choose l <= {d}")
        return None

    def describe(self, ad: float) -> str:
        return f"entropy l-diversity: smallest effective l {ad:.3f} (l = {self.l})"

    def version_sql(self, relation: str, qids: list[str], sensitive: list[str], q_relation: str, d: Dialect) -> str:
        """The independent SQL check of a version: (ad, classes) over ``relation``."""
        return Q.verify_l_query(relation, qids, sensitive, entropy=True, d=d)

    def history_failures(self, sig: str, values_at, q_at, versions: list[int], d: Dialect) -> list[str]:
        """Queries of the history classes (sig_now) whose exp(entropy) is below l in some version."""
        return [H.failing_entropy_l(values_at(v), self.l) for v in versions]

    def evaluator_term(self) -> esql.AdTerm:
        return esql.smallest_exp_entropy()
