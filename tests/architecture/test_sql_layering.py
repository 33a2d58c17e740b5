"""Design card: ``sql/`` holds SQL text and dialect handling and imports nothing from ``engine/``
(nor from ``connectors/``, which imports engine). Checked on the source, by import statements."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support import paths as PATHS

SQL = PATHS.PACKAGE / "sql"


def imported_modules(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.append(node.module)
    return out


@pytest.mark.parametrize("path", sorted(SQL.glob("*.py")), ids=lambda p: p.name)
def test_sql_module_imports_nothing_from_engine(path: Path) -> None:
    bad = [m for m in imported_modules(path) if m.startswith(("ppdp.engine", "ppdp.connectors"))]
    assert bad == [], f"{path.name} imports {bad}"


def test_sql_build_errors_are_spec_errors() -> None:
    from ppdp.errors import PpdpError, SpecError
    from ppdp.sql import queries as Q
    from ppdp.sql.errors import SqlBuildError

    with pytest.raises(SpecError, match="exactly one SELECT") as info:
        Q.Source(None, None, "SELECT 1; SELECT 2", "duckdb").parsed_query()
    assert isinstance(info.value, SqlBuildError) and isinstance(info.value, PpdpError)
