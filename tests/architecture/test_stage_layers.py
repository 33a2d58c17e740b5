"""Layering of the release pipeline: release -> methods -> the method contract / spec.

The spec imports neither the methods nor the stages; no stage imports a method (the method is
an argument typed by the protocol of methods/base.py); the pipeline's modules form no import
cycle; and only the orchestrator makes a new run context. Checked on the source with ``ast``,
function-level imports included (a lazy import is still a dependency).
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from tests.architecture.test_import_cycles import cycles
from tests.support import paths as PATHS

SRC = PATHS.PACKAGE.parent  # src/: module names are paths below it
ENGINE = PATHS.PACKAGE / "engine"
# the modules of the release pipeline; other packages' own cycles are not this test's concern
PIPELINE = ("ppdp.engine.release.run", "ppdp.engine.app.rebuild", "ppdp.engine.core.spec", "ppdp.engine.release.columns",
            "ppdp.engine.methods", "ppdp.engine.release.stages")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in SRC.rglob("*.py") if "__pycache__" not in p.parts}


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports(module: str) -> set[str]:
    """The ppdp modules ``module`` imports anywhere in its body (``TYPE_CHECKING`` blocks too)."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            names = [f"{base}.{a.name}" for a in node.names] + [base]
        else:
            continue
        out |= {r for n in names if (r := _resolve(n)) is not None and r != module}
    return out


def _in(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def test_the_spec_imports_neither_methods_nor_stages() -> None:
    bad = {m for m in imports("ppdp.engine.core.spec") if _in(m, "ppdp.engine.methods") or _in(m, "ppdp.engine.release.stages")}
    assert not bad, f"engine/core/spec.py imports {sorted(bad)}"


METHOD_CONTRACT = ("ppdp.engine.methods.base", "ppdp.engine.methods.context", "ppdp.engine.methods.results")


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _in(m, "ppdp.engine.release.stages")))
def test_no_stage_imports_a_method(module: str) -> None:
    """A stage may use the contract every method implements (methods/base.py, context.py,
    results.py), never one method's own modules."""
    bad = {m for m in imports(module) if _in(m, "ppdp.engine.methods") and m not in METHOD_CONTRACT}
    assert not bad, f"{module} imports {sorted(bad)}: take the method as an argument (methods/base.py)"


def test_the_method_modules_do_not_import_their_package() -> None:
    """methods/__init__ registers them; a method importing the package would close a cycle."""
    for module in (m for m in MODULES if m.startswith("ppdp.engine.methods.")):
        assert "ppdp.engine.methods" not in imports(module), module


def test_the_pipeline_modules_form_no_import_cycle() -> None:
    graph = {m: imports(m) for m in MODULES}  # TYPE_CHECKING imports count here
    bad = [c for c in cycles(graph) if any(_in(m, p) for m in c for p in PIPELINE)]
    assert not bad, f"import cycles through the release pipeline: {bad}"


def test_the_run_context_is_frozen_and_only_the_orchestrator_replaces_it() -> None:
    from ppdp.engine.methods.context import RunContext

    assert RunContext.__dataclass_params__.frozen  # type: ignore[attr-defined]
    ctx = RunContext(None, None, "r", "id", None)  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.version = 2  # type: ignore[misc]
    offenders = []
    for path in sorted(ENGINE.rglob("*.py")):
        if path == ENGINE / "release" / "run.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "replace"
                    and node.args and getattr(node.args[0], "id", None) == "ctx"):
                offenders.append(f"{path.relative_to(ENGINE)}:{node.lineno}")
    assert not offenders, f"a new run context is made by engine/release/run.py only: {offenders}"
