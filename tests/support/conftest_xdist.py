"""Which tests share a pytest-xdist worker (``make test`` runs ``pytest -n 2 --dist loadgroup``).

Tests are spread over the workers one by one, except groups that must stay in one process:
every Spark test (a local Spark session is one JVM per process, 20-100 s to start and ~1 GB: two
would double both on a 2-core machine), and the tests of the modules in COSTLY_MODULE_FIXTURES
that use a module-scoped fixture, so that it is built once, not once per worker. Other module
fixtures (a table read, a small Problem) cost less than keeping a large module in one worker
(test_flash's 200 tests, test_bad_input's sweep of CLI calls) would. Without xdist (a plain
``pytest``) the marks are inert.
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

__all__ = ["pytest_collection_modifyitems", "xdist_group_of", "COSTLY_MODULE_FIXTURES"]

SPARK = "spark"
# module path -> its costly module-scoped fixture
COSTLY_MODULE_FIXTURES = {
    "tests/search/test_ray_executor.py": "a one-node Ray cluster and its actor pool (two would share 2 CPUs)",
    "tests/releases/test_report.py": "releases of three methods, with jobs and versions",
    "tests/releases/test_report_browser.py": "test_report's releases (the module's own instance)",
    "tests/releases/test_probe_findings.py": "three `ppdp run` releases, one per method",
    "tests/architecture/test_packaging.py": "`pip wheel` of the repository",
    "tests/adapters/test_dbt_example.py": "`dbt deps` and the example's first `dbt build`",
}


def _uses_spark(item: pytest.Item) -> bool:
    if item.get_closest_marker("spark") is not None or "spark_url" in getattr(item, "fixturenames", ()):
        return True
    # a ``database`` fixture parametrized over dialects asks for spark_url only at set-up
    callspec = getattr(item, "callspec", None)
    params = callspec.params.values() if callspec is not None else ()
    return any(isinstance(value, str) and value == SPARK for value in params)


def _uses_a_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(defs and defs[-1].scope == "module" for defs in info.name2fixturedefs.values())


def xdist_group_of(item: pytest.Item) -> str | None:
    """The group whose tests run in one worker, or None (any worker)."""
    if _uses_spark(item):
        return SPARK
    module = item.nodeid.split("::", 1)[0]
    if module in COSTLY_MODULE_FIXTURES and _uses_a_module_fixture(item):
        return module
    return None


def _with_group_suffix(item: pytest.Item, group: str) -> None:
    """Append ``@group`` to the item's node id, which is what xdist's loadgroup scheduler reads.

    xdist 3.8 does it by setting ``item._nodeid``, which pytest 9.2 no longer reads (the node id
    is ``str(item._id)``): there every test was scheduled alone and the groups were split (two
    Spark JVMs in the first measured run). Done here when xdist has not done it."""
    new = f"{item.nodeid}@{group}"
    if hasattr(item, "_id"):
        from _pytest.nodeid import NodeId

        item._id = NodeId.parse(new)
    else:  # pragma: no cover - pytest before 9.2, where xdist's own hook does this
        item._nodeid = new


# A wrapper: the marks go on before every other implementation (xdist's own hook reads them) and
# the suffix, when xdist could not set it, after all of them.
@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> Generator[None, None, None]:
    groups = {}
    for item in items:
        group = xdist_group_of(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(name=group))
            groups[item] = group
    yield
    if getattr(config.option, "loadgroup", False):  # set in xdist workers under --dist loadgroup
        for item, group in groups.items():
            if "@" not in item.nodeid:
                _with_group_suffix(item, group)
