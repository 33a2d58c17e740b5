"""Discernibility (ARX's QualityModelRowOrientedDiscernibility; Bayardo & Agrawal 2005): the
sum of squared class sizes, a withheld row costing the number of rows; between the source's
value and rows squared."""

from __future__ import annotations

from typing import Any

from ppdp.engine.utility.base import UtilityInput, UtilityMeasure, register, row_quality


def discernibility(inp: UtilityInput) -> dict[str, Any]:
    n = float(inp.rows)
    minimum = sum(float(s) * s for s in inp.input_classes.values())
    result = sum(float(s) * s for s in inp.output_classes.values()) + inp.withheld * n
    return {"value": row_quality(minimum, result, n * n), "discernibility": result}


register(UtilityMeasure("discernibility", "discernibility", discernibility, arx="getDiscernibility", order=50))
