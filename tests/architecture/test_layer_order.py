"""The layer order of the package, read from its imports.

Each module belongs to one layer; a module imports only from its own layer or from a layer below
it. Top to bottom:

    app (front ends) -> release (pipeline) -> methods -> privacy | risk | utility -> core -> kernels
        -> sql | connectors -> foundation (ppdp.errors, ppdp.registry, ppdp.redact, ppdp.helper_threads, ppdp.process_heap)

Every import counts, function-level ones included (a lazy import is still a dependency);
``if TYPE_CHECKING`` blocks count too, because an annotation that names a higher layer is a
dependency in the reader's head. The package root (``ppdp/__init__.py``) is the public facade
and may name the front ends.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support import paths as PATHS

SRC = PATHS.PACKAGE.parent

# (layer, module prefixes); index 0 is the top. Layers on one line are peers.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("app", ("ppdp.engine.app", "ppdp.dbt", "ppdp.dbt_ppdp")),
    ("release", ("ppdp.engine.release",)),
    ("methods", ("ppdp.engine.methods",)),
    ("privacy | risk | utility", ("ppdp.engine.privacy", "ppdp.engine.risk", "ppdp.engine.utility")),
    ("core", ("ppdp.engine.core", "ppdp.engine.data")),
    ("kernels", ("ppdp.engine.kernels",)),
    ("sql | connectors", ("ppdp.sql", "ppdp.connectors")),
    ("foundation", ("ppdp.errors", "ppdp.registry", "ppdp.redact", "ppdp.helper_threads", "ppdp.process_heap", "ppdp.handoff")),
]
FACADES = {"ppdp", "ppdp.engine"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in (SRC / "ppdp").rglob("*.py") if "__pycache__" not in p.parts}


def layer_of(module: str) -> int | None:
    for rank, (_, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    return None


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports(module: str) -> set[str]:
    """The ppdp modules ``module`` imports anywhere in its body (a package counts as its __init__)."""
    path = MODULES[module]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
        else:
            continue
        for n in names:
            r = _resolve(n)
            if r is not None and r != module and r not in FACADES:
                out.add(r)
                break
    return out


def upward_imports() -> list[str]:
    bad = []
    for module in sorted(MODULES):
        if module in FACADES:
            continue
        rank = layer_of(module)
        for target in sorted(imports(module)):
            target_rank = layer_of(target)
            if rank is None or target_rank is None or target_rank < rank:
                bad.append(f"{module} ({LAYERS[rank][0] if rank is not None else 'no layer'}) imports "
                           f"{target} ({LAYERS[target_rank][0] if target_rank is not None else 'no layer'})")
    return bad


def test_every_module_has_a_layer() -> None:
    assert not [m for m in MODULES if m not in FACADES and layer_of(m) is None]


def test_no_module_imports_a_higher_layer() -> None:
    bad = upward_imports()
    assert not bad, "imports against the layer order:\n" + "\n".join(bad)


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    # the order itself: a method importing the pipeline is upward, the pipeline importing a method is not
    assert layer_of("ppdp.engine.methods.generalization.method") > layer_of("ppdp.engine.release.run")  # type: ignore[operator]
    assert layer_of("ppdp.sql.queries") > layer_of("ppdp.engine.core.spec")  # type: ignore[operator]


def test_the_engine_shows_its_layers() -> None:
    engine = PATHS.PACKAGE / "engine"
    loose = [p.name for p in engine.iterdir() if p.is_file() and p.suffix == ".py"]
    folders = {p.name for p in engine.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert len(loose) <= 6, loose
    assert folders == {"app", "release", "methods", "privacy", "risk", "utility", "core", "kernels", "data"}


def test_the_three_methods_are_laid_out_alike() -> None:
    methods = PATHS.PACKAGE / "engine" / "methods"
    for name in ("generalization", "microaggregation", "heterogeneous"):
        folder = methods / name
        assert (folder / "__init__.py").is_file() and (folder / "method.py").is_file(), name
        assert (PATHS.PACKAGE / "sql" / f"{name}.py").is_file() or name == "generalization", name
