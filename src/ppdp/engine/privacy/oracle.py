"""Combining the models' terms of the exact suppression oracle S*(G) (docs/design/paper_notes.md §3).

S*(G) keeps, in every class of G, the largest set of records that satisfies the constraints
``OracleParams`` carries (the kernel is ``_kernels.optimal_pair_retention``). Each model with an
oracle contributes its constraint; the combination is exact (S*(G) provably the largest
feasible retention, so a search over G alone is a search over every (G, S)) only when every
model contributed one and the kernel is proven for that combination. Otherwise the oracle still
suppresses for the models it knows and the evaluator checks every model on the result, but no
optimizer may call its result certified, and ``OraclePlan.reasons`` says why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ppdp.engine.privacy.base import PrivacyModel


@dataclass(frozen=True)
class OracleParams:
    """The constraints S*(G) enforces; see _kernels.optimal_pair_retention."""

    k: int = 1
    t: float = -1.0
    l_distinct: int = 1
    l_entropy: float = 1.0

    def merge(self, other: OracleParams) -> OracleParams:
        t = min(x for x in (self.t, other.t) if x >= 0) if max(self.t, other.t) >= 0 else -1.0
        return OracleParams(
            k=max(self.k, other.k), t=t, l_distinct=max(self.l_distinct, other.l_distinct),
            l_entropy=max(self.l_entropy, other.l_entropy),
        )

    @property
    def kernel_exact(self) -> bool:
        """The kernel is proven optimal unless t-closeness and an l-model are combined."""
        return not (self.t >= 0 and (self.l_distinct > 1 or self.l_entropy > 1))


@dataclass(frozen=True)
class OraclePlan:
    """The combined constraints, and whether S*(G) is exact for the problem's models."""

    params: OracleParams
    reasons: tuple[str, ...]  # why not exact; empty when exact

    @property
    def exact(self) -> bool:
        return not self.reasons


def plan_oracle(models: Sequence[PrivacyModel]) -> OraclePlan:
    """Merge the models' oracle terms; a model without one makes the plan inexact."""
    params = OracleParams()
    reasons = []
    for m in models:
        term = m.oracle()
        if term is None:
            reasons.append(f"{m.name} has no exact suppression oracle (S*(G) does not enforce it), "
                           "so no result is certified optimal")
        else:
            params = params.merge(term)
    if not params.kernel_exact:
        reasons.append("S*(G) is not proven optimal for t-closeness combined with l-diversity (docs/design/paper_notes.md §3)")
    return OraclePlan(params, tuple(reasons))
