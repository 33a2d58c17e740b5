"""Individual risk from sampling weights (sdcMicro's ``indivRisk``, method "approx", survey data;
Franconi and Polettini 2004, Benedetti and Franconi 1998).

Within a class of f_k sample records whose weights sum to F_k (the estimated population size of
the class), with p_k = f_k / F_k, the record's risk under the negative binomial model is
approximated by

    f_k = 1:  p/(1-p) * log(1/p)
    f_k = 2:  p/(1-p) - (p/(1-p))^2 * log(1/p)
    f_k > 2:  p / (f_k - (1 - p))

and 1/f_k where f_k = F_k (the class is the whole population). The global risk is the expected
number of re-identifications, the sum of the records' risks (sdcMicro's ``global_risk_ER``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class IndividualRisk:
    """sdcMicro's individual risk summarised, and its global risk."""

    average: float
    highest: float
    records_at_risk: float  # share of records whose risk exceeds the threshold
    expected_reidentifications: float  # global_risk_ER
    global_risk: float  # expected re-identifications / records


def rk(fk: int, big_fk: float) -> float:
    """sdcMicro's ``indivRisk(method = "approx", survey = TRUE)`` for one class."""
    if fk == big_fk:
        return 1.0 / fk
    p = fk / big_fk
    if fk > 2:
        return p / (fk - (1 - p))
    if fk == 2:
        return (p / (1 - p)) - ((p / (1 - p)) ** 2) * math.log(1 / p)
    return (p / (1 - p)) * math.log(1 / p)


def individual(classes: Iterable[tuple[int, float, int]], threshold: float) -> IndividualRisk:
    """From (f_k, F_k, number of classes) triples."""
    er = records = at_risk = 0.0
    highest = 0.0
    for fk, big, c in classes:
        r = rk(int(fk), float(big))
        er += r * fk * c
        records += fk * c
        highest = max(highest, r)
        if r > threshold:
            at_risk += fk * c
    return IndividualRisk(er / records, highest, at_risk / records, er, er / records)
