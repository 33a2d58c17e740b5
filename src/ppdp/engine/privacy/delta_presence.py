"""delta-presence (Nergiz, Atzori and Clifton 2007), as ARX 3.9.2's ``DPresence``.

Protects against membership disclosure: the source is a public population table (everyone who
might be in the study), the release holds only a research subset of it (``research``, a SQL
predicate over the source's columns). An attacker who knows a person's quasi-identifiers and
that the person is in the population learns from the release only that the person is in the
research subset with probability delta = (released records of the class) / (persons of the
population in the class), and the model bounds it: dmin <= delta <= dmax for every class of the
generalized population (Nergiz et al. 2007, Def. 3; ARX: ``entry.count / entry.pcount``).
A population class with no released record has delta = 0 and fails when dmin > 0 (ARX fails
the transformation on it: suppression cannot repair it).

AD = the largest distance of a class's delta outside [dmin, dmax] (0 when every class is
inside), so feasible when AD = 0, compared exactly as ARX compares (no tolerance). Suppressed
records count as not released, so suppression lowers delta: S*(G)'s delta-presence term keeps
in each class the largest r with r / persons <= dmax (``oracle``, engine/kernels/presence.py),
the fewest records suppressed, which makes a dmax below the research share reachable; nothing
raises a share to dmin, so a class below dmin makes G infeasible for every S. The term is exact
beside k-anonymity and k-map (search results certified), not beside t-closeness or l-diversity
(privacy/oracle.py says so). Not union-closed across versions (a history class's population is
not the union of its classes' in every version): a later version of such a release is refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ppdp.engine.privacy.base import (
    MODELS,
    ClassStats,
    PrivacyModel,
    ReferenceClasses,
    Requirements,
)
from ppdp.engine.privacy.oracle import OracleParams
from ppdp.errors import SpecError
from ppdp.sql import evaluator as esql
from ppdp.sql import verify as V
from ppdp.sql.dialect import DUCKDB, Dialect
from ppdp.sql.predicate import parse_predicate

if TYPE_CHECKING:
    from ppdp.engine.core.encoding import EncodedTable


def _bound(params: dict[str, Any], key: str) -> float:
    v = params.get(key)
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or not 0 <= v <= 1:
        raise SpecError(f"delta-presence needs {key} in [0, 1], got {v!r}. Hint: dmin = 0.0, dmax = 0.5.")
    return float(v)


@MODELS.register("delta-presence")
@dataclass(frozen=True)
class DeltaPresence(PrivacyModel):
    dmin: float
    dmax: float
    research: str

    name: ClassVar[str] = "delta-presence"
    warm_up_example: ClassVar[dict[str, Any] | None] = {"dmin": 0.0, "dmax": 1.0, "research": "sex = 'Male'"}
    requirements: ClassVar[Requirements] = Requirements(research_subset=True, population=True)
    higher_is_safer: ClassVar[bool] = False
    # The research rule says who is in the study: the membership this model exists to hide.
    private_params: ClassVar[frozenset[str]] = frozenset({"research"})

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> DeltaPresence:
        unknown = set(params) - {"dmin", "dmax", "research"}
        if unknown:
            raise SpecError(f"delta-presence takes 'dmin', 'dmax' and 'research', not {sorted(unknown)}.")
        dmin, dmax = _bound(params, "dmin"), _bound(params, "dmax")
        if dmin > dmax:
            raise SpecError(f"delta-presence needs dmin <= dmax, got dmin = {dmin:g}, dmax = {dmax:g}.")
        if dmax == 0:
            raise SpecError("delta-presence with dmax = 0 allows no released record. Hint: dmax > 0.")
        research = params.get("research")
        if not isinstance(research, str):
            raise SpecError(f"delta-presence needs research = \"<SQL predicate on the source>\", got {research!r}.")
        parse_predicate(research, "delta-presence research", DUCKDB)  # syntax now; columns once the source is read
        return cls(dmin, dmax, research)

    def params(self) -> dict[str, Any]:
        return {"dmin": self.dmin, "dmax": self.dmax, "research": self.research}

    def research_predicate(self) -> str:
        return self.research

    def impossible_reason(self, table: EncodedTable) -> str | None:
        """At the root every person is in one class, and keeping r of the n research records
        gives delta = r / N; generalizing or suppressing otherwise can only split that, so some
        release exists only if some r in 1..n has dmin <= r / N <= dmax (exact: the root with r
        records kept is itself a release)."""
        n = table.n_records
        big_n = 0 if table.population is None else table.population.n_persons
        if big_n == 0:
            return "the population (the source) has no person with every quasi-identifier"
        c = math.ceil(self.dmin * big_n)
        smallest = next((r for r in range(max(1, c - 2), c + 3) if r / big_n >= self.dmin), None)
        if smallest is None or smallest > n or smallest / big_n > self.dmax:
            return (f"the research subset has {n} of the population's {big_n} records, so no class can have a share in "
                    f"[{self.dmin:g}, {self.dmax:g}]")
        return None

    def ad(self, stats: ClassStats) -> float:
        pop = stats.population
        assert pop is not None, "delta-presence requires population counts per class"
        live = stats.size > 0
        delta = stats.size[live] / pop[live]
        worst = float(np.max(np.maximum(np.maximum(self.dmin - delta, delta - self.dmax), 0.0))) if live.any() else 0.0
        if stats.unmatched_population and self.dmin > 0:
            worst = max(worst, self.dmin)  # delta = 0 in a population class without released records
        return worst

    def reference_ad(self, classes: ReferenceClasses, q: list[float]) -> float:
        raise NotImplementedError("delta-presence's twin reads the population: tests/oracles/test_population_models.py")

    def class_ad(self, stats: ClassStats) -> np.ndarray:
        assert stats.population is not None
        delta = stats.size / np.maximum(stats.population, 1)
        return np.maximum(np.maximum(self.dmin - delta, delta - self.dmax), 0.0)

    def oracle(self) -> OracleParams:
        """delta <= dmax caps the records of each class (engine/kernels/presence.py); dmin only
        decides feasibility (suppressing never raises a share)."""
        return OracleParams(dmin=self.dmin, dmax=self.dmax)

    def feasible(self, ad: float) -> bool:
        return ad <= 0.0

    def violation(self, ad: float) -> float:
        return max(ad, 0.0)

    def describe(self, ad: float) -> str:
        return f"delta-presence: largest distance of a class's share outside [{self.dmin:g}, {self.dmax:g}] is {ad:.4g}"

    def population_version_sql(self, relation: str, qids: list[str], population: str, d: Dialect) -> str:
        """Every class of the population and every released class, recounted in SQL."""
        return V.verify_delta_presence(relation, qids, population, self.dmin, self.dmax, d)

    def evaluator_term(self) -> esql.AdTerm:
        return esql.share_outside(self.dmin, self.dmax)
