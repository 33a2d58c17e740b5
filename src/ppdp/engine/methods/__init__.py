"""Release methods, registered by name: how a release's published rows are chosen.

A method turns a validated input (``Prepared``) into a ``ReleasePlan`` and knows how to write
its private state and the SELECT of its candidate rows; everything after that (row ids, the
version table, the cross-version check, verification, delta, view, grants, the run record) is
shared by every method (engine/release/stages/). Adding a method is one new module and its line below.

The interface, ``ReleaseMethod``, and the plan are defined with the stages
(engine/methods/base.py), which receive the method object as an argument and import no method;
this package sits above them. ``method_of`` is where a spec's ``[method] name`` is looked up
(engine/core/spec.py only checks that it is a string: it does not know the methods).
"""

from __future__ import annotations

from ppdp.engine.core.spec import ReleaseSpec
from ppdp.engine.methods.base import ChecksOwnHistory, ReleaseMethod, ReleasePlan
from ppdp.engine.methods.generalization.method import Generalization
from ppdp.engine.methods.heterogeneous.method import Heterogeneous
from ppdp.engine.methods.microaggregation.method import Microaggregation
from ppdp.errors import SpecError, UnknownNameError
from ppdp.registry import Registry

__all__ = ["METHODS", "ChecksOwnHistory", "ReleaseMethod", "ReleasePlan", "method_of"]

METHODS: Registry[ReleaseMethod] = Registry("release method")
# The built-in methods (the modules import nothing from this package, so nothing here is circular).
BUILT_IN: tuple[ReleaseMethod, ...] = (Generalization(), Heterogeneous(), Microaggregation())
for _method in BUILT_IN:
    METHODS.register(_method.name)(_method)


def method_of(spec: ReleaseSpec) -> ReleaseMethod:
    """The release method ``spec`` names; a one-line SpecError for an unknown name."""
    try:
        return METHODS.get(spec.method)
    except UnknownNameError as exc:
        raise SpecError(f"method.name: {exc}") from None
