"""Name -> object registries with "did you mean" errors (after sqlglot's Dialect registry).

Every kind of extension is found the same way (``KINDS``): the built-in ones, listed below by the
dotted name of the module that registers them when imported, and the entry points of the kind's
group, which another distribution declares in its ``pyproject.toml``. Both are loaded on first
use, so ``ppdp --help`` imports none of them and an optional dependency is imported only when
its object is asked for. ``registry(kind)`` is the one registry of a kind: the module that
defines the kind's interface calls it, and the spec reader looks names up through it without
importing that module (docs/extending.md).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Generic, TypeVar

from ppdp.errors import PpdpError, UnknownNameError, did_you_mean, known_names

T = TypeVar("T")

_GEN = "ppdp.engine.methods.generalization"


@dataclass(frozen=True)
class Kind:
    """One kind of extension: its noun in messages, its entry-point group and the modules that
    register its built-in objects when imported."""

    noun: str
    group: str
    builtins: tuple[str, ...]


# The one list of built-in extensions. A built-in module registers its objects itself
# (``registry(kind).register(name)``); the privacy models' package imports each model module.
KINDS: dict[str, Kind] = {
    "model": Kind("privacy model", "ppdp.models", ("ppdp.engine.privacy",)),
    "method": Kind("release method", "ppdp.methods", (f"{_GEN}.method", "ppdp.engine.methods.heterogeneous.method",
                                                      "ppdp.engine.methods.microaggregation.method")),
    "optimizer": Kind("optimizer", "ppdp.optimizers", tuple(f"{_GEN}.optimizers.{m}" for m in (
        "lattice", "flash", "ga", "de", "descent", "haef", "id_dga"))),
    "evaluator": Kind("evaluator backend", "ppdp.evaluators", (f"{_GEN}.evaluators.numba_backend",
                                                                f"{_GEN}.evaluators.duckdb_backend")),
    "metric": Kind("utility metric", "ppdp.metrics", (f"{_GEN}.metrics",)),
    # every public module of engine/risk/ (a new built-in estimator is one module there)
    "risk estimator": Kind("risk estimator", "ppdp.risk_estimators", ("ppdp.engine.risk.*",)),
    # every public module of engine/utility/measures/ (a new built-in measure is one module there)
    "utility measure": Kind("utility measure", "ppdp.utility_measures", ("ppdp.engine.utility.measures.*",)),
    # the built-in connectors are entry points of ppdp's own pyproject.toml (one per URL scheme)
    "connector": Kind("database connector", "ppdp.connectors", ()),
}


def _modules(name: str) -> list[str]:
    """``name``, or for ``package.*`` every public module of that package, by name."""
    if not name.endswith(".*"):
        return [name]
    package = importlib.import_module(name[:-2])
    return [f"{package.__name__}.{m.name}" for m in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name)
            if not m.name.startswith("_")]


@functools.lru_cache(maxsize=4)
def _entry_points(path: tuple[str, ...]) -> dict[str, list[EntryPoint]]:
    """Every installed distribution's entry points by group, read once for all groups (one pass
    over the environment's metadata per ``sys.path``, rather than one per kind)."""
    found = entry_points()
    return {group: list(found.select(group=group)) for group in found.groups}


class UnavailableError(PpdpError):
    """A registered name whose module needs an optional dependency that is not installed."""


class Registry(Generic[T]):
    """Named objects of one kind, e.g. ``Registry("privacy model")``; with ``entry_point_group``
    also the entry points of that group, and with ``builtins`` the modules that register the
    built-in objects, all loaded when first asked for."""

    def __init__(self, kind: str, *, entry_point_group: str | None = None, builtins: tuple[str, ...] = ()) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        self._group = entry_point_group
        self._builtins = builtins
        self._builtins_loaded = not builtins
        self._loading = False
        self._lock = threading.RLock()
        self._entry_points: dict[str, EntryPoint] | None = None
        self._clashes: dict[str, list[EntryPoint]] = {}

    def _load_builtins(self) -> None:
        if self._builtins_loaded:
            return
        # A re-entrant lock: the importing thread may look a name up again while a built-in module
        # is imported (and must not import it twice); another thread waits until all are registered.
        with self._lock:
            if self._builtins_loaded or self._loading:
                return
            self._loading = True
            try:
                for module in self._builtins:
                    for name in _modules(module):
                        importlib.import_module(name)
                self._builtins_loaded = True
            finally:
                self._loading = False

    def _discovered(self) -> dict[str, EntryPoint]:
        if self._entry_points is None:
            found: dict[str, EntryPoint] = {}
            for ep in (_entry_points(tuple(sys.path)).get(self._group, []) if self._group is not None else ()):
                if ep.name in found and found[ep.name].value != ep.value:
                    self._clashes.setdefault(ep.name, [found[ep.name]]).append(ep)
                found[ep.name] = ep
            self._entry_points = found
        return self._entry_points

    def _load(self, name: str) -> T | None:
        ep = self._discovered().get(name)
        if ep is None:
            return None
        if name in self._clashes:  # two distributions offer the name: refuse rather than pick one
            where = ", ".join(f"{e.value} ({e.dist.name if e.dist else 'unknown distribution'})" for e in self._clashes[name])
            raise UnknownNameError(f"The {self.kind} {name!r} is offered by several packages: {where}. "
                                   "Hint: uninstall all but one of them.")
        try:
            obj: T = ep.load()
        except ImportError as exc:
            extra = f" Hint: pip install 'ppdp[{ep.extras[0]}]'." if ep.extras else ""
            raise UnavailableError(f"The {self.kind} {name!r} needs {exc.name or 'a module'} that is not installed.{extra}") from None
        self._items[name] = obj
        return obj

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: ``@MODELS.register("k-anonymity")``."""

        def add(obj: T) -> T:
            if name in self._items:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._items[name] = obj
            return obj

        return add

    def get(self, name: str) -> T:
        """The object registered as ``name``; UnknownNameError with a suggestion otherwise."""
        if name in self._items:
            return self._items[name]
        self._load_builtins()
        if name in self._items:
            return self._items[name]
        loaded = self._load(name)
        if loaded is not None:
            return loaded
        raise UnknownNameError(f"Unknown {self.kind} {name!r}.{did_you_mean(name, self.names())}{known_names(self.names())}") from None

    def names(self) -> list[str]:
        self._load_builtins()
        return sorted(set(self._items) | set(self._discovered()))

    def __contains__(self, name: object) -> bool:
        self._load_builtins()
        return name in self._items or name in self._discovered()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())


_REGISTRIES: dict[str, Registry[Any]] = {}


def registry(kind: str) -> Registry[Any]:
    """The registry of ``kind`` (a key of ``KINDS``), made on first use: the module that defines
    the kind's interface annotates it, e.g. ``MODELS: Registry[type[PrivacyModel]] = registry("model")``."""
    if kind not in _REGISTRIES:
        k = KINDS[kind]
        _REGISTRIES[kind] = Registry(k.noun, entry_point_group=k.group, builtins=k.builtins)
    return _REGISTRIES[kind]


def check_name(kind: str, name: str) -> str:
    """``name`` if an object of ``kind`` is registered under it (built-in or entry point), without
    loading it; UnknownNameError with "did you mean" otherwise."""
    reg = registry(kind)
    if name not in reg:
        reg.get(name)  # raises with the suggestion
    return name
