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
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ppdp.engine.risk.base import RISK_ESTIMATORS, RiskEstimator, RiskInput
from ppdp.errors import DataError
from ppdp.sql import risk as R


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


class SamplingWeightRisk(RiskEstimator):
    """sdcMicro's individual and global risk; only with a sampling-weight column (``--weight``)."""

    name = "individual"
    keys = {"individual": {"type": "object", "required": ["weight", "average", "highest", "records_at_risk",
                                                          "expected_reidentifications", "global_risk"]}}
    order = 45

    def estimate(self, inp: RiskInput) -> dict[str, Any] | None:
        if inp.weight is None:
            return None
        check = inp.con.query(R.weight_summary(inp.relation, inp.weight, inp.con.dialect)).row(0, named=True)
        if check["nulls"]:
            raise DataError(f"the weight column {inp.weight!r} is NULL in {check['nulls']} row(s): their classes' "
                            "population sizes are unknown. Hint: fill in the weights or measure without --weight.")
        if check["smallest"] is not None and not float(check["smallest"]) >= 1:
            raise DataError(f"the weight column {inp.weight!r} has a weight of {float(check['smallest']):g}: a sampling weight "
                            "is the number of persons of the population a record stands for, at least 1 "
                            "(sdcMicro's individual risk is above 1 otherwise).")
        frame = inp.con.query(R.weighted_sizes(inp.relation, list(inp.columns), inp.weight, inp.con.dialect))
        triples = [(int(a), float(b), int(c)) for a, b, c in frame.select("fk", "fw", "classes").iter_rows()
                   if b is not None and not math.isnan(float(b))]
        if not triples:
            raise DataError(f"the weight column {inp.weight!r} has no values.")
        return {"individual": {"weight": inp.weight, **asdict(individual(triples, inp.threshold))}}

    def lines(self, values: Mapping[str, Any], basis: Mapping[str, Any]) -> list[str]:
        i = values["individual"]
        return [f"  individual risk (sdcMicro, weight {i['weight']}): average {i['average']:.6f}, highest {i['highest']:.6f}, "
                f"expected re-identifications {i['expected_reidentifications']:.2f}"]


RISK_ESTIMATORS.register(SamplingWeightRisk.name)(SamplingWeightRisk())
