"""Sample uniques: the share of records alone in their class on the attacker's columns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ppdp.engine.risk.base import RISK_ESTIMATORS, RiskEstimator, RiskInput


class SampleUniques(RiskEstimator):
    name = "sample-uniques"
    keys = {"sample_uniques": {"type": "number", "minimum": 0, "maximum": 1}}
    order = 30

    def estimate(self, inp: RiskInput) -> dict[str, Any]:
        h = inp.histogram
        return {"sample_uniques": h.of_size(1) / h.records}

    def lines(self, values: Mapping[str, Any], basis: Mapping[str, Any]) -> list[str]:
        return [f"  sample uniques : {values['sample_uniques']:.2%} of the records"]

    def rows(self) -> tuple[tuple[str, str], ...]:
        return (("sample uniques", "sample_uniques"),)

    def summary(self, values: Mapping[str, Any]) -> str:
        return f"sample uniques {values['sample_uniques']:.2%}"


RISK_ESTIMATORS.register(SampleUniques.name)(SampleUniques())
