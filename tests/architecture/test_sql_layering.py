"""Design card: ``sql/`` holds SQL text and dialect handling and imports nothing from ``engine/``
(nor from ``connectors/``, which imports engine). Checked on the source, by import statements."""

from __future__ import annotations

import ast
import re
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
    from ppdp.sql.dialect import DUCKDB
    from ppdp.sql.errors import SqlBuildError

    with pytest.raises(SpecError, match="exactly one SELECT") as info:
        Q.Source(None, None, "SELECT 1; SELECT 2", DUCKDB).parsed_query()
    assert isinstance(info.value, SqlBuildError) and isinstance(info.value, PpdpError)


# --- the dialect is an object every builder is given, never a string default ------------------

DIALECT_NAMES = frozenset({"duckdb", "postgres", "postgresql", "spark", "snowflake", "bigquery"})
DIALECT_PARAMS = frozenset({"d", "dialect"})


def dialect_defaults(path: Path) -> list[str]:
    """``function(parameter=default)`` of every parameter in ``path`` whose default is a dialect
    name, or that is named like a dialect and has any default."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        args = node.args
        positional = args.posonlyargs + args.args
        pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults, strict=True))
        pairs += [(a, dflt) for a, dflt in zip(args.kwonlyargs, args.kw_defaults, strict=True) if dflt is not None]
        name = getattr(node, "name", "<lambda>")
        for arg, default in pairs:
            named = isinstance(default, ast.Constant) and isinstance(default.value, str) and default.value.lower() in DIALECT_NAMES
            if named or arg.arg in DIALECT_PARAMS:
                out.append(f"{name}({arg.arg}={ast.unparse(default)})")
    return out


@pytest.mark.parametrize("path", sorted(SQL.glob("*.py")), ids=lambda p: p.name)
def test_no_builder_defaults_the_dialect(path: Path) -> None:
    assert dialect_defaults(path) == []


# --- one place names a release's relations ----------------------------------------------------

# A version table is ``<name>__v<N>``: the text "__v" followed by a formatted number appears in
# ReleaseRelation (sql/relations.py) alone. The joint-QID columns of the cross-version check
# (``<qid>__v<i>``) are named by their own helper there too, so the scan below has no exceptions.
VERSION_FORMAT = re.compile(r"""__v\{|__v["']\s*(?:\+|%)|__delta["'{]|["']__delta""")


def test_version_table_names_are_formatted_in_one_place() -> None:
    hits = []
    for path in sorted(PATHS.PACKAGE.rglob("*.py")):
        if path == SQL / "relations.py":
            continue
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if VERSION_FORMAT.search(line):
                hits.append(f"{path.relative_to(PATHS.PACKAGE)}:{no}: {line.strip()}")
    assert hits == []
