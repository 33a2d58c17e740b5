"""Privacy models, registered by name (PAPER_NOTES §2).

Each model maps the class statistics of a release to a disclosure value AD, says whether AD
is feasible, and how far from feasible it is (the two-dimension comparison of ID-DGA §4.6 /
HAEF eq. 21). It also declares what it needs (pair counts of class x sensitive value) and its
parameters for the exact suppression oracle (PAPER_NOTES §3).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ppdp.engine.errors import DataError
from ppdp.engine.registry import Registry

if TYPE_CHECKING:
    from ppdp.engine.encoding import EncodedTable


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
    def version_sql(self, relation: str, qids: list[str], sensitive: list[str], q_relation: str, d: str) -> str:
        """The independent SQL check of a version: one row (ad, classes)."""
        ...
    def history_failures(self, sig: str, values_at: Callable[[int], str], q_at: Callable[[int], str],
                         versions: list[int]) -> list[str]:
        """Queries returning the ``sig_now`` of history classes that fail (sql/history.py)."""
        ...
    def impossible_reason(self, table: EncodedTable) -> str | None:
        """Why no non-empty release of ``table`` can satisfy the model, or None if one can."""
        ...


MODELS: Registry[type] = Registry("privacy model")


def build_model(name: str, params: dict[str, Any]) -> PrivacyModel:
    """Instantiate a registered model from spec parameters (validated by the model)."""
    return MODELS.get(name).from_params(params)


def distinct_sensitive_values(table: EncodedTable) -> int:
    """Distinct (joint) sensitive values among the table's records."""
    return int(np.count_nonzero(np.bincount(table.sa, weights=table.counts, minlength=table.n_sa)))


def check_possible(table: EncodedTable, models: list[PrivacyModel]) -> None:
    """Refuse, right after encoding and before the search, a model no non-empty release meets.

    Without this the optimizer's best solution is the empty release (feasible by definition,
    PAPER_NOTES §2), which was published with every check "PASS" (finding 10).
    """
    for m in models:
        reason = m.impossible_reason(table)
        if reason is not None:
            raise DataError(f"No release can satisfy {m.name}: {reason}. Nothing was written.")


def check_not_empty(released_rows: int, models: list[PrivacyModel]) -> None:
    """Refuse to publish an optimizer result that releases no row at all.

    check_possible rules out each model alone; models combined (say k-anonymity with a large k
    and entropy l-diversity that needs suppression) or a too small budget can still leave only
    the empty release, which satisfies every model vacuously and is useless.
    """
    if released_rows <= 0:
        names = ", ".join(f"{m.name} {m.params()}" for m in models)
        raise DataError(f"The best release found keeps no rows ({names} cannot be met together by any release found), "
                        "so nothing was published. Hint: relax the model parameters, or raise optimizer.budget.")


# Register the built-in models.
from ppdp.engine.models import k_anonymity, l_diversity, t_closeness  # noqa: E402,F401
