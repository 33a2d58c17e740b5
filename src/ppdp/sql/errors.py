"""The one error ``sql/`` raises: a name, query or dialect SQL cannot be built from.

It is a ``SpecError`` (the foundation's exception tree, ``ppdp.errors``), so ``except SpecError``
and the CLI (one line, exit 2) catch SQL build errors as they catch any other bad input.
"""

from __future__ import annotations

from ppdp.errors import SpecError


class SqlBuildError(SpecError, ValueError):
    """SQL cannot be built from what was given (one line, ending with a hint where there is one)."""


def build_error(message: str) -> SqlBuildError:
    """The error to raise for ``message``."""
    return SqlBuildError(message)
