"""Re-identification risk of a table or of a published version.

``assess`` counts classes by GROUP BY in the database (sql/risk.py) and runs small estimators
on the frequency of frequencies here: prosecutor, journalist and marketer risk and the risk
bands (prosecutor.py, after ARX's ``RiskModelSampleSummary``), sample and population uniqueness
(population.py, ARX's ``RiskModelPopulationUniqueness`` with Dankar's rule), sdcMicro's
individual risk from sampling weights (individual.py) and ARX's distinction and separation of
the attacker's column combinations.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass
from typing import Any

from ppdp.connectors.base import Connector
from ppdp.engine.risk.individual import IndividualRisk, individual
from ppdp.engine.risk.population import Histogram, PopulationUniques, estimate, population_size
from ppdp.engine.risk.prosecutor import (
    AttackerRisk,
    Band,
    Separation,
    bands,
    journalist,
    marketer,
    prosecutor,
    separation,
)
from ppdp.errors import DataError, SpecError
from ppdp.sql import risk as R

__all__ = ["AttackerRisk", "Band", "Histogram", "IndividualRisk", "PopulationUniques", "RiskAssessment", "Separation",
           "assess", "histogram", "summarize"]

# Up to this many attacker columns every combination is shown; above it, those of size 1 and 2.
ALL_COMBINATIONS_UP_TO = 3


@dataclass(frozen=True)
class RiskAssessment:
    """The risk of one relation against one attacker (the columns he knows)."""

    relation: str
    columns: tuple[str, ...]  # QIDs, then the columns the attacker also knows
    rows: int
    classes: int
    sampling_fraction: float
    population: int
    threshold: float
    prosecutor: AttackerRisk
    journalist: AttackerRisk
    marketer_success_rate: float
    sample_uniques: float
    population_uniques: PopulationUniques
    bands: tuple[Band, ...]
    separations: tuple[Separation, ...]
    individual: IndividualRisk | None = None
    weight: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The ``ppdp risk --json`` object (the issue's keys first, then ppdp's additions)."""
        pu = self.population_uniques
        out: dict[str, Any] = {
            "rows": self.rows,
            "classes": self.classes,
            "sampling_fraction": self.sampling_fraction,
            "threshold": self.threshold,
            "prosecutor": asdict(self.prosecutor),
            "journalist": asdict(self.journalist),
            "marketer": {"success_rate": self.marketer_success_rate},
            "sample_uniques": self.sample_uniques,
            "population_uniques": {"pitman": pu.pitman, "zayatz": pu.zayatz, "snb": pu.snb, "dankar": pu.dankar,
                                   "dankar_model": pu.dankar_model},
            "relation": self.relation,
            "columns": list(self.columns),
            "population": self.population,
            "bands": [asdict(b) for b in self.bands],
            "attributes": [{"columns": list(s.columns), "distinction": s.distinction, "separation": s.separation}
                           for s in self.separations],
        }
        if self.individual is not None:
            out["individual"] = {"weight": self.weight, **asdict(self.individual)}
        return out


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


def _combinations(cols: list[str]) -> list[tuple[str, ...]]:
    top = len(cols) if len(cols) <= ALL_COMBINATIONS_UP_TO else 2
    return [c for r in range(1, top + 1) for c in itertools.combinations(cols, r)]


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
    d = connector.dialect
    h = histogram(connector, relation, cols)
    n = h.records
    if n == 0:
        raise DataError(f"{relation} has no rows; there is no risk to measure.")
    if population is not None and population < n:
        raise SpecError(f"the population ({population}) cannot be smaller than the sample ({n} rows).")
    pop = population if population is not None else population_size(n, sampling_fraction or 1.0)
    pros, uniques, pu = summarize(h, population=pop, threshold=threshold)
    if population_table is not None:
        frame = connector.query(R.population_sizes(relation, population_table, cols, d))
        pairs = [(int(a), int(b), int(c)) for a, b, c in frame.select("size", "population_size", "classes").iter_rows()]
        jour, mark = journalist(pairs, threshold), marketer(pairs)
    else:
        jour, mark = pros, pros.success_rate
    combos = _combinations(cols) if attributes else []
    per: dict[int, dict[int, int]] = {}
    if combos:
        frame = connector.query(R.combination_sizes(relation, [list(c) for c in combos], d))
        for combo, size, classes in frame.select("combo", "size", "classes").iter_rows():
            per.setdefault(int(combo), {})[int(size)] = int(classes)
    seps = tuple(separation(c, Histogram.of(per.get(i, {}))) for i, c in enumerate(combos))
    ind = None
    if weight is not None:
        frame = connector.query(R.weighted_sizes(relation, cols, weight, d))
        triples = [(int(a), float(b), int(c)) for a, b, c in frame.select("fk", "fw", "classes").iter_rows()
                   if b is not None and not math.isnan(float(b))]
        if not triples:
            raise DataError(f"the weight column {weight!r} has no values.")
        ind = individual(triples, threshold)
    return RiskAssessment(relation, tuple(cols), n, h.classes, n / pop, pop, threshold, pros, jour, mark, uniques, pu,
                          bands(h), seps, ind, weight)
