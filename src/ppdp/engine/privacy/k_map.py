"""k-map (Sweeney 2002; El Emam and Dankar 2008), as ARX 3.9.2's ``KMap``.

Protects against re-identification by an attacker who links a released record to a population
register (a voter list, a census extract): every released record's class matches at least k
persons of the *population*, not merely k records of the sample, so a match in the register
leaves at least k candidates. Two forms, by spec parameters:

- ``population = "schema.table"``: a table with the same quasi-identifiers, one row per person
  of the population (the sample's persons among them). AD = the fewest persons of the
  population in a released class (ARX: ``entry.pcount >= k``); feasible when AD >= k. Needs the
  second count per class (engine/kernels/population.py). Not closed under the history
  classes of later versions (their population would have to be re-derived per history class),
  and no exact S*(G): declared so, and the release refuses later versions.
- ``estimator = "poisson" | "zero-truncated-poisson"`` with ``population_size`` and
  ``significance``: the population's class sizes are estimated from the sample's by a cell size
  distribution with mean lambda = (n / N) * k, n the source's records and N the population size,
  and k-map becomes k'-anonymity with k' derived once (ARX's ``KMap.initialize``: the smallest
  count whose cumulative probability reaches 1 - significance, with ARX's off-by-ones, capped at
  n and at k). Everything of k-anonymity then holds for k' (oracle, unions, monotonicity, checks).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ppdp.engine.kernels import classes as K
from ppdp.engine.kernels import kinds
from ppdp.engine.privacy.base import (
    MODELS,
    ClassStats,
    ModelContext,
    PrivacyModel,
    ReferenceClasses,
    Requirements,
)
from ppdp.engine.privacy.oracle import OracleParams
from ppdp.errors import SpecError
from ppdp.sql import evaluator as esql
from ppdp.sql import history as H
from ppdp.sql import queries as Q
from ppdp.sql import verify as V
from ppdp.sql.dialect import Dialect

if TYPE_CHECKING:
    from ppdp.engine.core.encoding import EncodedTable

NAME = "k-map"
ESTIMATORS = ("poisson", "zero-truncated-poisson")


def _read_k(params: dict[str, Any]) -> int:
    k = params.get("k")
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise SpecError(f"k-map needs an integer k >= 1, got {k!r}. Hint: k = 5.")
    return k


def poisson_pmf(x: int, lam: float) -> float:
    """P(X = x) for X ~ Poisson(lam)."""
    if x == 0:
        return math.exp(-lam)
    return math.exp(x * math.log(lam) - lam - math.lgamma(x + 1))


def poisson_cdf(x: int, lam: float) -> float:
    """P(X <= x) for X ~ Poisson(lam), in the form commons-math evaluates it (ARX's
    ``PoissonDistribution.cumulativeProbability``: regularizedGammaQ(x + 1, lam), which is
    1 - (the upper tail) when lam < x + 2): so the value reaches exactly 1.0 once the tail is
    below rounding, as ARX's does, which decides k' when significance = 0."""
    if lam < x + 2:
        tail, i = 0.0, x + 1
        while True:
            term = poisson_pmf(i, lam)
            tail += term
            if term <= tail * 1e-17:
                break
            i += 1
        return 1.0 - tail
    return math.fsum(poisson_pmf(i, lam) for i in range(x + 1))


def derived_k(k: int, estimator: str, population_size: int, significance: float, sample_rows: int) -> int:
    """k' of ARX's ``KMap.initialize`` (calculateKPoisson / calculateKZeroPoisson, then the caps),
    step for step. The probabilities are computed in double precision as commons-math does in
    form (``poisson_cdf``), not bit for bit: k' is an integer, so the two can differ only where a
    probability lies within rounding of 1 - significance."""
    lam = sample_rows / population_size * k
    threshold = 1.0 - significance
    if estimator == "poisson":
        counter, value = 0, 0.0
        while value < threshold:
            value = poisson_cdf(counter, lam)
            counter += 1
            if counter >= k:  # ARX: "100% sure that the dataset fulfills k-map"
                break
        out = counter + 1
    else:
        v2 = 1.0 - poisson_pmf(0, lam)
        counter, value = 1, 0.0
        while value < threshold:
            value += poisson_pmf(counter, lam) / v2
            counter += 1
            if counter >= k:
                break
        out = counter
    return min(k, min(out, sample_rows))


@MODELS.register(NAME)
class KMap(PrivacyModel):
    """Spec entry of k-map: ``from_params`` returns one of the two forms below."""

    name: ClassVar[str] = NAME
    warm_up_example: ClassVar[dict[str, Any] | None] = {"k": 3, "estimator": "poisson", "population_size": 100000, "significance": 0.01}

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> PrivacyModel:
        unknown = set(params) - {"k", "population", "estimator", "population_size", "significance"}
        if unknown:
            raise SpecError(f"k-map takes 'k' and either 'population' or 'estimator', 'population_size', 'significance'; "
                            f"not {sorted(unknown)}.")
        k = _read_k(params)
        if ("population" in params) == ("estimator" in params):
            raise SpecError("k-map needs exactly one of population = \"schema.table\" (one row per person) and "
                            "estimator = \"poisson\" | \"zero-truncated-poisson\" (with population_size and significance).")
        if "population" in params:
            extra = sorted({"population_size", "significance"} & set(params))
            if extra:
                raise SpecError(f"k-map with a population table takes no {extra} (they belong to an estimator).")
            pop = params["population"]
            parts = pop.split(".") if isinstance(pop, str) else []
            if not parts or len(parts) > 2 or not all(p.strip() for p in parts):
                raise SpecError(f"k-map population must be \"schema.table\" or \"table\", got {pop!r}.")
            return KMapPopulation(k, pop)
        estimator = params["estimator"]
        if estimator not in ESTIMATORS:
            raise SpecError(f"k-map estimator must be one of {', '.join(ESTIMATORS)}, got {estimator!r}.")
        size = params.get("population_size")
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise SpecError(f"k-map with an estimator needs an integer population_size >= 1, got {size!r}. "
                            "Hint: population_size = 1000000.")
        sig = params.get("significance")
        if isinstance(sig, bool) or not isinstance(sig, int | float) or not math.isfinite(sig) or not 0 <= sig <= 1:
            raise SpecError(f"k-map with an estimator needs significance in [0, 1], got {sig!r}. Hint: significance = 0.01.")
        return KMapEstimated(k, estimator, size, float(sig))


@dataclass(frozen=True)
class KMapEstimated(KMap):
    """k-map with a cell size estimator: k'-anonymity with k' = ``derived_k`` (ARX's KMap with
    an estimator is checked as ``entry.count >= derivedK``)."""

    k: int
    estimator: str
    population_size: int
    significance: float
    sample_rows: int | None = None  # set by ``bind``: k' depends on the sampling fraction

    union_closed: ClassVar[bool] = True  # k'-anonymity: a union of classes of >= k' records
    monotone: ClassVar[bool] = True
    ad_is_smallest_class: ClassVar[bool] = True
    kernel_kind: ClassVar[int | None] = kinds.SMALLEST_CLASS

    def bind(self, ctx: ModelContext) -> KMapEstimated:
        """k' for this source: ARX's ``initialize`` with n = the source's records."""
        if ctx.source_rows is None:
            raise RuntimeError("k-map with an estimator needs the source's size to derive k'")
        return replace(self, sample_rows=int(ctx.source_rows))

    @property
    def threshold(self) -> int:
        """k' (fails closed on a model that was never bound to a source)."""
        if self.sample_rows is None:
            raise RuntimeError("k-map with an estimator is used before bind() gave it the source's size")
        return derived_k(self.k, self.estimator, self.population_size, self.significance, self.sample_rows)

    def params(self) -> dict[str, Any]:
        return {"k": self.k, "estimator": self.estimator, "population_size": self.population_size,
                "significance": self.significance}

    def impossible_reason(self, table: EncodedTable) -> str | None:
        n = table.n_records + table.excluded_null_rows
        if self.population_size < n:
            return (f"population_size = {self.population_size} is smaller than the source ({n} records), which is a "
                    f"sample of it. Hint: population_size >= {n}")
        if self.threshold > table.n_records:
            return f"k' = {self.threshold} is larger than the releasable records ({table.n_records})"
        return None

    def ad(self, stats: ClassStats) -> float:
        return float(K.ad_k_anonymity(stats.size))

    def reference_ad(self, classes: ReferenceClasses, q: list[float]) -> float:
        return min((sum(c.values()) for c in classes.values()), default=math.inf)

    def class_ad(self, stats: ClassStats) -> np.ndarray:
        return stats.size.astype(np.float64)

    def feasible(self, ad: float) -> bool:
        return ad >= self.threshold

    def violation(self, ad: float) -> float:
        k = self.threshold
        return 0.0 if ad >= k else (k - ad) / k

    def min_class_size(self) -> int:
        return self.threshold

    def oracle(self) -> OracleParams:
        return OracleParams(k=self.threshold)

    def describe(self, ad: float) -> str:
        shown = "(empty release)" if math.isinf(ad) else int(ad)
        return f"k-map ({self.estimator}): smallest class {shown} (k = {self.k}, estimated k' = {self.threshold})"

    def version_sql(self, relation: str, qids: list[str], sensitive: list[str], q_relation: str, d: Dialect) -> str:
        return Q.verify_k_query(relation, qids, d)

    def history_failures(self, sig, values_at, q_at, versions: list[int], d: Dialect) -> list[str]:
        return [H.small_classes_k(sig, self.threshold)]

    def evaluator_term(self) -> esql.AdTerm:
        return esql.smallest_class()


