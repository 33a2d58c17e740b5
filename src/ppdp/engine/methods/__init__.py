"""Release methods, registered by name: how a release's published rows are chosen.

A method turns a validated input (``Prepared``) into a ``ReleasePlan`` and knows how to write
its private state and the SELECT of its candidate rows; everything after that (row ids, the
version table, the cross-version check, verification, delta, view, grants, the run record) is
shared by every method (engine/release/stages/). Adding a method is one new module that
registers it (docs/extending.md).

The interface, ``ReleaseMethod``, the plan and the registry ``METHODS`` are defined with the
stages (engine/methods/base.py), which receive the method object as an argument and import no
method. ``method_of`` is where a spec's ``[method] name`` is looked up (engine/core/spec.py only
checks that it is a string).
"""

from __future__ import annotations

from ppdp.engine.core.spec import ReleaseSpec
from ppdp.engine.methods.base import METHODS, ChecksOwnHistory, ReleaseMethod, ReleasePlan
from ppdp.errors import SpecError, UnknownNameError

__all__ = ["METHODS", "ChecksOwnHistory", "ReleaseMethod", "ReleasePlan", "method_of"]


def method_of(spec: ReleaseSpec) -> ReleaseMethod:
    """The release method ``spec`` names; a one-line SpecError for an unknown name. An entry
    point may name the method object or its class (made with no arguments)."""
    try:
        method = METHODS.get(spec.method)
    except UnknownNameError as exc:
        raise SpecError(f"method.name: {exc}") from None
    return method() if isinstance(method, type) else method
