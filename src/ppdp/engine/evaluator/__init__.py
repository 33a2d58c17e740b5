"""The evaluator contract: a batch of (G, S) in; AD, TD, feasibility, suppressed count out.

Two backends implement it and must agree exactly (TD to 1e-9): ``numba`` (in-memory kernels,
engine/evaluator/numba_backend.py) and ``duckdb`` (the whole batch as one GROUP BY query,
engine/evaluator/duckdb_backend.py). S travels in compressed form: ``retained[p, h]`` records
kept of histogram row h (engine/encoding.py explains why that loses nothing).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ppdp.engine.evaluator.base import EVALUATORS, Evaluation, EvaluatorBackend, finish

if TYPE_CHECKING:
    from ppdp.engine.encoding import EncodedTable
    from ppdp.engine.models import PrivacyModel

__all__ = ["EVALUATORS", "Evaluation", "EvaluatorBackend", "finish", "make_evaluator"]


def make_evaluator(name: str, table: EncodedTable, models: list[PrivacyModel]) -> EvaluatorBackend:
    """Instantiate a registered backend by name."""
    return EVALUATORS.get(name)(table, models)


# The built-in backends register themselves in EVALUATORS.
from ppdp.engine.evaluator import duckdb_backend, numba_backend  # noqa: E402,F401
