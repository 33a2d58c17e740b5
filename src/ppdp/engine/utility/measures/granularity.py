"""Granularity (ARX's Loss quality model, QualityModelColumnOrientedLoss): per QID the mean
domain share of the published values, a withheld row counting 1; normalized between 1/|domain|
and 1 and reported as quality, 1 - normalized loss (Iyengar's loss metric, ARX's gs-factor 0)."""

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


def granularity(inp: UtilityInput) -> dict[str, Any]:
    arx = inp.arx
    # per QID: sum over rows of the published value's share, a suppressed row counting 1
    result = [ordered_sum(inp.counts * np.where(inp.suppressed, 1.0, shown.map(h.share)))
              for h, shown in zip(arx, inp.shown_codes, strict=True)]
    n = float(inp.rows)
    loss = [r / n for r in result]
    out = column_quality(inp.columns, [1.0 / h.domain if h.domain else 0.0 for h in arx], loss, [1.0] * len(arx))
    return out | {"loss": sum(loss) / len(loss)}


register(UtilityMeasure("granularity", "granularity (ARX Loss)", granularity, arx="getGranularity", order=10))
