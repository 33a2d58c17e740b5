"""Hierarchies built from the data (``hierarchy = "auto"``): one builder per module.

A builder turns a column's leaves (its values as ``CAST(c AS VARCHAR)`` text) and a few
parameters into a ``Hierarchy``. The parameters are the hierarchy's *functional definition*
(``Definition``): stored with the version that used it, they rebuild the same tree for the next
version's data, and they give each generalized value's exact share of the domain (ARX's Loss of
an interval is its width over the domain's range, which a materialized tree of leaves cannot
know: arx#433). ``auto.choose`` picks a builder and its parameters from a column's profile
(``profile.ColumnProfile``); docs/design/auto_hierarchies.md has the rules and the NULL choice.

Every builder module has ``NAME``, ``build(attribute, leaves, params, counts)`` and
``bounds(params, leaf, level)`` (the leaf's generalized value at ``level`` as a closed-open
interval on the builder's number line, or None for a categorical builder, whose loss is ARX's
leaf share ``(|leaves below| - 1) / (|leaves| - 1)``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any

from ppdp.errors import HierarchyError


@dataclass(frozen=True)
class Definition:
    """A built hierarchy's builder and parameters (JSON-able values only)."""

    builder: str
    params: tuple[tuple[str, Any], ...]

    def param(self, name: str, default: Any = None) -> Any:
        return dict(self.params).get(name, default)

    def to_json(self) -> dict[str, Any]:
        return {"builder": self.builder, "params": dict(self.params)}

    @classmethod
    def of(cls, builder: str, **params: Any) -> Definition:
        # tuples for lists, so that the definition is hashable and compares by value
        return cls(builder, tuple(sorted((k, _frozen(v)) for k, v in params.items())))

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Definition:
        if not isinstance(raw, dict) or raw.get("builder") not in builders():
            raise HierarchyError(f"A stored hierarchy definition names no known builder: {json.dumps(raw)[:80]}.")
        return cls.of(raw["builder"], **raw.get("params", {}))


def _frozen(v: Any) -> Any:
    return tuple(_frozen(x) for x in v) if isinstance(v, list | tuple) else v


def builders() -> dict[str, ModuleType]:
    """Builder name -> module (imported here: the package is small and always needed together)."""
    from ppdp.engine.core.builders import codes, numeric, priority, temporal

    return {m.NAME: m for m in (numeric, temporal, codes, priority)}


def build(definition: Definition, attribute: str, leaves: list[str], counts: dict[str, int] | None = None):
    """The hierarchy of ``leaves`` under ``definition`` (``counts``: rows per leaf, for the builders
    that order by frequency), with the definition attached."""
    module = builders()[definition.builder]
    return replace(module.build(attribute, leaves, dict(definition.params), counts or {}), definition=definition)


def definition_of(h) -> Definition | None:
    """The functional definition a built hierarchy carries (None: a file or a fixed generator)."""
    return h.definition
