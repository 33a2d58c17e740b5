"""Which tests share a pytest-xdist worker (``make test`` runs ``pytest -n 2 --dist loadgroup``).

Tests are spread over the workers one by one, except groups that must stay in one process:
every Spark test (a local Spark session is one JVM per process, ~20 s to start and ~1 GB: two
would double both on a 2-core machine) and every Ray test (the module starts a one-node Ray
cluster; two clusters would fight for the same 2 CPUs). Modules whose module-scoped fixture is a
costly release are kept together too, so that the fixture is built once, not once per worker.
Without xdist (a plain ``pytest``) the marks are inert.
"""

from __future__ import annotations

import pytest

__all__ = ["pytest_collection_modifyitems", "SERIAL_MODULES", "xdist_group_of"]

# test module path (from the repository root) -> group; modules whose tests share a costly
# module-scoped fixture (a release made by ``ppdp run`` subprocesses, a Ray cluster)
SERIAL_MODULES = {
    "tests/search/test_ray_executor.py": "ray",
}


def _uses_spark(item: pytest.Item) -> bool:
    if item.get_closest_marker("spark") is not None or "spark_url" in getattr(item, "fixturenames", ()):
        return True
    # a ``database`` fixture parametrized over dialects asks for spark_url only at set-up
    callspec = getattr(item, "callspec", None)
    params = callspec.params.values() if callspec is not None else ()
    return any(isinstance(value, str) and value == "spark" for value in params)


def xdist_group_of(item: pytest.Item) -> str | None:
    """The group whose tests run in one worker, or None (any worker)."""
    if _uses_spark(item):
        return "spark"
    return SERIAL_MODULES.get(item.nodeid.split("::", 1)[0])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        group = xdist_group_of(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(name=group))
