"""Journalist and marketer risk (El Emam, as ARX computes them): the attacker links the data to
a population it was drawn from. Against a population table the classes are matched in the
database (sql/risk.py ``population_sizes``); without one the population is the data itself and
both equal the prosecutor's figures (ARX does the same)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from ppdp.engine.risk.base import RISK_ESTIMATORS, RiskEstimator, RiskInput
from ppdp.engine.risk.prosecutor import journalist, marketer, prosecutor
from ppdp.sql import risk as R


class JournalistRisk(RiskEstimator):
    name = "journalist"
    keys = {"journalist": {"type": "object", "required": ["average", "highest", "records_at_risk", "success_rate"]},
            "marketer": {"type": "object", "required": ["success_rate"]}}
    order = 20

    def estimate(self, inp: RiskInput) -> dict[str, Any]:
        if inp.population_table is None:
            pros = prosecutor(inp.histogram, inp.threshold)
            jour, mark = pros, pros.success_rate
        else:
            sql = R.population_sizes(inp.relation, inp.population_table, list(inp.columns), inp.con.dialect)
            frame = inp.con.query(sql)
            pairs = [(int(a), int(b), int(c)) for a, b, c in frame.select("size", "population_size", "classes").iter_rows()]
            jour, mark = journalist(pairs, inp.threshold), marketer(pairs)
        return {"journalist": asdict(jour), "marketer": {"success_rate": mark}}

    def lines(self, values: Mapping[str, Any], basis: Mapping[str, Any]) -> list[str]:
        j, m = values["journalist"], values["marketer"]
        return [f"  journalist     : average {j['average']:.6f}, highest {j['highest']:.6f}, records at risk {j['records_at_risk']:.2%}",
                f"  marketer       : success rate {m['success_rate']:.6f}"]

    def rows(self) -> tuple[tuple[str, str], ...]:
        return (("journalist: average risk", "journalist.average"), ("journalist: highest risk", "journalist.highest"),
                ("journalist: records at risk", "journalist.records_at_risk"),
                ("journalist: success rate", "journalist.success_rate"), ("marketer: success rate", "marketer.success_rate"))


RISK_ESTIMATORS.register(JournalistRisk.name)(JournalistRisk())
