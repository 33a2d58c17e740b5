"""Re-identification risk of a table or of a published version.

``assess`` counts classes by GROUP BY in the database (sql/risk.py) and hands the frequency of
frequencies to every registered risk estimator (base.py), one module each: prosecutor risk
(prosecutor.py, after ARX's ``RiskModelSampleSummary``), journalist and marketer risk
(journalist.py), sample uniques (uniqueness.py), population uniques (population.py, ARX's
``RiskModelPopulationUniqueness`` with Dankar's rule), sdcMicro's individual risk from sampling
weights (individual.py), the risk bands (bands.py) and ARX's distinction and separation of the
attacker's column combinations (attributes.py). Each estimator declares its JSON keys and how
they render; nothing else names them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ppdp.connectors.base import Connector
from ppdp.engine.risk.base import RiskInput, estimators, risk_rows
from ppdp.engine.risk.population import Histogram, PopulationUniques, estimate, population_size
from ppdp.engine.risk.prosecutor import AttackerRisk, prosecutor
from ppdp.errors import DataError, SpecError
from ppdp.sql import risk as R

__all__ = ["Histogram", "RiskAssessment", "assess", "histogram", "risk_rows", "summarize"]

# The assessment's own keys beside the estimators' (``to_json``).
_BASE_KEYS = ("rows", "classes", "sampling_fraction", "threshold", "relation", "columns", "population")


@dataclass(frozen=True)
class RiskAssessment:
    """The risk of one relation against one attacker (the columns he knows): the counts, and each
    estimator's keys and values in estimator order (``measures``)."""

    relation: str
    columns: tuple[str, ...]  # QIDs, then the columns the attacker also knows
    rows: int
    classes: int
    sampling_fraction: float
    population: int
    threshold: float
    measures: tuple[tuple[str, Any], ...]
    weight: str | None = None

    def summary(self) -> dict[str, Any]:
        """What a release stores of its source's and its version's risk: the counts and every
        estimator's keys (not the relation and columns, which the risk row holds once)."""
        return {"rows": self.rows, "classes": self.classes, "sampling_fraction": self.sampling_fraction,
                "threshold": self.threshold, **dict(self.measures)}

    def to_json(self) -> dict[str, Any]:
        """The ``ppdp risk --json`` object."""
        return self.summary() | {"relation": self.relation, "columns": list(self.columns), "population": self.population}

    def basis(self) -> dict[str, Any]:
        """What the estimators' text lines may quote beside their own values."""
        return {"rows": self.rows, "classes": self.classes, "sampling_fraction": self.sampling_fraction,
                "population": self.population, "threshold": self.threshold, "weight": self.weight}


def histogram(con: Connector, relation: str, cols: list[str]) -> Histogram:
    """Frequency of frequencies of ``relation`` on ``cols``, counted in the database."""
    frame = con.query(R.class_sizes(relation, cols, con.dialect))
    return Histogram.of({int(s): int(c) for s, c in frame.select("size", "classes").iter_rows()})


def summarize(h: Histogram, *, sampling_fraction: float | None = None, population: int | None = None,
              threshold: float = 0.2) -> tuple[AttackerRisk, float, PopulationUniques]:
    """Prosecutor risk, sample uniques and population uniques of one histogram."""
    n = h.records
    pop = population if population is not None else population_size(n, sampling_fraction or 1.0)
    pu = estimate(h, pop)
    return prosecutor(h, threshold), h.of_size(1) / n, pu


def assess(connector: Connector, relation: str, qids: list[str], *, also: tuple[str, ...] | list[str] = (),
           sampling_fraction: float | None = None, population: int | None = None, population_table: str | None = None,
           threshold: float = 0.2, weight: str | None = None, attributes: bool = True) -> RiskAssessment:
    """Risk of ``relation`` (a quoted SQL relation) for an attacker who knows ``qids`` + ``also``.

    ``sampling_fraction`` (or ``population``, the population's size) feeds the population
    uniqueness estimators (default: the relation is the whole population, f = 1);
    ``population_table`` (a quoted relation) gives journalist risk against real population
    classes; ``weight`` names a sampling-weight column for sdcMicro's individual risk;
    ``attributes=False`` leaves out distinction and separation (one GROUP BY per combination).
    """
    cols = list(dict.fromkeys([*qids, *also]))
    if not cols:
        raise SpecError("risk needs at least one attacker column. Hint: --qids a,b.")
    if sampling_fraction is not None and population is not None:
        raise SpecError("give either a sampling fraction or a population size, not both.")
    if sampling_fraction is not None and not (isinstance(sampling_fraction, int | float) and 0 < sampling_fraction <= 1):
        raise SpecError(f"the sampling fraction must be in (0, 1], got {sampling_fraction!r}. Hint: --sampling-fraction 0.1.")
    if not (0 <= threshold <= 1) or isinstance(threshold, bool):
        raise SpecError(f"the risk threshold must be in [0, 1], got {threshold!r}. Hint: --threshold 0.2.")
    h = histogram(connector, relation, cols)
    n = h.records
    if n == 0:
        raise DataError(f"{relation} has no rows; there is no risk to measure.")
    if population is not None and population < n:
        raise SpecError(f"the population ({population}) cannot be smaller than the sample ({n} rows).")
    pop = population if population is not None else population_size(n, sampling_fraction or 1.0)
    inp = RiskInput(connector, relation, tuple(cols), h, pop, n / pop, threshold, population_table, weight, attributes)
    measures: dict[str, Any] = {}
    for e in estimators():
        values = e.estimate(inp)
        if values is None:
            continue
        bad = [k for k in values if k not in e.keys or k in measures or k in _BASE_KEYS]
        if bad:  # an estimator writes only the keys it declares, and no other estimator's
            raise ValueError(f"risk estimator {e.name!r} writes keys {bad} that it does not declare or that another one writes")
        measures.update(values)
    return RiskAssessment(relation, tuple(cols), n, h.classes, n / pop, pop, threshold, tuple(measures.items()), weight)
