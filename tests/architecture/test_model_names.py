"""No model name outside the model modules.

Code that needs a property of a privacy model asks the model (models/base.py) instead of
comparing its name, so a new model is one new module. This reads every string constant of the
installed package (docstrings excepted; prose in messages is allowed) and fails on one that is
a registered model's name, or quotes it, outside ``ppdp/engine/privacy/``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from ppdp.engine.privacy import MODELS
from tests.support import paths as PATHS

MODEL_PACKAGE = PATHS.PACKAGE / "engine" / "privacy"
# Not a privacy model: the DRASL paper's t-closeness microaggregation baseline, registered under
# its own name in another registry (microaggregation algorithms).
OTHER_REGISTRIES = {PATHS.PACKAGE / "engine" / "methods" / "microaggregation" / "t_closeness.py"}


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def name_strings(path: Path, names: list[str]) -> list[str]:
    """(line: text) of string constants in ``path`` that are, or quote, one of ``names``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _docstrings(tree)
    quoted = re.compile("|".join(f"{q}{re.escape(n)}{q}" for n in names for q in "\"'"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            if node.value in names or quoted.search(node.value):
                found.append(f"{path.name}:{node.lineno}: {node.value[:60]!r}")
    return found


def test_the_check_finds_a_name_comparison(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text('"""k-anonymity in a docstring is prose."""\n'
                   'def f(m):\n    return m.name == "k-anonymity"\n'
                   'MSG = "name = \\"t-closeness\\""\nOK = "publishes heterogeneous k-anonymity"\n')
    assert sorted(s.split(":")[1] for s in name_strings(bad, MODELS.names())) == ["3", "4"]


def test_no_model_name_outside_the_model_modules() -> None:
    names = MODELS.names()
    assert len(names) >= 4
    offenders = [hit for path in sorted(PATHS.PACKAGE.rglob("*.py"))
                 if MODEL_PACKAGE not in path.parents and path not in OTHER_REGISTRIES
                 for hit in name_strings(path, names)]
    assert not offenders, "model names outside engine/privacy/ (ask the model instead):\n" + "\n".join(offenders)
