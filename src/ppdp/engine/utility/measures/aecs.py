"""Average equivalence class size (ARX's QualityModelRowOrientedAECS; LeFevre et al. 2006):
published rows per class, between the source's average class size and the number of rows."""

from __future__ import annotations

from typing import Any

from ppdp.engine.utility.base import UtilityInput, UtilityMeasure, register, row_quality


def aecs(inp: UtilityInput) -> dict[str, Any]:
    inputs, outputs = inp.input_classes, inp.output_classes
    if not outputs:
        return {"value": float("nan"), "average_class_size": None}
    minimum = sum(inputs.values()) / len(inputs)
    result = sum(outputs.values()) / len(outputs)
    return {"value": row_quality(minimum, result, float(inp.rows)), "average_class_size": result}


register(UtilityMeasure("aecs", "average class size", aecs, arx="getAverageClassSize", order=40))
