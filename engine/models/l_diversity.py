"""Distinct and entropy l-diversity (Machanavajjhala et al. 2007), beyond the papers (§2)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from engine.errors import SpecError
from engine.evaluator import _kernels as K
from engine.models import MODELS, ClassStats, OracleParams

TOLERANCE = 1e-12


def _read_l(name: str, params: dict[str, Any], *, integer: bool) -> float:
    unknown = set(params) - {"l"}
    if unknown:
        raise SpecError(f"{name} takes only 'l', not {sorted(unknown)}.")
    value = params.get("l")
    ok = isinstance(value, int) if integer else isinstance(value, int | float)
    if isinstance(value, bool) or not ok or value < 1:
        kind = "an integer" if integer else "a number"
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

    def describe(self, ad: float) -> str:
        return f"distinct l-diversity: fewest distinct values {'-' if math.isinf(ad) else int(ad)} (l = {self.l})"


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

    def describe(self, ad: float) -> str:
        return f"entropy l-diversity: smallest effective l {ad:.3f} (l = {self.l})"
