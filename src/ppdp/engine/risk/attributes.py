"""ARX's distinction and separation of the attacker's column combinations (``RiskModelAttributes``):
one GROUP BY per combination, all in one statement (sql/risk.py ``combination_sizes``)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from ppdp.engine.risk.base import RISK_ESTIMATORS, RiskEstimator, RiskInput
from ppdp.engine.risk.population import Histogram
from ppdp.engine.risk.prosecutor import separation
from ppdp.sql import risk as R

# Up to this many attacker columns every combination is shown; above it, those of size 1 and 2.
ALL_COMBINATIONS_UP_TO = 3


def combinations(cols: list[str]) -> list[tuple[str, ...]]:
    top = len(cols) if len(cols) <= ALL_COMBINATIONS_UP_TO else 2
    return [c for r in range(1, top + 1) for c in itertools.combinations(cols, r)]


class Attributes(RiskEstimator):
    name = "attributes"
    keys = {"attributes": {"type": "array", "items": {"type": "object", "required": ["columns", "distinction", "separation"]}}}
    order = 60

    def estimate(self, inp: RiskInput) -> dict[str, Any] | None:
        if not inp.attributes:
            return None
        combos = combinations(list(inp.columns))
        per: dict[int, dict[int, int]] = {}
        frame = inp.con.query(R.combination_sizes(inp.relation, [list(c) for c in combos], inp.con.dialect))
        for combo, size, classes in frame.select("combo", "size", "classes").iter_rows():
            per.setdefault(int(combo), {})[int(size)] = int(classes)
        seps = [separation(c, Histogram.of(per.get(i, {}))) for i, c in enumerate(combos)]
        return {"attributes": [{"columns": list(s.columns), "distinction": s.distinction, "separation": s.separation}
                               for s in seps]}

    def lines(self, values: Mapping[str, Any], basis: Mapping[str, Any]) -> list[str]:
        return ["  distinction / separation per attacker columns:"] + [
            f"    {' + '.join(s['columns']):<40} {s['distinction']:.4f} / {s['separation']:.4f}" for s in values["attributes"]]


RISK_ESTIMATORS.register(Attributes.name)(Attributes())
