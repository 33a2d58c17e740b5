"""The stale-cache guard of the Numba kernel modules (engine/kernels/cache.py).

Numba's on-disk cache checks a cached function against its own file only, so a kernel that
compiles in a jitted function of another module keeps the old code when that module changes.
Checked on a throw-away package in a temporary directory (never the real one): a guarded
module recompiles when a dependency's source changes, also through a dependency of a
dependency, and reuses its cache otherwise; the guard removes only its own module's files and
does nothing on a read-only install. And every kernel module of ppdp is guarded, declaring the
kernel modules it imports.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ppdp.engine.kernels import cache as kernels_cache
from ppdp.engine.kernels.cache import guard
from tests.support import paths as PATHS

DEP = '''
from numba import njit
from ppdp.engine.kernels.cache import guard
DROPPED = guard(__file__)

@njit(cache=True)
def f():
    return {value}
'''
MID = '''
from numba import njit
import dep
from ppdp.engine.kernels.cache import guard
DROPPED = guard(__file__, depends_on=[dep])

@njit(cache=True)
def g():
    return dep.f() * 10
'''
TOP = '''
from numba import njit
import mid
from ppdp.engine.kernels.cache import guard
DROPPED = guard(__file__, depends_on=[mid])  # dep comes through mid's own guard

@njit(cache=True)
def h():
    return mid.g() + 1
'''
RUN = '''
import json, dep, mid, top
value = [dep.f(), mid.g(), top.h()]
print(json.dumps({"value": value, "dropped": [dep.DROPPED, mid.DROPPED, top.DROPPED],
                  "hits": [sum(fn.stats.cache_hits.values()) for fn in (dep.f, mid.g, top.h)]}))
'''


def _run(where: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CACHE")}
    env["PYTHONPATH"] = os.pathsep.join([str(where), str(PATHS.PACKAGE.parent)])
    out = subprocess.run([sys.executable, "-c", RUN], cwd=where, env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_changed_dependency_drops_the_stale_cache(tmp_path: Path) -> None:
    (tmp_path / "dep.py").write_text(DEP.format(value=1))
    (tmp_path / "mid.py").write_text(MID)
    (tmp_path / "top.py").write_text(TOP)
    first = _run(tmp_path)
    assert first["value"] == [1, 10, 11] and first["hits"] == [0, 0, 0]
    cache = tmp_path / "__pycache__"
    assert sorted(p.name for p in cache.glob("*.deps-sha256")) == ["dep.deps-sha256", "mid.deps-sha256",
                                                                   "top.deps-sha256"]
    assert list(cache.glob("mid.g-*.nbi")) and list(cache.glob("top.h-*.nbi"))

    again = _run(tmp_path)  # nothing changed: every kernel from the cache
    assert again == {"value": [1, 10, 11], "dropped": [False, False, False], "hits": [1, 1, 1]}

    # dep's own cache is invalidated by Numba (its source hash), mid's and top's only by the
    # guard: without it they would still return 10 and 11 from the copy of f compiled into them.
    (tmp_path / "dep.py").write_text(DEP.format(value=2))
    changed = _run(tmp_path)
    assert changed["value"] == [2, 20, 21]
    assert changed["dropped"] == [True, True, True] and changed["hits"] == [0, 0, 0]

    assert _run(tmp_path) == {"value": [2, 20, 21], "dropped": [False, False, False], "hits": [1, 1, 1]}


def test_the_guard_removes_only_its_own_modules_files(tmp_path: Path) -> None:
    mod = tmp_path / "kern.py"
    mod.write_text("X = 1\n")
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    mine = [cache / "kern.f-3.py311.nbi", cache / "kern.f-3.py311.0.nbc"]
    others = [cache / "kern2.f-3.py311.nbi", cache / "kern_x.f-3.py311.nbc", cache / "other.kern.f-1.py311.nbi"]
    for p in mine + others:
        p.write_bytes(b"")
    assert guard(mod) is True  # no stamp yet: whatever is there is of unknown origin
    assert not any(p.exists() for p in mine) and all(p.exists() for p in others)
    assert (cache / "kern.deps-sha256").is_file()
    assert kernels_cache.covered_sources(mod) == (str(mod.resolve()),)


def test_a_read_only_install_is_left_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mod = tmp_path / "kern.py"
    mod.write_text("X = 1\n")
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    monkeypatch.setattr(kernels_cache, "cache_dir", lambda _: blocker / "__pycache__")
    assert guard(mod) is False  # cannot write the stamp: no error, Numba compiles in memory
    monkeypatch.undo()
    assert guard(mod, depends_on=[tmp_path / "missing.py"]) is False  # unreadable source: same


CACHED_KERNEL = re.compile(r"^@[\w.]*njit\([^)]*\bcache=True", re.MULTILINE)


def _cache_true_modules() -> list[Path]:
    return sorted(p for p in PATHS.PACKAGE.rglob("*.py")
                  if "__pycache__" not in p.parts and CACHED_KERNEL.search(p.read_text()))


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(PATHS.PACKAGE.parent).with_suffix("").parts)


def _imported_files(path: Path) -> set[str]:
    """Files of the ppdp modules ``path`` imports (``from a.b import c``: a.b.c when it is a module)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names |= {f"{node.module}.{a.name}" for a in node.names}
    files = set()
    for name in names:
        if name.split(".")[0] != "ppdp":
            continue
        try:
            spec = importlib.util.find_spec(name)
        except ModuleNotFoundError:  # an attribute of a module, not a submodule
            continue
        if spec is not None and spec.origin:
            files.add(os.path.realpath(spec.origin))
    return files


def test_every_kernel_module_is_guarded_with_its_kernel_imports() -> None:
    modules = _cache_true_modules()
    assert len(modules) >= 9, [m.name for m in modules]  # evaluator, optimizers, hetero, microaggregation
    kernel_files = {os.path.realpath(p) for p in modules}
    for path in modules:
        importlib.import_module(_module_name(path))
        covered = set(kernels_cache.covered_sources(path))
        assert covered, f"{path.relative_to(PATHS.PACKAGE)} has cache=True kernels but does not call guard"
        missing = (_imported_files(path) & kernel_files) - covered
        assert not missing, f"{path.relative_to(PATHS.PACKAGE)}: guard(depends_on=...) lacks {sorted(missing)}"
