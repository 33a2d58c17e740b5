"""Sample-based re-identification risk from class sizes (El Emam's prosecutor, journalist and
marketer models as ARX's ``RiskModelSampleSummary`` computes them; ARX's ``RiskModelAttributes``
for distinction and separation).

A record in a class of f records has prosecutor risk 1/f: the attacker knows the person is in
the data and picks one of the f records that match. Journalist risk replaces f by the size F of
the matching class in a population the data were drawn from (1/F); marketer success is the
expected share of records re-identified when the attacker links every record.

The estimator of this module is the prosecutor's; journalist.py, bands.py and attributes.py use
the other functions here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ppdp.engine.risk.base import RISK_ESTIMATORS, RiskEstimator, RiskInput
from ppdp.engine.risk.population import Histogram

# Upper edges of the risk bands (ARX's risk distribution view uses the same kind of steps).
BANDS = (0.0, 1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.1,
         0.12, 0.14, 0.16, 0.2, 0.25, 0.334, 0.5, 1.0)


@dataclass(frozen=True)
class AttackerRisk:
    """ARX's ``ProsecutorRisk``/``JournalistRisk``: average and highest risk, share of records
    whose risk exceeds the threshold, success rate (expected share re-identified)."""

    average: float
    highest: float
    records_at_risk: float
    success_rate: float


@dataclass(frozen=True)
class Band:
    """Records whose risk lies in (low, high]."""

    low: float
    high: float
    records: int
    share: float


@dataclass(frozen=True)
class Separation:
    """ARX's alpha distinction and alpha separation of one attacker column combination."""

    columns: tuple[str, ...]
    distinction: float
    separation: float


def prosecutor(h: Histogram, threshold: float) -> AttackerRisk:
    """Average risk = classes/records = success rate; highest = 1/smallest class."""
    n = h.records
    at_risk = sum(s * c for s, c in zip(h.sizes, h.counts, strict=True) if 1.0 / s > threshold)
    rate = h.classes / n
    return AttackerRisk(rate, 1.0 / h.sizes[0], at_risk / n, rate)


def journalist(pairs: Iterable[tuple[int, int, int]], threshold: float) -> AttackerRisk:
    """From (sample size f, population size F, classes) triples, as ARX: records at risk where
    1/F > threshold, highest 1/min F, success rate max(classes/sum F, mean f/F)."""
    at_risk = records = classes = pop_sum = ratio = 0.0
    smallest = float("inf")
    for f, big, c in pairs:
        if 1.0 / big > threshold:
            at_risk += f * c
        smallest = min(smallest, big)
        classes += c
        records += f * c
        pop_sum += big * c
        ratio += c * f / big
    rate = max(classes / pop_sum, ratio / records)
    return AttackerRisk(rate, 1.0 / smallest, at_risk / records, rate)


def marketer(pairs: Iterable[tuple[int, int, int]]) -> float:
    """Expected share re-identified when every record is linked: mean of f/F over records."""
    records = ratio = 0.0
    for f, big, c in pairs:
        records += f * c
        ratio += c * f / big
    return ratio / records


def bands(h: Histogram) -> tuple[Band, ...]:
    """Records per risk band (risk 1/size in (low, high])."""
    n = h.records
    out = []
    for low, high in zip(BANDS, BANDS[1:], strict=False):
        r = sum(s * c for s, c in zip(h.sizes, h.counts, strict=True) if low < 1.0 / s <= high)
        out.append(Band(low, high, r, r / n))
    return tuple(out)


def separation(columns: tuple[str, ...], h: Histogram) -> Separation:
    """ARX's ``getAlphaDistinction`` (classes/records) and ``getAlphaSeparation`` (share of
    record pairs that differ on at least one of the columns)."""
    n = float(h.records)
    total = (n - 1.0) * n / 2.0
    left = n
    separated = 0.0
    for size, mult in zip(h.sizes, h.counts, strict=True):
        left -= size * mult
        separated += mult * size * left + ((mult - 1.0) * mult * (size * size)) / 2.0
    return Separation(columns, h.classes / n, separated / total if total else 0.0)


class ProsecutorRisk(RiskEstimator):
    """El Emam's prosecutor model (ARX's ``RiskModelSampleSummary``): the attacker knows the
    person is in the data."""

    name = "prosecutor"
    keys = {"prosecutor": {"type": "object", "required": ["average", "highest", "records_at_risk", "success_rate"]}}
    order = 10

    def estimate(self, inp: RiskInput) -> dict[str, Any]:
        return {"prosecutor": asdict(prosecutor(inp.histogram, inp.threshold))}

    def lines(self, values: Mapping[str, Any], basis: Mapping[str, Any]) -> list[str]:
        p = values["prosecutor"]
        return [f"  prosecutor     : average {p['average']:.6f}, highest {p['highest']:.6f}, records at risk "
                f"(> {basis['threshold']:g}) {p['records_at_risk']:.2%}, success rate {p['success_rate']:.6f}"]

    def rows(self) -> tuple[tuple[str, str], ...]:
        return (("prosecutor: average risk", "prosecutor.average"), ("prosecutor: highest risk", "prosecutor.highest"),
                ("prosecutor: records at risk", "prosecutor.records_at_risk"),
                ("prosecutor: success rate", "prosecutor.success_rate"))

    def summary(self, values: Mapping[str, Any]) -> str:
        p = values["prosecutor"]
        return f"prosecutor average {p['average']:.4f}, highest {p['highest']:.4f}, records at risk {p['records_at_risk']:.2%}"


RISK_ESTIMATORS.register(ProsecutorRisk.name)(ProsecutorRisk())
