"""A small name -> object registry with "did you mean" errors (after sqlglot's Dialect registry).

Privacy models, utility metrics, optimizers and connectors each keep one, so a job spec names
them and adding one is one new module that calls ``register``.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from ppdp.engine.errors import UnknownNameError

T = TypeVar("T")


class Registry(Generic[T]):
    """Named objects of one kind, e.g. ``Registry("privacy model")``."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}

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
        try:
            return self._items[name]
        except KeyError:
            close = difflib.get_close_matches(name, self._items, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            known = ", ".join(sorted(self._items))
            raise UnknownNameError(f"Unknown {self.kind} {name!r}.{hint} Known: {known}.") from None

    def names(self) -> list[str]:
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._items))
