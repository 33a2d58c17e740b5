"""Ambiguity (ARX's QualityModelRowOrientedAmbiguity; Nergiz & Clifton 2007): per row the
product over QIDs of the number of leaves its published value could stand for (share x domain),
between one per row and the product of the domain sizes."""

from __future__ import annotations

from typing import Any

import numpy as np

from ppdp.engine.utility.base import (
    UtilityInput,
    UtilityMeasure,
    ordered_sum,
    register,
    row_quality,
)


def ambiguity(inp: UtilityInput) -> dict[str, Any]:
    arx = inp.arx
    top = 1.0
    for h in arx:
        top *= h.domain
    # per row: the product over QIDs of the leaves its published value could stand for
    prod = np.ones(len(inp.cells))
    for h, shown in zip(arx, inp.shown_codes, strict=True):
        prod *= shown.map(h.share) * h.domain
    result = ordered_sum(inp.counts * prod)
    n = float(inp.rows)
    return {"value": row_quality(n, result, n * top), "ambiguity": result / n}


register(UtilityMeasure("ambiguity", "ambiguity", ambiguity, arx="getAmbiguity", order=60))
