"""ppdp/registry.py: a built-in's module imported when its name is first looked up (a listing
imports none), ``KINDS`` held to what the built-in modules register, entry points discovered
through ``importlib.metadata``, a name offered by two distributions refused, one "did you mean"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ppdp.errors import UnknownNameError, did_you_mean
from ppdp.registry import KINDS, Registry, public_modules, registry


def _distribution(site: Path, name: str, entry_points: str) -> None:
    info = site / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)


def test_built_ins_are_imported_on_the_first_lookup_only(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "ppdp_probe_builtin.py").write_text(
        "from ppdp_probe_registry import REG\nREG.register('alpha')(1)\n")
    (tmp_path / "ppdp_probe_other.py").write_text("raise RuntimeError('only the module of the name asked for is imported')\n")
    (tmp_path / "ppdp_probe_registry.py").write_text(
        "from ppdp.registry import Registry\n"
        "REG = Registry('probe', builtins={'alpha': 'ppdp_probe_builtin', 'beta': 'ppdp_probe_other'})\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from ppdp_probe_registry import REG  # type: ignore[import-not-found]  # (written just above)

    try:
        assert REG.names() == ["alpha", "beta"] and "beta" in REG and list(REG) == ["alpha", "beta"]
        assert "ppdp_probe_builtin" not in sys.modules and "ppdp_probe_other" not in sys.modules
        assert REG.get("alpha") == 1 and "ppdp_probe_builtin" in sys.modules and "ppdp_probe_other" not in sys.modules
        with pytest.raises(UnknownNameError, match=r"^Unknown probe 'alpah'\. Did you mean 'alpha'\? Known: alpha, beta\.$"):
            REG.get("alpah")
        assert "ppdp_probe_other" not in sys.modules
    finally:
        sys.modules.pop("ppdp_probe_builtin", None)
        sys.modules.pop("ppdp_probe_registry", None)


def test_a_module_that_does_not_register_its_listed_name_is_an_error(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "ppdp_probe_silent.py").write_text("from ppdp_probe_registry2 import REG\nREG.register('other')(1)\n")
    (tmp_path / "ppdp_probe_registry2.py").write_text(
        "from ppdp.registry import Registry\nREG = Registry('probe', builtins={'alpha': 'ppdp_probe_silent'})\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from ppdp_probe_registry2 import REG  # type: ignore[import-not-found]  # (written just above)

    try:
        with pytest.raises(RuntimeError, match=r"ppdp_probe_silent does not register the probe 'alpha'"):
            REG.get("alpha")
    finally:
        sys.modules.pop("ppdp_probe_silent", None)
        sys.modules.pop("ppdp_probe_registry2", None)


def test_a_name_two_distributions_offer_is_refused(tmp_path: Path, monkeypatch) -> None:
    _distribution(tmp_path, "ppdp_probe_one", "[ppdp.probes]\nsame = json:dumps\nonly = json:loads\n")
    _distribution(tmp_path, "ppdp_probe_two", "[ppdp.probes]\nsame = json:loads\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg: Registry[object] = Registry("probe", entry_point_group="ppdp.probes")
    assert reg.names() == ["only", "same"]
    with pytest.raises(UnknownNameError, match=r"The probe 'same' is offered by several packages: json:\w+ \(ppdp_probe_\w+\), "
                                               r"json:\w+ \(ppdp_probe_\w+\)\. Hint: uninstall all but one of them\."):
        reg.get("same")
    import json

    assert reg.get("only") is json.loads


def test_every_kind_has_its_group_and_one_registry() -> None:
    assert {k.group for k in KINDS.values()} == {"ppdp.models", "ppdp.methods", "ppdp.optimizers", "ppdp.evaluators",
                                                 "ppdp.metrics", "ppdp.risk_estimators", "ppdp.utility_measures", "ppdp.connectors"}
    assert registry("optimizer") is registry("optimizer")
    assert did_you_mean("numbaa", ["duckdb", "numba"]) == " Did you mean 'numba'?" and did_you_mean("zzz", ["numba"]) == ""


# The packages whose public modules are the built-ins of a kind (with the modules there that
# register nothing: interfaces, helpers, subpackages).
_PACKAGES = {
    "model": ("ppdp.engine.privacy", {"base", "distributions", "oracle"}),
    "optimizer": ("ppdp.engine.methods.generalization.optimizers",
                  {"bounds", "evolutionary", "lattice_nodes", "operators", "ray_executor", "remote"}),
    "evaluator": ("ppdp.engine.methods.generalization.evaluators", {"base", "class_memo"}),
    "risk estimator": ("ppdp.engine.risk", {"base"}),
    "utility measure": ("ppdp.engine.utility.measures", set()),
}

# In a fresh interpreter: each module of KINDS imported in turn, the names its kind's registry
# holds right after; then every public module of the packages above, and every name registered.
_PROBE = """
import importlib, json, sys
from ppdp.registry import KINDS, registry
kinds, packages = json.loads(sys.argv[1]), json.loads(sys.argv[2])
per_module = {}
for kind in kinds:
    for module in KINDS[kind].modules:
        importlib.import_module(module)
        per_module[module] = sorted(registry(kind)._items)
