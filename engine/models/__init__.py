"""Privacy models, registered by name (PAPER_NOTES §2).

Each model maps the class statistics of a release to a disclosure value AD, says whether AD
is feasible, and how far from feasible it is (the two-dimension comparison of ID-DGA §4.6 /
HAEF eq. 21). It also declares what it needs (pair counts of class x sensitive value) and its
parameters for the exact suppression oracle (PAPER_NOTES §3).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from engine.registry import Registry


@dataclass(frozen=True)
class ClassStats:
    """Equivalence classes of retained records: size per class, counts per (class, SA value)."""

    size: np.ndarray
    pair_class: np.ndarray
    pair_sa: np.ndarray
    pair_n: np.ndarray
    q: np.ndarray  # source distribution of the joint SA


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
    def exact(self) -> bool:
        """S*(G) is proven optimal unless t-closeness and an l-model are combined."""
        return not (self.t >= 0 and (self.l_distinct > 1 or self.l_entropy > 1))


class PrivacyModel(Protocol):
    name: str
    needs_pairs: bool
    higher_is_safer: bool  # True when a larger AD is closer to feasible (k, l)

    def ad(self, stats: ClassStats) -> float: ...
    def feasible(self, ad: float) -> bool: ...
    def violation(self, ad: float) -> float: ...
    def oracle(self) -> OracleParams: ...
    def params(self) -> dict[str, Any]: ...


MODELS: Registry[type] = Registry("privacy model")


def build_model(name: str, params: dict[str, Any]) -> PrivacyModel:
    """Instantiate a registered model from spec parameters (validated by the model)."""
    return MODELS.get(name).from_params(params)


# Register the built-in models.
from engine.models import k_anonymity, l_diversity, t_closeness  # noqa: E402,F401
