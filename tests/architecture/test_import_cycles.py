"""No import cycles in the package.

Every import statement of ``src/ppdp`` counts (function-level imports too: a lazy import that
only hides a cycle is still one; ``if TYPE_CHECKING`` blocks do not). A package's ``__init__``
being run before its submodules is how Python works, not an edge.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from tests.support import paths as PATHS


def module_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module -> modules of the package it imports."""
    mods: dict[str, Path] = {}
    for path in root.rglob("*.py"):
        parts = [package, *path.with_suffix("").relative_to(root).parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = path

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
                node.body = []
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = mod.split(".")
                    base = base[: len(base) - node.level + (1 if path.name == "__init__.py" else 0)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                targets = [f"{source}.{a.name}" for a in node.names] + [source]
            for target in targets:
                found = resolve(target)
                if found and found != mod:
                    graph[mod].add(found)
                    break
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for v in graph:
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return out


def test_the_check_finds_a_cycle(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("from pkg import b\n")
    (tmp_path / "b.py").write_text("def f():\n    from pkg.a import x\n")
    (tmp_path / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\n")
    assert cycles(module_graph(tmp_path, "pkg")) == [["pkg.a", "pkg.b"]]


def test_no_import_cycles_in_the_package() -> None:
    found = cycles(module_graph(PATHS.PACKAGE, "ppdp"))
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)