for module in packages:
    importlib.import_module(module)
print(json.dumps({"per_module": per_module, "all": {k: sorted(registry(k)._items) for k in kinds}}))
"""


def test_kinds_lists_every_built_in_by_the_module_that_registers_it() -> None:
    """The registry imports a built-in's module only when its name is asked for, so ``KINDS``
    must name, for each module, exactly what it registers: every public module of the
    built-ins' packages imported, the registered names are the listed ones, and a listed module
    imported alone (before the others) registers its listed names."""
    kinds = [k for k in KINDS if KINDS[k].modules]
    packages = [m for kind, (pkg, helpers) in _PACKAGES.items() for m in public_modules(pkg)
                if m.rsplit(".", 1)[1] not in helpers]
    packages += [m for k in kinds for m in KINDS[k].modules]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(kinds), json.dumps(packages)],
                         capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout)
    for kind in kinds:
        listed = KINDS[kind].builtins
        assert got["all"][kind] == sorted(listed), f"{kind}: registered names differ from ppdp/registry.py KINDS"
        for module, names in KINDS[kind].modules.items():
            assert set(names) <= set(got["all"][kind])
            assert all(listed[n] == module for n in names)
    for module, registered in got["per_module"].items():
        kind = next(k for k in kinds if module in KINDS[k].modules)
        missing = set(KINDS[kind].modules[module]) - set(registered)
        assert not missing, f"importing {module} does not register {sorted(missing)}"
    for kind, (pkg, helpers) in _PACKAGES.items():
        modules = {m for m in public_modules(pkg) if m.rsplit(".", 1)[1] not in helpers}
        assert modules <= set(KINDS[kind].modules), f"{kind}: {sorted(modules - set(KINDS[kind].modules))} not in KINDS"


def test_a_run_imports_only_the_built_ins_it_names() -> None:
    """Reading a spec and resolving its names imports the named optimizer's module, not the others."""
    probe = ("import sys\nfrom ppdp.registry import check_name, registry\n"
             "check_name('optimizer', 'flash'); check_name('model', 'k-anonymity')\n"
             "registry('optimizer').get('flash'); registry('model').get('k-anonymity')\n"
             "print(sorted(m for m in sys.modules if m.startswith('ppdp.engine.methods.generalization.optimizers.')"
             " or m.startswith('ppdp.engine.privacy.')))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True)
    loaded = set(eval(out.stdout))
    assert "ppdp.engine.methods.generalization.optimizers.flash" in loaded and "ppdp.engine.privacy.k_anonymity" in loaded
    assert not loaded & {"ppdp.engine.methods.generalization.optimizers.haef", "ppdp.engine.methods.generalization.optimizers.id_dga",
                         "ppdp.engine.privacy.t_closeness", "ppdp.engine.privacy.delta_presence"}


def test_the_risk_estimators_are_the_modules_of_engine_risk() -> None:
    from ppdp.engine.risk.base import estimators

    modules = {type(e).__module__ for e in estimators()}
    assert modules == set(public_modules("ppdp.engine.risk")) - {"ppdp.engine.risk.base"}
