"""The risk distribution: records per band of prosecutor risk (ARX's risk distribution view)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from ppdp.engine.risk.base import RISK_ESTIMATORS, Chart, RiskEstimator, RiskInput
from ppdp.engine.risk.prosecutor import bands


class RiskBands(RiskEstimator):
    name = "bands"
    keys = {"bands": {"type": "array", "items": {"type": "object", "required": ["low", "high", "records", "share"]}}}
    order = 50

    def estimate(self, inp: RiskInput) -> dict[str, Any]:
        return {"bands": [asdict(b) for b in bands(inp.histogram)]}

    def lines(self, values: Mapping[str, Any], basis: Mapping[str, Any]) -> list[str]:
        held = [f"({b['low']:g}, {b['high']:g}] {b['share']:.1%}" for b in values["bands"] if b["records"]]
        return ["  risk bands     : " + ", ".join(held)]

    def chart(self, values: Mapping[str, Any]) -> Chart:
        return Chart("records per risk band (bands holding records)", "prosecutor risk up to", "share of records",
                     tuple((f"≤{b['high']:.3g}", float(b["share"])) for b in values["bands"]))


RISK_ESTIMATORS.register(RiskBands.name)(RiskBands())
