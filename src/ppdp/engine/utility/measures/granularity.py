"""Granularity (ARX's Loss quality model, QualityModelColumnOrientedLoss): per QID the mean
domain share of the published values, a withheld row counting 1; normalized between 1/|domain|
and 1 and reported as quality, 1 - normalized loss (Iyengar's loss metric, ARX's gs-factor 0)."""

from __future__ import annotations

from typing import Any

from ppdp.engine.utility.base import UtilityInput, UtilityMeasure, column_quality, register
from ppdp.engine.utility.measures._arx import row_suppressed


def granularity(inp: UtilityInput) -> dict[str, Any]:
    arx = inp.arx
    result = [0.0] * len(inp.columns)
    for cell in inp.cells:
        shown = inp.shown(cell)
        suppressed = row_suppressed(cell.outputs, shown)
        for i, h in enumerate(arx):
            result[i] += cell.count * (1.0 if suppressed else h.share(shown[i]))
    n = float(inp.rows)
    loss = [r / n for r in result]
    out = column_quality(inp.columns, [1.0 / h.domain if h.domain else 0.0 for h in arx], loss, [1.0] * len(arx))
    return out | {"loss": sum(loss) / len(loss)}


register(UtilityMeasure("granularity", "granularity (ARX Loss)", granularity, arx="getGranularity", order=10))
