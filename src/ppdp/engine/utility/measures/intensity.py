"""Generalization intensity (ARX's QualityModelColumnOrientedPrecision): per QID the mean of
level / height of the published values (the level where the value first appears), a withheld
row counting 1; reported as quality, 1 - the mean (Sweeney's precision)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ppdp.engine.utility.base import (
    UtilityInput,
    UtilityMeasure,
    column_quality,
    ordered_sum,
    register,
)


def intensity(inp: UtilityInput) -> dict[str, Any]:
    arx = inp.arx
    # per QID: sum over rows of the published value's level / height, a suppressed row counting 1
    result = [ordered_sum(inp.counts * np.where(inp.suppressed, 1.0, shown.get(h.precision, 1.0)))
              for h, shown in zip(arx, inp.shown_codes, strict=True)]
    n = float(inp.rows)
    return column_quality(inp.columns, [0.0] * len(arx), [r / n for r in result], [1.0] * len(arx))


register(UtilityMeasure("intensity", "generalization intensity", intensity, arx="getGeneralizationIntensity", order=20))
