"""Name -> object registries with "did you mean" errors (after sqlglot's Dialect registry).

Every kind of extension is found the same way (``KINDS``): the built-in ones, listed below by
name and the dotted name of the module that registers them when imported, and the entry points
of the kind's group, which another distribution declares in its ``pyproject.toml``. Each is
loaded when its name is first asked for, and listing the names loads none, so ``ppdp --help``
imports none of them, a run imports only the model, method, optimizer.. it names, and an
optional dependency is imported only when its object is asked for. ``registry(kind)`` is the one registry of a kind: the module that
defines the kind's interface calls it, and the spec reader looks names up through it without
importing that module (docs/extending.md).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Generic, TypeVar

from ppdp.errors import PpdpError, UnknownNameError, did_you_mean, known_names

T = TypeVar("T")

_GEN = "ppdp.engine.methods.generalization"
_OPT = f"{_GEN}.optimizers"
_PRIV = "ppdp.engine.privacy"
_RISK = "ppdp.engine.risk"
_UTIL = "ppdp.engine.utility.measures"


@dataclass(frozen=True)
class Kind:
    """One kind of extension: its noun in messages, its entry-point group and its built-in
    objects, by the module that registers them when imported."""

    noun: str
    group: str
    modules: dict[str, tuple[str, ...]]

    @property
    def builtins(self) -> dict[str, str]:
        """Built-in name -> the module that registers it."""
        return {name: module for module, names in self.modules.items() for name in names}


# The one list of built-in extensions: each module and the names it registers
# (``registry(kind).register(name)``) when imported. A lookup imports only the module of the
# name it asks for; a listing (``names()``, ``in``) imports none. A new built-in is one module
# plus its line here; tests/architecture/test_registry.py imports every module of these packages
# and checks that each registers exactly the names listed for it.
KINDS: dict[str, Kind] = {
    "model": Kind("privacy model", "ppdp.models", {
        f"{_PRIV}.average_risk": ("average-risk",),
        f"{_PRIV}.beta_likeness": ("beta-likeness",),
        f"{_PRIV}.delta_disclosure": ("delta-disclosure",),
        f"{_PRIV}.delta_presence": ("delta-presence",),
        f"{_PRIV}.k_anonymity": ("k-anonymity",),
        f"{_PRIV}.k_map": ("k-map",),
        f"{_PRIV}.l_diversity": ("distinct-l-diversity", "entropy-l-diversity"),
        f"{_PRIV}.population_uniqueness": ("population-uniqueness",),
        f"{_PRIV}.recursive_cl_diversity": ("recursive-cl-diversity",),
        f"{_PRIV}.sample_uniqueness": ("sample-uniqueness",),
        f"{_PRIV}.t_closeness": ("t-closeness",),
    }),
    "method": Kind("release method", "ppdp.methods", {
        f"{_GEN}.method": ("generalization",),
        "ppdp.engine.methods.heterogeneous.method": ("heterogeneous",),
        "ppdp.engine.methods.microaggregation.method": ("microaggregation",),
    }),
    "optimizer": Kind("optimizer", "ppdp.optimizers", {
        f"{_OPT}.de": ("de",),
        f"{_OPT}.descent": ("descent",),
        f"{_OPT}.flash": ("dfs", "flash"),
        f"{_OPT}.ga": ("ga",),
        f"{_OPT}.haef": ("haef", "haef+oracle", "haef-without-de-adaptation", "haef-without-ga-de-adaptation",
                         "haef-without-priority", "tlef"),
        f"{_OPT}.id_dga": ("id-dga", "id-dga+oracle", "id-dga-without-framework", "id-dga-without-improvement",
                           "id-dga-without-mutation", "id-ga"),
        f"{_OPT}.lattice": ("lattice",),
    }),
    "evaluator": Kind("evaluator backend", "ppdp.evaluators", {
        f"{_GEN}.evaluators.duckdb_backend": ("duckdb",),
        f"{_GEN}.evaluators.numba_backend": ("numba",),
    }),
    "metric": Kind("utility metric", "ppdp.metrics", {
        f"{_GEN}.metrics": ("query_precision", "suppressed", "td", "workload_error"),
    }),
    "risk estimator": Kind("risk estimator", "ppdp.risk_estimators", {
        f"{_RISK}.attributes": ("attributes",),
        f"{_RISK}.bands": ("bands",),
        f"{_RISK}.individual": ("individual",),
        f"{_RISK}.journalist": ("journalist",),
        f"{_RISK}.population": ("population-uniques",),
        f"{_RISK}.prosecutor": ("prosecutor",),
        f"{_RISK}.uniqueness": ("sample-uniques",),
    }),
    "utility measure": Kind("utility measure", "ppdp.utility_measures", {
        f"{_UTIL}.aecs": ("aecs",),
        f"{_UTIL}.ambiguity": ("ambiguity",),
        f"{_UTIL}.discernibility": ("discernibility",),
        f"{_UTIL}.granularity": ("granularity",),
        f"{_UTIL}.intensity": ("intensity",),
        f"{_UTIL}.nu_entropy": ("nu-entropy",),
        f"{_UTIL}.record_squared_error": ("record-squared-error",),
        f"{_UTIL}.squared_error": ("squared-error",),
        f"{_UTIL}.sse_sst": ("sse-sst",),
        f"{_UTIL}.td": ("query-precision", "td"),
        f"{_UTIL}.workload_error": ("workload-error",),
    }),
    # the built-in connectors are entry points of ppdp's own pyproject.toml (one per URL scheme)
    "connector": Kind("database connector", "ppdp.connectors", {}),
}


def public_modules(package: str) -> list[str]:
    """Every public module of ``package``, by dotted name (the built-ins' packages, for the
    test that holds ``KINDS`` to them)."""
    pkg = importlib.import_module(package)
    return [f"{pkg.__name__}.{m.name}" for m in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name)
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
    also the entry points of that group, and with ``builtins`` (name -> module) the built-in
    objects, each imported when its name is first asked for."""

    def __init__(self, kind: str, *, entry_point_group: str | None = None, builtins: Mapping[str, str] | None = None) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        self._group = entry_point_group
        self._builtins: dict[str, str] = dict(builtins or {})
        # A re-entrant lock: the importing thread may look a name up again while a built-in module
        # is imported (and must not import it twice); another thread waits until it is registered.
        self._lock = threading.RLock()
        self._entry_points: dict[str, EntryPoint] | None = None
        self._clashes: dict[str, list[EntryPoint]] = {}

    def _load_builtin(self, name: str) -> T:
        """The built-in ``name``, its module imported now if need be."""
        module = self._builtins[name]
        with self._lock:
            if name not in self._items:
                importlib.import_module(module)
            if name not in self._items:
                raise RuntimeError(f"{module} does not register the {self.kind} {name!r} that ppdp/registry.py KINDS lists for it")
            return self._items[name]

    def load_builtins(self) -> None:
        """Import every built-in module, for a listing that reads what the modules declare."""
        for name in self._builtins:
            self._load_builtin(name)

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
        if name in self._builtins:
            return self._load_builtin(name)
        loaded = self._load(name)
        if loaded is not None:
            return loaded
        raise UnknownNameError(f"Unknown {self.kind} {name!r}.{did_you_mean(name, self.names())}{known_names(self.names())}") from None

    def names(self) -> list[str]:
        """Every name, built-in, registered or offered by an entry point, importing none of them."""
        return sorted(set(self._items) | set(self._builtins) | set(self._discovered()))

    def __contains__(self, name: object) -> bool:
        return name in self._items or name in self._builtins or name in self._discovered()

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
