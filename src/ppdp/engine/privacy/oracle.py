"""Combining the models' terms of the exact suppression oracle S*(G) (docs/design/paper_notes.md §3).

S*(G) keeps, in every class of G, the largest set of records that satisfies the constraints
``OracleParams`` carries (the kernel is ``_kernels.optimal_pair_retention_t``). Each model with an
oracle contributes its constraint; the combination is exact (S*(G) provably the largest
feasible retention, so a search over G alone is a search over every (G, S)) only when every
model contributed one and the kernel is proven for that combination. delta-presence's term is
applied after the kernel, class by class (engine/kernels/presence.py): exact beside
k-anonymity (and k-map), not beside a constraint on sensitive values. Otherwise the oracle still
suppresses for the models it knows and the evaluator checks every model on the result, but no
optimizer may call its result certified, and ``OraclePlan.reasons`` says why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ppdp.engine.kernels import kinds
from ppdp.engine.privacy.base import PrivacyModel


@dataclass(frozen=True)
class OracleParams:
    """The constraints S*(G) enforces; see _kernels.optimal_pair_retention_t.

    ``t_kind``: the t-closeness distance (a code of engine/kernels/kinds.py: the Euclidean
    distance, or the equal / ordered EMD) and ``t_params`` its kernel row. Two t-closeness
    models of different distances cannot both be enforced: ``t_mixed`` (then S*(G) follows the
    tighter t's distance and is not exact).
    """

    k: int = 1
    t: float = -1.0
    l_distinct: int = 1
    l_entropy: float = 1.0
    t_kind: int = kinds.LARGEST_EUCLIDEAN_DISTANCE
    t_params: tuple[float, ...] = ()
    t_mixed: bool = False
    # delta-presence (engine/kernels/presence.py): a class keeps at most the largest r with
    # r / persons <= dmax; dmax < 0: no delta-presence. dmin only decides feasibility.
    dmin: float = 0.0
    dmax: float = -1.0

    def merge(self, other: OracleParams) -> OracleParams:
        both = self.t >= 0 and other.t >= 0
        mixed = self.t_mixed or other.t_mixed or (both and (self.t_kind, self.t_params) != (other.t_kind, other.t_params))
        tight = min((x for x in (self, other) if x.t >= 0), key=lambda x: x.t, default=self)
        return OracleParams(
            k=max(self.k, other.k), t=tight.t, l_distinct=max(self.l_distinct, other.l_distinct),
            l_entropy=max(self.l_entropy, other.l_entropy), t_kind=tight.t_kind, t_params=tight.t_params,
            t_mixed=mixed, dmin=max(self.dmin, other.dmin),
            dmax=min((x.dmax for x in (self, other) if x.dmax >= 0), default=-1.0),
        )

    @property
    def emd(self) -> bool:
        """t-closeness under an EMD (the equal or ordered ground distance)."""
        return self.t >= 0 and self.t_kind != kinds.LARGEST_EUCLIDEAN_DISTANCE

    @property
    def presence(self) -> bool:
        """delta-presence caps the records of each class (engine/kernels/presence.py)."""
        return self.dmax >= 0

    @property
    def per_value(self) -> bool:
        """A constraint on the sensitive values a class keeps (t-closeness or an l-model)."""
        return self.t >= 0 or self.l_distinct > 1 or self.l_entropy > 1

    @property
    def kernel_exact(self) -> bool:
        """The kernel is proven optimal unless t-closeness and an l-model are combined, or two
        t-closeness distances are, or delta-presence's cap meets a constraint on sensitive values
        (which records a capped class keeps then matters, and the cap takes the first ones)."""
        return not (self.t_mixed or (self.t >= 0 and (self.l_distinct > 1 or self.l_entropy > 1))
                    or (self.presence and self.per_value))

    def kernel_t_params(self) -> np.ndarray:
        """``t_params`` as the kernel reads them (a float row, empty for the Euclidean distance)."""
        return np.asarray(self.t_params, dtype=np.float64)


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
    if params.t_mixed:
        reasons.append("S*(G) enforces one t-closeness distance at a time, and the models ask for two")
    elif params.presence and params.per_value:
        reasons.append("S*(G) caps delta-presence's classes without choosing which sensitive values they keep, so it is "
                       "not proven optimal beside t-closeness or l-diversity (docs/design/paper_notes.md §3)")
    elif not params.kernel_exact:
        reasons.append("S*(G) is not proven optimal for t-closeness combined with l-diversity (docs/design/paper_notes.md §3)")
    return OraclePlan(params, tuple(reasons))
