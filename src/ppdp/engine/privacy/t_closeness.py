"""t-closeness: the Euclidean distance of HAEF eq. 2-4 (the default), or the Earth Mover's
Distance of Li et al. 2007 with equal, ordered or hierarchical ground distance (as ARX's
EqualDistanceTCloseness, OrderedDistanceTCloseness, HierarchicalDistanceTCloseness).

S = distribution of the (joint) sensitive value among a class's retained records, Q = its
distribution over the whole source table (docs/design/paper_notes.md §2), D = distance(S, Q), AD = max over
classes; feasible when AD <= t. ``distance`` picks the subclass (one per distance, all in this
module, all registered under the one name): ``TCloseness.from_params`` dispatches on it.

Protects against attribute disclosure by skew: no class's sensitive distribution is far from
the table's, so learning someone's class teaches little beyond the table as a whole. The EMD
variants also weigh how far apart the values are (ordered: numeric or ordinal values, so that a
class of "low salaries" is as far from Q as its values are from the others; hierarchical:
values of one branch of the hierarchy are close), which the Euclidean and equal distances do not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ppdp.engine.core import hierarchy as hier
from ppdp.engine.kernels import classes as K
from ppdp.engine.kernels import kinds
from ppdp.engine.privacy import distributions as D
from ppdp.engine.privacy.base import (
    MODELS,
    ClassStats,
    ModelContext,
    PrivacyModel,
    ReferenceClasses,
    Requirements,
)
from ppdp.engine.privacy.oracle import OracleParams
from ppdp.errors import HierarchyError, SpecError
from ppdp.sql import distributions as DS
from ppdp.sql import evaluator as esql
from ppdp.sql import history as H
from ppdp.sql import verify as V
from ppdp.sql.dialect import Dialect

if TYPE_CHECKING:
    from ppdp.engine.core.encoding import EncodedTable

# Distances are sums of squares of ratios; allow for rounding when a class sits exactly on t.
TOLERANCE = 1e-12


@MODELS.register("t-closeness")
@dataclass(frozen=True)
class TCloseness(PrivacyModel):
    t: float
    name: ClassVar[str] = "t-closeness"
    requirements: ClassVar[Requirements] = Requirements(sensitive_counts=True)
    higher_is_safer: ClassVar[bool] = False
    # The distance is a norm: a union's distribution is a convex mix of its classes', so its
    # distance to Q is at most the largest of theirs (the cross-version check relies on it).
    union_closed: ClassVar[bool] = True
    # Not monotone with suppression: merging a failing class into a passing one can fail.
    monotone: ClassVar[bool] = False
    kernel_kind: ClassVar[int | None] = kinds.LARGEST_EUCLIDEAN_DISTANCE
    warm_up_example: ClassVar[dict[str, Any] | None] = {"t": 0.3}

    distance: ClassVar[str] = "euclidean"

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> TCloseness:
        unknown = set(params) - {"t", "distance", "hierarchy"}
        if unknown:
            raise SpecError(f"t-closeness takes 't', 'distance' (and 'hierarchy'), not {sorted(unknown)}.")
        distance = params.get("distance", "euclidean")
        variant = DISTANCES.get(distance) if isinstance(distance, str) else None
        if variant is None:
            raise SpecError(f"t-closeness distance {distance!r} is not one of {', '.join(DISTANCES)}. "
                            "Hint: distance = \"equal\" (ARX's default EMD).")
        t = params.get("t")
        if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t) or not 0 < t <= 1:
            raise SpecError(f"t-closeness needs t in (0, 1], got {t!r}. Hint: t = 0.2.")
        hierarchy = params.get("hierarchy")
        if hierarchy is not None and variant is not HierarchicalTCloseness:
            raise SpecError(f"t-closeness 'hierarchy' is read only with distance = \"hierarchical\", not {distance!r}.")
        if hierarchy is not None and (not isinstance(hierarchy, str) or not hierarchy.strip()):
            raise SpecError(f"t-closeness hierarchy must be a file path, got {hierarchy!r}. Hint: hierarchy = \"salary.csv\".")
        if variant is HierarchicalTCloseness:
            return HierarchicalTCloseness(float(t), hierarchy=hierarchy)
        return variant(float(t))

    def ad(self, stats: ClassStats) -> float:
        return float(K.ad_t_closeness(stats.size, stats.pair_class, stats.pair_sa, stats.pair_n, stats.q))

    def reference_ad(self, classes: ReferenceClasses, q: list[float]) -> float:
        """HAEF eq. 2-4 over every SA value."""
        worst = 0.0
        for counts in classes.values():
            n = sum(counts.values())
            d2 = sum((counts.get(v, 0) / n - q[v]) ** 2 for v in range(len(q)))
            worst = max(worst, math.sqrt(d2))
        return worst

    def class_ad(self, stats: ClassStats) -> np.ndarray:
        """HAEF eq. 2 per class, term by term as in _kernels.ad_t_closeness."""
        size = stats.size
        m = len(size)
        frac = stats.pair_n / np.maximum(size[stats.pair_class], 1)
        qv = stats.q[stats.pair_sa]
        d2 = np.bincount(stats.pair_class, weights=(frac - qv) ** 2, minlength=m)
        absent = float((stats.q ** 2).sum()) - np.bincount(stats.pair_class, weights=qv ** 2, minlength=m)
        return np.sqrt(d2 + np.maximum(absent, 0.0))

    def feasible(self, ad: float) -> bool:
        return ad <= self.t + TOLERANCE

    def kernel_feasibility(self) -> tuple[int, float] | None:
        return kinds.AT_MOST, self.t + TOLERANCE  # the same float ``feasible`` compares with

    def violation(self, ad: float) -> float:
        return 0.0 if self.feasible(ad) else (ad - self.t) / self.t

    def oracle(self) -> OracleParams | None:
        return OracleParams(t=self.t + TOLERANCE)

    def params(self) -> dict[str, Any]:
        return {"t": self.t, "distance": self.distance}

    def impossible_reason(self, table: EncodedTable) -> str | None:
        """Never: the root class with nothing suppressed is distributed exactly like Q (distance 0)."""
        return None

    def describe(self, ad: float) -> str:
        return f"t-closeness: largest class distance {ad:.4f} (t = {self.t})"

    def version_sql(self, relation: str, qids: list[str], sensitive: list[str], q_relation: str, d: Dialect) -> str:
        """The independent SQL check of a version: (ad, classes) against the stored Q."""
        return V.verify_t_stored(relation, qids, sensitive, q_relation, d)

    def history_failures(self, sig: str, values_at, q_at, versions: list[int], d: Dialect) -> list[str]:
        """Queries of the history classes (sig_now) farther than t from Q in some version."""
        return [H.failing_t(values_at(v), q_at(v), self.t) for v in versions]

    def evaluator_term(self) -> esql.AdTerm | None:
        return esql.largest_euclidean_distance()


class _EMD(TCloseness):
    """The EMD variants (Li et al. 2007): each names its kernel of the fused evaluator
    (``kernel_kind``, kernels/distributions.py; its ``ad`` is that kernel); no DuckDB
    evaluator term; the SQL checks are ``sql/distributions.py``'s. The equal and ordered
    distances have an exact suppression oracle (``_kernels._emd_class_keep``), so a lattice
    search under them is certified; the hierarchical distance has none (S*(G) would need the
    smallest hierarchical EMD of every kept total, which it does not compute), so a search
    under it is not certified optimal."""

    kernel_kind: ClassVar[int | None] = None  # each variant names its own
    # EMD (a Wasserstein distance) is convex in S for a fixed Q, so a union's distance is at
    # most the largest of its classes': union-closed, as the Euclidean distance.
    union_closed: ClassVar[bool] = True

    def class_ad(self, stats: ClassStats) -> np.ndarray:
        raise NotImplementedError

    def ad(self, stats: ClassStats) -> float:
        assert self.kernel_kind is not None
        return D.largest(self.kernel_kind, self.kernel_params(), stats)

    def reference_ad(self, classes: ReferenceClasses, q: list[float]) -> float:
        return max((self.reference_class(c, q) for c in classes.values() if sum(c.values()) > 0), default=0.0)

    def reference_class(self, counts: Any, q: list[float]) -> float:
        raise NotImplementedError

    def oracle(self) -> OracleParams | None:
        return None

    def evaluator_term(self) -> esql.AdTerm | None:
        return None

    def describe(self, ad: float) -> str:
        return f"t-closeness ({self.distance} EMD): largest class distance {ad:.4f} (t = {self.t})"

    def per_class_sql(self, counts: str, q_relation: str, d: Dialect) -> str:
        raise NotImplementedError

    def version_sql(self, relation: str, qids: list[str], sensitive: list[str], q_relation: str, d: Dialect) -> str:
        """The independent SQL check of a version: (ad, classes) against the stored Q."""
        return DS.version_check(self.per_class_sql(DS.version_counts(relation, qids, sensitive, d), q_relation, d))

    def history_failures(self, sig: str, values_at, q_at, versions: list[int], d: Dialect) -> list[str]:
        """Queries of the history classes (sig_now) farther than t from Q in some version."""
        return [DS.failing(self.per_class_sql(DS.history_counts(values_at(v)), q_at(v), d), self.t)
                for v in versions]


@dataclass(frozen=True)
class EqualTCloseness(_EMD):
    """EMD with equal ground distance: 1/2 sum |p_i - q_i| (ARX's EqualDistanceTCloseness)."""

    distance: ClassVar[str] = "equal"
    kernel_kind: ClassVar[int | None] = kinds.EQUAL_EMD

    def oracle(self) -> OracleParams | None:
        """S*(G) keeps per class the most records within t (docs/design/paper_notes.md §3)."""
        return OracleParams(t=self.t + TOLERANCE, t_kind=kinds.EQUAL_EMD)

    def class_ad(self, stats: ClassStats) -> np.ndarray:
        return D.equal_emd(stats)

    def reference_class(self, counts: Any, q: list[float]) -> float:
        return D.equal_emd_ref(counts, q)

    def per_class_sql(self, counts: str, q_relation: str, d: Dialect) -> str:
        return DS.equal_distance(counts, q_relation)


@dataclass(frozen=True)
class OrderedTCloseness(_EMD):
    """EMD with ordered ground distance (ARX's OrderedDistanceTCloseness). The order is
    ``distributions.sort_key``'s: numeric columns by value, others by text (code points), NULL last."""

    distance: ClassVar[str] = "ordered"
    kernel_kind: ClassVar[int | None] = kinds.ORDERED_EMD
    order: D.Order | None = field(default=None, compare=False, repr=False)
    values: tuple[tuple, ...] = field(default=(), compare=False, repr=False)
    columns: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def bind(self, ctx: ModelContext) -> OrderedTCloseness:
        return OrderedTCloseness(self.t, order=D.order_of(ctx.sa_values), values=ctx.sa_values, columns=ctx.sensitive)

    def _order(self) -> D.Order:
        if self.order is None:
            raise RuntimeError("ordered t-closeness used before bind(): its order is that of the table's values")
        return self.order

    def class_ad(self, stats: ClassStats) -> np.ndarray:
        return D.ordered_emd(stats, self._order())

    def kernel_params(self) -> np.ndarray:
        return D.ordered_params(self._order())

    def oracle(self) -> OracleParams | None:
        """S*(G) keeps per class the most records within t (docs/design/paper_notes.md §3); the
        order is the bound model's (before bind() there is none: no oracle)."""
        if self.order is None:
            return None
        return OracleParams(t=self.t + TOLERANCE, t_kind=kinds.ORDERED_EMD,
                            t_params=tuple(self.kernel_params().tolist()))

    def reference_class(self, counts: Any, q: list[float]) -> float:
        return D.ordered_emd_ref(counts, q, self._order().rank.tolist())

    def query_names_values(self) -> bool:
        """The ground distance enters the query as a literal relation of every sensitive value."""
        return True

    def per_class_sql(self, counts: str, q_relation: str, d: Dialect) -> str:
        order = DS.order_relation(list(self.columns), self.values, self._order().rank.tolist(), d)
        return DS.ordered_distance(counts, q_relation, order, len(self.values))


@dataclass(frozen=True)
class HierarchicalTCloseness(_EMD):
    """EMD with hierarchical ground distance over a hierarchy of the (one) sensitive column (ARX's
    HierarchicalDistanceTCloseness): the model's ``hierarchy`` file, else ``[sensitive] hierarchy``."""

    distance: ClassVar[str] = "hierarchical"
    kernel_kind: ClassVar[int | None] = kinds.HIERARCHICAL_EMD
    hierarchy: str | None = None
    tree: D.Tree | None = field(default=None, compare=False, repr=False)
    values: tuple[tuple, ...] = field(default=(), compare=False, repr=False)
    columns: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def params(self) -> dict[str, Any]:
        return {**super().params(), **({"hierarchy": self.hierarchy} if self.hierarchy is not None else {})}

    def bind(self, ctx: ModelContext) -> HierarchicalTCloseness:
        """Read the sensitive column's hierarchy and place every sensitive value in it."""
        file = self.hierarchy or ctx.sensitive_hierarchy
        if file is None:
            raise SpecError("t-closeness with distance = \"hierarchical\" needs a hierarchy of the sensitive column. "
                            "Hint: [sensitive] hierarchy = \"file.csv\" or hierarchy = \"file.csv\" in the model.")
        if len(ctx.sensitive) != 1:
            raise SpecError(f"t-closeness with distance = \"hierarchical\" needs exactly one sensitive column, "
                            f"got {len(ctx.sensitive)}.")
        path = Path(file) if Path(file).is_absolute() else Path(ctx.base_dir) / file
        h = hier.read_arx_csv(path, ctx.sensitive[0])
        missing = [v[0] for v in ctx.sa_values if v[0] not in h.leaf_code]
        if missing:
            raise HierarchyError(f"The hierarchy {str(path)!r} of sensitive column {ctx.sensitive[0]!r} lacks "
                                 f"{len(missing)} of its values (e.g. {missing[0]!r}). Hint: add a row per value.")
        rows = [h.leaf_code[v[0]] for v in ctx.sa_values]
        tree = D.tree_of([[int(h.level_codes[j][r]) for r in rows] for j in range(h.height + 1)])
        return HierarchicalTCloseness(self.t, hierarchy=self.hierarchy, tree=tree, values=ctx.sa_values,
                                      columns=ctx.sensitive)

    def _tree(self) -> D.Tree:
        if self.tree is None:
            raise RuntimeError("hierarchical t-closeness used before bind(): it needs the sensitive column's hierarchy")
        return self.tree

    def class_ad(self, stats: ClassStats) -> np.ndarray:
        return D.hierarchical_emd(stats, self._tree())

    def kernel_params(self) -> np.ndarray:
        return D.hierarchical_params(self._tree())

    def reference_class(self, counts: Any, q: list[float]) -> float:
        return D.hierarchical_emd_ref(counts, q, [ids.tolist() for ids in self._tree().node])

    def query_names_values(self) -> bool:
        """The ground distance enters the query as a literal relation of every sensitive value."""
        return True

    def per_class_sql(self, counts: str, q_relation: str, d: Dialect) -> str:
        tree = self._tree()
        relation = DS.tree_relation(list(self.columns), self.values, [ids.tolist() for ids in tree.node], d)
        return DS.hierarchical_distance(counts, q_relation, relation, tree.height)


# distance name -> model class (TCloseness.from_params dispatches on it)
DISTANCES: dict[str, type[TCloseness]] = {
    "euclidean": TCloseness, "equal": EqualTCloseness, "ordered": OrderedTCloseness, "hierarchical": HierarchicalTCloseness,
}
