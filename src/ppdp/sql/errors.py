"""The one error ``sql/`` raises: a name, query or dialect SQL cannot be built from.

``sql`` imports nothing from ``engine``; ``engine.errors`` installs, through ``error_class``, a
subclass that is also its ``SpecError``, so ``except SpecError`` and the CLI (one line, exit 2)
catch SQL build errors as they catch any other bad input.
"""

from __future__ import annotations


class SqlBuildError(ValueError):
    """SQL cannot be built from what was given (one line, ending with a hint where there is one)."""


error_class: type[SqlBuildError] = SqlBuildError


def build_error(message: str) -> SqlBuildError:
    """The error to raise for ``message`` (engine's SpecError subclass once engine is loaded)."""
    return error_class(message)
