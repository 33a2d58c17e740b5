"""Layering of the code base (design card): SQL text lives in ``sql/``, and ``sql/`` does not
depend on ``engine/``.

Both checks read the source with ``ast`` rather than grepping, so docstrings that merely
mention SQL words (a docstring describing "the SELECT of the candidate rows") are allowed,
while every other string constant and every literal part of an f-string is checked.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.support import paths as PATHS

ROOT = PATHS.PACKAGE  # src/ppdp: engine/, sql/, connectors/

# A string that starts like a SQL statement (upper-case keyword, as ppdp writes SQL), or that
# holds a FROM/INTO clause naming a relation: a quoted identifier, a name, or an f-string hole
# (the hole itself is not a literal part, so "... FROM " at the end of a part counts too).
STATEMENT_START = re.compile(r"^\s*(SELECT|INSERT|CREATE|DROP|GRANT|REVOKE|DELETE|UPDATE|WITH|ALTER)\b")
CLAUSE = re.compile(r" (FROM|INTO) (\"|[A-Za-z_(]|$)")


def _python_files(folder: str) -> list[Path]:
    return sorted(p for p in (ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts)


def _docstring_nodes(tree: ast.AST) -> set[int]:
    """ids of the Constant nodes that are docstrings (first statement of a module, class or def)."""
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                ids.add(id(first.value))
    return ids


def looks_like_sql(text: str) -> bool:
    """Whether a string literal (or a literal part of an f-string) is SQL statement text."""
    return bool(STATEMENT_START.search(text) or CLAUSE.search(text))


def sql_literals(path: Path) -> list[tuple[int, str]]:
    """(line, text) of the non-docstring string literals of ``path`` that look like SQL."""
    tree = ast.parse(path.read_text(), filename=str(path))
    docstrings = _docstring_nodes(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if looks_like_sql(node.value):
                found.append((node.lineno, node.value))
    return sorted(found)


def test_the_sql_pattern_tells_statements_from_prose() -> None:
    # Statements and fragments as the engine used to write them are caught...
    assert looks_like_sql("SELECT * FROM read_parquet('x')")
    assert looks_like_sql('WITH "gen" AS (')
    assert looks_like_sql("  CREATE TABLE adult AS SELECT 1")
    assert looks_like_sql("DELETE FROM ")  # the literal part before an f-string hole
    assert looks_like_sql('x = 1 FROM "pop" AS p')
    assert looks_like_sql("name, spec INTO t")
    # ...while messages and prose are not.
    assert not looks_like_sql("Selecting the best node from the lattice")
    assert not looks_like_sql("select a release")
    assert not looks_like_sql("the rows came from 3 sources")


def test_a_docstring_is_not_sql_but_a_constant_is(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text('"""SELECT in a docstring is prose."""\n\n'
                   'def f():\n    """CREATE OR REPLACE the view."""\n    return f"DROP VIEW {1}"\n\n'
                   'Q = "SELECT 1"\n')
    assert [line for line, _ in sql_literals(src)] == [5, 7]


def test_no_sql_text_under_engine() -> None:
    """Acceptance point of the SQL layer: statements are built in sql/, never in engine/."""
    offenders = [f"{path.relative_to(ROOT)}:{line}: {text.strip()[:70]!r}"
                 for path in _python_files("engine") for line, text in sql_literals(path)]
    assert not offenders, "SQL text under engine/ (move it to a builder in sql/):\n" + "\n".join(offenders)


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.lineno, node.module))
    return out


def test_sql_does_not_import_engine() -> None:
    offenders = [f"{path.relative_to(ROOT)}:{line}: imports {name}"
                 for path in _python_files("sql") for line, name in _imported_modules(path)
                 if name == "ppdp.engine" or name.startswith("ppdp.engine.")]
    assert not offenders, "sql/ must not depend on engine/:\n" + "\n".join(offenders)
