"""Count the calls of a module's function in a test, the function still doing its work."""

from __future__ import annotations

from typing import Any

import pytest


def count_calls(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[int]:
    """Replace ``owner.name`` (restored after the test) by a wrapper that calls it; returns the
    list the wrapper appends to, one item per call."""
    calls: list[int] = []
    real = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls
