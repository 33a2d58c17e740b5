"""Privacy models, registered by name (docs/design/paper_notes.md §2): one module per model.

``base.py`` defines ``PrivacyModel``, the unit of extension, with its safe defaults;
``oracle.py`` combines the models' terms of the exact suppression oracle; each other module is
one model that registers itself in ``MODELS``. The checks below run for every model before the
search.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ppdp.engine.privacy.base import (
    MODELS,
    ClassStats,
    ModelContext,
    PrivacyModel,
    Requirements,
    build_model,
    distinct_sensitive_values,
    empty_ad,
)
from ppdp.engine.privacy.oracle import OracleParams, OraclePlan, plan_oracle
from ppdp.errors import ModelRefusal

if TYPE_CHECKING:
    from ppdp.engine.core.encoding import EncodedTable

__all__ = ["MODELS", "ClassStats", "ModelContext", "OracleParams", "OraclePlan", "PrivacyModel", "Requirements", "build_model",
           "check_feasible", "check_not_empty", "check_possible", "distinct_sensitive_values", "empty_ad", "plan_oracle"]


def check_possible(table: EncodedTable, models: Sequence[PrivacyModel]) -> None:
    """Refuse, right after encoding and before the search, a model no non-empty release meets.

    Without this the optimizer's best solution is the empty release (feasible by definition,
    docs/design/paper_notes.md §2), which would be published with every check "PASS".
    """
    for m in models:
        reason = m.impossible_reason(table)
        if reason is not None:
            raise ModelRefusal(f"No release can satisfy {m.name}: {reason}. Nothing was written.")


def check_not_empty(released_rows: int, models: Sequence[PrivacyModel]) -> None:
    """Refuse to publish an optimizer result that releases no row at all.

    check_possible rules out each model alone; models combined (say k-anonymity with a large k
    and entropy l-diversity that needs suppression) or a too small budget can still leave only
    the empty release, which satisfies every model vacuously and is useless.
    """
    if released_rows <= 0:
        names = ", ".join(f"{m.name} {m.params()}" for m in models)
        raise ModelRefusal(f"The best release found keeps no rows ({names} cannot be met together by any release found), "
                        "so nothing was published. Hint: relax the model parameters, or raise optimizer.budget.")


def check_feasible(plan: Any, models: Sequence[PrivacyModel]) -> None:
    """Refuse, before any write, a first version's search result the search itself found
    infeasible: its SQL check would fail after the whole run (exit 1); no evaluated release met
    the models (exit 3). (A later version's cross-version step may still hold the failing
    records back, so the orchestrator calls this for a first version only.)"""
    solution = getattr(plan, "solution", None) or {}
    if solution.get("feasible") is False:
        names = ", ".join(m.name for m in models)  # not the parameters: a research predicate is not for sharing
        raise ModelRefusal(f"No release the search evaluated meets {names}, so nothing was published. "
                           "Hint: relax the model parameters, or raise optimizer.budget.")


def _import_every_model_module() -> None:
    """Import every module of this package. A model registers itself (``@MODELS.register``) when
    its module is imported, so a new model is one new module: there is no list here to edit."""
    import importlib
    import pkgutil

    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        importlib.import_module(f"{__name__}.{info.name}")


_import_every_model_module()
