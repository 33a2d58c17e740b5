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
from ppdp.errors import DataError
from ppdp.sql import risk as R


def check_population(rows: list[tuple], population: str) -> None:
    """The population table must be the population the data were drawn from, generalized like
    them: every class of the data has at least as many persons there as records here. A class
    with no person there (a raw population against a generalized release, other labels) or
    fewer persons than records would make journalist risk silently equal to, or above, the
    prosecutor's: refused."""
    classes = sum(int(c) for _, _, c in rows)
    unmatched = sum(int(c) for _, big, c in rows if big is None)
    if unmatched:
        raise DataError(f"{unmatched} of the {classes} classes of the data have no person in the population table {population}: "
                        "it is not generalized like the data (a raw table against a release?) or not their population. "
                        "Hint: give a population generalized to the release's levels, or --population N.")
    smaller = sum(int(c) for f, big, c in rows if int(big) < int(f))
    if smaller:
        raise DataError(f"{smaller} of the {classes} classes of the data have fewer persons in the population table "
                        f"{population} than records in the data: it cannot be the population they were drawn from.")


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
            rows = list(frame.select("size", "population_size", "classes").iter_rows())
            check_population(rows, inp.population_table)
            pairs = [(int(a), int(b), int(c)) for a, b, c in rows]
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
