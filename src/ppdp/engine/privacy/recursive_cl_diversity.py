"""Recursive (c, l)-diversity (Machanavajjhala et al. 2007, "l-Diversity: Privacy Beyond
k-Anonymity", Def. 4.1), as ARX's RecursiveCLDiversity: with a class's sensitive counts in
descending order r_1 >= r_2 >= ... >= r_m, the class satisfies it when r_1 < c (r_l + r_{l+1} +
... + r_m) (so it holds at least l distinct values). AD = the largest r_1 / (r_l + ... + r_m)
over classes (inf for a class with fewer than l values); feasible when AD < c.

Protects against attribute disclosure by a dominant value: even after an adversary rules out
l - 2 of a class's values, the most frequent of the rest is not overwhelmingly likely; unlike
distinct l-diversity, a class of 98 "flu" and one each of two other values fails.
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
    distinct_sensitive_values,
)
from ppdp.engine.privacy.oracle import OracleParams
from ppdp.errors import SpecError
from ppdp.sql import distributions as DS
from ppdp.sql.dialect import Dialect

if TYPE_CHECKING:
    from ppdp.engine.core.encoding import EncodedTable


@MODELS.register("recursive-cl-diversity")
@dataclass(frozen=True)
class RecursiveCLDiversity(PrivacyModel):
    c: float
    l: int  # noqa: E741 (the paper's name)
    name: ClassVar[str] = "recursive-cl-diversity"
    requirements: ClassVar[Requirements] = Requirements(sensitive_counts=True)
    higher_is_safer: ClassVar[bool] = False
    # A union of classes that each satisfy it satisfies it (Machanavajjhala et al. 2007 state the
    # monotonicity; directly: the union's top count is at most the sum of the classes' top counts
    # and its tail r_l + ... + r_m at least the sum of their tails, since its l - 1 largest counts
    # are at most the sum of theirs). The cross-version check rests on this.
    union_closed: ClassVar[bool] = True
    # ARX declares it monotone with generalization only; ppdp's Flash needs monotonicity with
    # suppression too, which fails (suppressing a dominant value's records can fix a class).
    # Nor does ARX prune by it at a suppression limit above 0 (as the t-closeness and
    # beta-likeness models): ARXConfiguration.getMonotonicityOfPrivacy is then PARTIAL (only
    # k's minimal class size) and FLASH prunes by the Loss metric's lower bound against its best
    # (FLASHAlgorithmImpl.prune), as ppdp's lattice prunes by UB(G) >= TD. ARX's fewer checked
    # nodes on adult (610 against 1,728) come from where its optimum lies under Loss, not from
    # monotonicity; under S*(G) for k alone ppdp's feasibility is not monotone either way (a
    # class passing at G can absorb a record suppressed there, and a failing one can split).
    monotone: ClassVar[bool] = False
    kernel_kind: ClassVar[int | None] = kinds.RECURSIVE_RATIO
    warm_up_example: ClassVar[dict[str, Any] | None] = {"c": 10, "l": 2}

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> RecursiveCLDiversity:
        unknown = set(params) - {"c", "l"}
        if unknown:
            raise SpecError(f"recursive-cl-diversity takes only 'c' and 'l', not {sorted(unknown)}.")
        c, l_min = params.get("c"), params.get("l")
        if isinstance(c, bool) or not isinstance(c, int | float) or not math.isfinite(c) or c <= 0:
            raise SpecError(f"recursive-cl-diversity needs a finite number c > 0, got {c!r}. Hint: c = 3.")
        if isinstance(l_min, bool) or not isinstance(l_min, int) or l_min < 1:
            raise SpecError(f"recursive-cl-diversity needs an integer l >= 1, got {l_min!r}. Hint: l = 2.")
        return cls(float(c), l_min)

    def params(self) -> dict[str, Any]:
        return {"c": self.c, "l": self.l}

    def impossible_reason(self, table: EncodedTable) -> str | None:
        """Exact: a class's r_1 / tail is at least 1 / (d - l + 1) (r_1 bounds each of the tail's
        d - l + 1 counts at most), reached by one record of each of the table's d values."""
        d = distinct_sensitive_values(table)
        if self.l > d:
            return f"l = {self.l} but the sensitive attribute has only {d} distinct value(s) in the table. Hint: choose l <= {d}"
        if not 1 < self.c * (d - self.l + 1):
            return (f"c = {self.c:g} with l = {self.l}: a class's most frequent value is at least 1/{d - self.l + 1} of "
                    f"r_l + ... + r_m with {d} values. Hint: choose c > {1 / (d - self.l + 1):g}")
        return None

    def class_ad(self, stats: ClassStats) -> np.ndarray:
        return D.recursive_ratio(stats, self.l)

    def kernel_params(self) -> np.ndarray:
        return np.array([float(self.l)])

    def ad(self, stats: ClassStats) -> float:
        return D.largest(kinds.RECURSIVE_RATIO, self.kernel_params(), stats)

    def reference_ad(self, classes: ReferenceClasses, q: list[float]) -> float:
        return max((D.recursive_ratio_ref(c, self.l) for c in classes.values() if sum(c.values()) > 0), default=0.0)

    def feasible(self, ad: float) -> bool:
        # Strict, as Def. 4.1 and ARX (r_1 < c * tail).
        return ad < self.c

    def violation(self, ad: float) -> float:
        return 0.0 if self.feasible(ad) else min((ad - self.c) / self.c + 1e-9, 1e9)

    def min_class_size(self) -> int:
        return self.l

    def oracle(self) -> OracleParams | None:
        """None: S*(G) has no recursive (c, l) term, so no result under it is certified optimal."""
        return None

    def describe(self, ad: float) -> str:
        shown = "fewer than l values" if math.isinf(ad) else f"{ad:.4f}"
        return f"recursive (c, l)-diversity: largest r1 / (r_l + ... + r_m) {shown} (c = {self.c:g}, l = {self.l})"

    def version_sql(self, relation: str, qids: list[str], sensitive: list[str], q_relation: str, d: Dialect) -> str:
        """The independent SQL check of a version: (ad, classes)."""
        return DS.version_check(DS.recursive_ratio(DS.version_counts(relation, qids, sensitive, d), self.l))

    def history_failures(self, sig: str, values_at, q_at, versions: list[int], d: Dialect) -> list[str]:
        """Queries of the history classes (sig_now) with r_1 >= c * tail in some version."""
        return [DS.failing(DS.recursive_ratio(DS.history_counts(values_at(v)), self.l), self.c, strict=True) for v in versions]