@dataclass(frozen=True)
class KMapPopulation(KMap):
    """k-map against a population table: every released class matches >= k of its persons."""

    k: int
    population: str

    requirements: ClassVar[Requirements] = Requirements(population=True)
    # Generalizing merges classes (their populations add up); suppression only removes
    # released classes: feasible at G with S stays feasible above G with S (ARX: monotonic).
    monotone: ClassVar[bool] = True

    def population_table(self) -> str:
        return self.population

    def params(self) -> dict[str, Any]:
        return {"k": self.k, "population": self.population}

    def impossible_reason(self, table: EncodedTable) -> str | None:
        """The root class holds the whole population: fewer than k persons there is fewer everywhere."""
        n = 0 if table.population is None else table.population.n_persons
        if n < self.k:
            return f"k = {self.k} but the population table {self.population} has only {n} person(s) with every quasi-identifier"
        return None

    def ad(self, stats: ClassStats) -> float:
        pop = stats.population
        assert pop is not None, "k-map requires population counts per class"
        live = stats.size > 0
        return float(pop[live].min()) if live.any() else math.inf

    def reference_ad(self, classes: ReferenceClasses, q: list[float]) -> float:
        raise NotImplementedError("k-map's twin reads the population: tests/oracles/test_population_models.py")

    def class_ad(self, stats: ClassStats) -> np.ndarray:
        assert stats.population is not None
        return stats.population.astype(np.float64)

    def feasible(self, ad: float) -> bool:
        return ad >= self.k

    def violation(self, ad: float) -> float:
        return 0.0 if ad >= self.k else (self.k - ad) / self.k

    def describe(self, ad: float) -> str:
        shown = "(empty release)" if math.isinf(ad) else int(ad)
        return f"k-map: fewest persons of {self.population} in a class {shown} (k = {self.k})"

    def population_version_sql(self, relation: str, qids: list[str], population: str, d: Dialect) -> str:
        """The persons of the population table in every released class, recounted in SQL."""
        return V.verify_k_map(relation, qids, population, d)

    def evaluator_term(self) -> esql.AdTerm:
        return esql.fewest_persons()
