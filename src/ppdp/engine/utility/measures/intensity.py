"""Generalization intensity (ARX's QualityModelColumnOrientedPrecision): per QID the mean of
level / height of the published values (the level where the value first appears), a withheld
row counting 1; reported as quality, 1 - the mean (Sweeney's precision)."""

from __future__ import annotations

from typing import Any

from ppdp.engine.utility.base import UtilityInput, UtilityMeasure, column_quality, register
from ppdp.engine.utility.measures._arx import row_suppressed


def intensity(inp: UtilityInput) -> dict[str, Any]:
    arx = inp.arx
    result = [0.0] * len(inp.columns)
    for cell in inp.cells:
        shown = inp.shown(cell)
        suppressed = row_suppressed(cell.outputs, shown)
        for i, h in enumerate(arx):
            p = 1.0 if suppressed else h.precision.get(shown[i], 1.0)
            result[i] += cell.count * p
    n = float(inp.rows)
    return column_quality(inp.columns, [0.0] * len(arx), [r / n for r in result], [1.0] * len(arx))


register(UtilityMeasure("intensity", "generalization intensity", intensity, arx="getGeneralizationIntensity", order=20))
