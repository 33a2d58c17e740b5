"""Refusals before any write: combinations of models and a release method that no check vouches for.

The release pipeline calls these after the spec and source are validated and before anything is
written (no ``_ppdp`` schema, no run record, no table). They read only what models and methods
declare (models/base.py), so a new model or method that declares nothing is refused, never
published unchecked:

- a method that publishes equivalence classes is verified by each model's own SQL check, so
  every model must have one (``PrivacyModel.version_sql``);
- a method that publishes no classes (heterogeneous k-anonymity) verifies its rows by its own
  checks, so every model must be one that those checks cover (``ReleaseMethod.covers``);
- a later version of a class-publishing release is safe because every history class (records
  that shared a class in every version) is a union of classes that each satisfy the models; that
  holds only for models declared ``union_closed`` that supply a history check.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ppdp.engine.errors import SpecError
from ppdp.engine.models import PrivacyModel


def refuse_unverifiable(models: Sequence[PrivacyModel], *, method: str, publishes_classes: bool,
                        covers: Callable[[PrivacyModel], bool]) -> None:
    """SpecError (one line) unless every model is verified by SQL or covered by the method's checks."""
    if publishes_classes:
        unchecked = [m.name for m in models if not m.has_version_check]
        if unchecked:
            raise SpecError(f"{', '.join(unchecked)} has no SQL verification of a published version, so no release "
                            f"under it can be verified; nothing was written. Hint: choose models with a version check.")
        return
    uncovered = [m.name for m in models if not covers(m)]
    if uncovered:
        raise SpecError(f"method {method!r} publishes no equivalence classes and its own checks do not cover "
                        f"{', '.join(uncovered)}, so a release could not be verified; nothing was written.")


def refuse_later_version(models: Sequence[PrivacyModel], *, release: str, previous_version: int,
                         publishes_classes: bool) -> None:
    """SpecError (one line) when a new version of ``release`` would rest on a model that the
    cross-version check cannot vouch for."""
    if not publishes_classes:
        return  # the method's own cross-version rule covers its models (refuse_unverifiable)
    unsafe = [m.name for m in models if not (m.union_closed and m.has_history_check)]
    if unsafe:
        raise SpecError(f"{', '.join(unsafe)} is not declared to hold for a union of classes (with a history check), "
                        f"so the cross-version check cannot protect a version after v{previous_version} of {release}; "
                        "nothing was written. Hint: publish under a new output name.")
