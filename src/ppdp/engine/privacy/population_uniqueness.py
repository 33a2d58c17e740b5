"""Population uniqueness (ARX's ``PopulationUniqueness``): the estimated share of the population
that is unique on the quasi-identifiers is at most ``threshold``. The estimate comes from the
released classes' frequency of frequencies (engine/risk/population.py: Pitman, Zayatz, SNB, or
Dankar's rule by default, without Zayatz as a fallback for Pitman, as ARX's criterion) for a
sample that is ``sampling_fraction`` of its population (population = round(records / f)), or
for a population of ``population`` people.

AD is the estimated fraction; an estimator that does not converge while sample uniques exist
gives AD = inf (infeasible; ARX: not fulfilled). There is no exact suppression oracle, and the
estimate of a union of classes is not bounded by the estimates of its parts (not union-closed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ppdp.engine.privacy.base import MODELS, ClassStats, PrivacyModel, ReferenceClasses
from ppdp.engine.risk.population import Histogram, estimate, population_size
from ppdp.errors import SpecError
from ppdp.sql import risk as R
from ppdp.sql.dialect import Dialect

if TYPE_CHECKING:
    from ppdp.engine.core.encoding import EncodedTable

ESTIMATORS = ("dankar", "pitman", "zayatz", "snb")


@MODELS.register("population-uniqueness")
@dataclass(frozen=True)
class PopulationUniqueness(PrivacyModel):
    threshold: float
    sampling_fraction: float | None = None
    population: int | None = None
    estimator: str = "dankar"
    name: ClassVar[str] = "population-uniqueness"
    warm_up_example: ClassVar[dict[str, Any] | None] = {"threshold": 0.05, "sampling_fraction": 0.1}
    higher_is_safer: ClassVar[bool] = False
    union_closed: ClassVar[bool] = False
    monotone: ClassVar[bool] = False  # ARX: not monotonic (the estimators are not)

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> PopulationUniqueness:
        unknown = set(params) - {"threshold", "sampling_fraction", "population", "estimator"}
        if unknown:
            raise SpecError(f"population-uniqueness takes 'threshold', 'sampling_fraction' or 'population', "
                            f"'estimator', not {sorted(unknown)}.")
        t = params.get("threshold")
        if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t) or not 0 <= t <= 1:
            raise SpecError(f"population-uniqueness needs a threshold in [0, 1], got {t!r}. Hint: threshold = 0.01.")
        f, pop = params.get("sampling_fraction"), params.get("population")
        if (f is None) == (pop is None):
            raise SpecError("population-uniqueness needs one of 'sampling_fraction' or 'population'. Hint: sampling_fraction = 0.1.")
        if f is not None and (isinstance(f, bool) or not isinstance(f, int | float) or not 0 < f <= 1):
            raise SpecError(f"population-uniqueness needs sampling_fraction in (0, 1], got {f!r}. Hint: sampling_fraction = 0.1.")
        if pop is not None and (isinstance(pop, bool) or not isinstance(pop, int) or pop < 1):
            raise SpecError(f"population-uniqueness needs an integer population >= 1, got {pop!r}.")
        est = params.get("estimator", "dankar")
        if est not in ESTIMATORS:
            raise SpecError(f"population-uniqueness estimator {est!r} is unknown; choose one of {', '.join(ESTIMATORS)}.")
        return cls(float(t), None if f is None else float(f), pop, est)

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"threshold": self.threshold, "estimator": self.estimator}
        if self.sampling_fraction is not None:
            out["sampling_fraction"] = self.sampling_fraction
        else:
            out["population"] = self.population
        return out

    def _estimate(self, h: Histogram) -> float:
        n = h.records
        if n == 0 or h.of_size(1) == 0:
            return 0.0
        pop = self.population if self.population is not None else population_size(n, self.sampling_fraction or 1.0)
        if pop < n:
            return math.inf
        pu = estimate(h, pop, zayatz_fallback=False)
        value = pu.dankar if self.estimator == "dankar" else getattr(pu, self.estimator)
        return math.inf if value is None else float(value)

    def ad(self, stats: ClassStats) -> float:
        size = np.asarray(stats.size)
        size = size[size > 0]
        vals, counts = np.unique(size, return_counts=True)
        return self._estimate(Histogram.of(dict(zip(vals.tolist(), counts.tolist(), strict=True))))

    def reference_ad(self, classes: ReferenceClasses, q: list[float]) -> float:
        freq: dict[int, int] = {}
        for c in classes.values():
            s = sum(c.values())
            if s > 0:
                freq[s] = freq.get(s, 0) + 1
        return self._estimate(Histogram.of(freq))

    def class_ad(self, stats: ClassStats) -> np.ndarray:
        """A ranking proxy for the improvement operator: a unique record counts fully."""
        return (stats.size == 1).astype(np.float64)

    def feasible(self, ad: float) -> bool:
        return ad <= self.threshold

    def violation(self, ad: float) -> float:
        return 0.0 if self.feasible(ad) else (1.0 if math.isinf(ad) else (ad - self.threshold) / max(1 - self.threshold, 1e-12))

    def impossible_reason(self, table: EncodedTable) -> str | None:
        if self.population is not None and self.population < table.n_records:
            return f"the population ({self.population}) is smaller than the table ({table.n_records} rows)"
        return None

    def describe(self, ad: float) -> str:
        return f"population-uniqueness: {ad:.6g} of the population estimated unique ({self.estimator}, threshold {self.threshold:g})"

    def version_sql(self, relation: str, qids: list[str], sensitive: list[str], q_relation: str, d: Dialect) -> str:
        """The class-size histogram by GROUP BY; ``check_result`` applies the estimator."""
        return R.class_sizes(relation, qids, d)

    def check_result(self, frame: Any) -> tuple[float | None, int]:
        freq = {int(s): int(c) for s, c in frame.select("size", "classes").iter_rows()}
        h = Histogram.of(freq)
        if h.records == 0:
            return None, 0
        return self._estimate(h), h.classes
