"""Distinct and entropy l-diversity (Machanavajjhala et al. 2007), beyond the papers (§2)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ppdp.engine.errors import SpecError
from ppdp.engine.evaluator import _kernels as K
from ppdp.engine.models import MODELS, ClassStats, OracleParams, distinct_sensitive_values
from ppdp.sql import history as H
from ppdp.sql import queries as Q

if TYPE_CHECKING:
    from ppdp.engine.encoding import EncodedTable

TOLERANCE = 1e-12


def _read_l(name: str, params: dict[str, Any], *, integer: bool) -> float:
    unknown = set(params) - {"l"}
    if unknown:
        raise SpecError(f"{name} takes only 'l', not {sorted(unknown)}.")
    value = params.get("l")
    ok = isinstance(value, int) if integer else isinstance(value, int | float)
    if isinstance(value, bool) or not ok or not math.isfinite(value) or value < 1:
        kind = "an integer" if integer else "a finite number"
        raise SpecError(f"{name} needs {kind} l >= 1, got {value!r}. Hint: l = 2.")
    return value


@MODELS.register("distinct-l-diversity")
@dataclass(frozen=True)
class DistinctLDiversity:
    """Every class holds at least l distinct sensitive values. AD = the smallest count."""

    l: int  # noqa: E741 (the papers' name)
    name: str = "distinct-l-diversity"
    needs_pairs: bool = True
    higher_is_safer: bool = True

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> DistinctLDiversity:
        return cls(int(_read_l("distinct-l-diversity", params, integer=True)))

    def ad(self, stats: ClassStats) -> float:
        return float(K.ad_distinct_l(stats.size, stats.pair_class, stats.pair_n))

    def feasible(self, ad: float) -> bool:
        return ad >= self.l

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

    def version_sql(self, relation: str, qids: list[str], sensitive: list[str], q_relation: str, d: str) -> str:
        """The independent SQL check of a version: (ad, classes) over ``relation``."""
        return Q.verify_l_query(relation, qids, sensitive, entropy=False, d=d)

    def history_failures(self, sig: str, values_at, q_at, versions: list[int]) -> list[str]:
        """Queries of the history classes (sig_now) with fewer than l values in some version."""
        return [H.failing_distinct_l(values_at(v), self.l) for v in versions]


@MODELS.register("entropy-l-diversity")
@dataclass(frozen=True)
class EntropyLDiversity:
    """Entropy of every class's sensitive values >= log(l). AD = smallest exp(entropy)."""

    l: float  # noqa: E741
    name: str = "entropy-l-diversity"
    needs_pairs: bool = True
    higher_is_safer: bool = True

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> EntropyLDiversity:
        return cls(float(_read_l("entropy-l-diversity", params, integer=False)))

    def ad(self, stats: ClassStats) -> float:
        return float(K.ad_entropy_l(stats.size, stats.pair_class, stats.pair_n))

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

    def version_sql(self, relation: str, qids: list[str], sensitive: list[str], q_relation: str, d: str) -> str:
        """The independent SQL check of a version: (ad, classes) over ``relation``."""
        return Q.verify_l_query(relation, qids, sensitive, entropy=True, d=d)

    def history_failures(self, sig: str, values_at, q_at, versions: list[int]) -> list[str]:
        """Queries of the history classes (sig_now) whose exp(entropy) is below l in some version."""
        return [H.failing_entropy_l(values_at(v), self.l) for v in versions]
