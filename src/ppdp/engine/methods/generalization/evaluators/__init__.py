"""The evaluator contract: a batch of (G, S) in; AD, TD, feasibility, suppressed count out.

Two backends implement it and must agree exactly (TD to 1e-9): ``numba`` (in-memory kernels,
engine/methods/generalization/evaluators/numba_backend.py) and ``duckdb`` (the whole batch as one GROUP BY query,
engine/methods/generalization/evaluators/duckdb_backend.py). S travels in compressed form: ``retained[p, h]`` records
kept of histogram row h (engine/core/encoding.py explains why that loses nothing).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ppdp.engine.methods.generalization.evaluators.base import (
    EVALUATORS,
    Evaluation,
    EvaluatorBackend,
    finish,
)

if TYPE_CHECKING:
    from ppdp.engine.core.encoding import EncodedTable
    from ppdp.engine.privacy import PrivacyModel

__all__ = ["EVALUATORS", "Evaluation", "EvaluatorBackend", "finish", "make_evaluator"]


def make_evaluator(name: str, table: EncodedTable, models: list[PrivacyModel]) -> EvaluatorBackend:
    """Instantiate a registered backend by name."""
    return EVALUATORS.get(name)(table, models)
