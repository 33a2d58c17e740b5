"""Ambiguity (ARX's QualityModelRowOrientedAmbiguity; Nergiz & Clifton 2007): per row the
product over QIDs of the number of leaves its published value could stand for (share x domain),
between one per row and the product of the domain sizes."""

from __future__ import annotations

from typing import Any

from ppdp.engine.utility.base import UtilityInput, UtilityMeasure, register, row_quality


def ambiguity(inp: UtilityInput) -> dict[str, Any]:
    arx = inp.arx
    result = 0.0
    top = 1.0
    for h in arx:
        top *= h.domain
    for cell in inp.cells:
        shown = inp.shown(cell)
        prod = 1.0
        for i, h in enumerate(arx):
            prod *= h.share(shown[i]) * h.domain
        result += cell.count * prod
    n = float(inp.rows)
    return {"value": row_quality(n, result, n * top), "ambiguity": result / n}


register(UtilityMeasure("ambiguity", "ambiguity", ambiguity, arx="getAmbiguity", order=60))
