"""A small name -> object registry with "did you mean" errors (after sqlglot's Dialect registry).

Privacy models, utility metrics, optimizers and connectors each keep one, so a job spec names
them and adding one is one new module that calls ``register``. A registry may also discover
objects through a group of package entry points (connectors: ``ppdp.connectors``), loaded on
first use, so that another distribution can add one and an optional dependency is imported only
when its object is asked for.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from importlib.metadata import EntryPoint, entry_points
from typing import Generic, TypeVar

from ppdp.errors import PpdpError, UnknownNameError, known_names

T = TypeVar("T")


class UnavailableError(PpdpError):
    """A registered name whose module needs an optional dependency that is not installed."""


class Registry(Generic[T]):
    """Named objects of one kind, e.g. ``Registry("privacy model")``; with ``entry_point_group``
    also the entry points of that group, loaded when first asked for."""

    def __init__(self, kind: str, *, entry_point_group: str | None = None) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        self._group = entry_point_group
        self._entry_points: dict[str, EntryPoint] | None = None

    def _discovered(self) -> dict[str, EntryPoint]:
        if self._entry_points is None:
            self._entry_points = {} if self._group is None else {ep.name: ep for ep in entry_points(group=self._group)}
        return self._entry_points

    def _load(self, name: str) -> T | None:
        ep = self._discovered().get(name)
        if ep is None:
            return None
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
        loaded = self._load(name)
        if loaded is not None:
            return loaded
        close = difflib.get_close_matches(name, self.names(), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise UnknownNameError(f"Unknown {self.kind} {name!r}.{hint}{known_names(self.names())}") from None

    def names(self) -> list[str]:
        return sorted(set(self._items) | set(self._discovered()))

    def __contains__(self, name: object) -> bool:
        return name in self._items or name in self._discovered()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
