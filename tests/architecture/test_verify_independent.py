"""verify is the independent check of the history stage: it derives the history classes across
versions with SQL of its own (sql/verify.py) and imports nothing of the history stage or of its
SQL (sql/history.py), so a mistake there cannot hide itself here. sql/verify.py takes one name
from sql/history.py: ``sa_key``, the key under which Q is stored (the check must join on it)."""

from __future__ import annotations

import ast

from tests.architecture.test_stage_layers import MODULES, imports

VERIFY = "ppdp.engine.release.stages.verify"
HISTORY = ("ppdp.engine.release.stages.history", "ppdp.sql.history")


def test_the_verify_stage_imports_nothing_of_the_history_stage() -> None:
    assert not imports(VERIFY) & set(HISTORY), sorted(imports(VERIFY) & set(HISTORY))


def test_the_verify_sql_takes_only_the_key_of_q_from_the_history_sql() -> None:
    names = set()
    for node in ast.walk(ast.parse(MODULES["ppdp.sql.verify"].read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module == "ppdp.sql.history":
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module == "ppdp.sql" and any(a.name == "history" for a in node.names):
            names.add("*")
        elif isinstance(node, ast.Import) and any(a.name == "ppdp.sql.history" for a in node.names):
            names.add("*")
    assert names <= {"sa_key"}, sorted(names)
