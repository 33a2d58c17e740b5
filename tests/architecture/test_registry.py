"""ppdp/registry.py: built-ins imported on the first lookup, entry points discovered through
``importlib.metadata``, a name offered by two distributions refused, one "did you mean"."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ppdp.errors import UnknownNameError, did_you_mean
from ppdp.registry import KINDS, Registry, registry


def _distribution(site: Path, name: str, entry_points: str) -> None:
    info = site / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)


def test_built_ins_are_imported_on_the_first_lookup_only(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "ppdp_probe_builtin.py").write_text(
        "from ppdp_probe_registry import REG\nREG.register('alpha')(1)\n")
    (tmp_path / "ppdp_probe_registry.py").write_text(
        "from ppdp.registry import Registry\nREG = Registry('probe', builtins=('ppdp_probe_builtin',))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from ppdp_probe_registry import REG  # type: ignore[import-not-found]  # (written just above)

    try:
        assert "ppdp_probe_builtin" not in sys.modules
        assert REG.get("alpha") == 1 and "ppdp_probe_builtin" in sys.modules
        with pytest.raises(UnknownNameError, match=r"^Unknown probe 'alpah'\. Did you mean 'alpha'\? Known: alpha\.$"):
            REG.get("alpah")
    finally:
        sys.modules.pop("ppdp_probe_builtin", None)
        sys.modules.pop("ppdp_probe_registry", None)


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


def test_a_package_of_built_ins_is_every_public_module_in_it(tmp_path: Path, monkeypatch) -> None:
    """``package.*`` (the risk estimators): a new built-in is one new module, no list to edit."""
    pkg = tmp_path / "ppdp_probe_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from ppdp.registry import Registry\nREG = Registry('probe', builtins=('ppdp_probe_pkg.*',))\n")
    (pkg / "one.py").write_text("from ppdp_probe_pkg import REG\nREG.register('one')(1)\n")
    (pkg / "two.py").write_text("from ppdp_probe_pkg import REG\nREG.register('two')(2)\n")
    (pkg / "_private.py").write_text("raise RuntimeError('a private module is not a built-in')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from ppdp_probe_pkg import REG  # type: ignore[import-not-found]  # (written just above)

    try:
        assert REG.names() == ["one", "two"] and REG.get("two") == 2
    finally:
        for name in ("ppdp_probe_pkg", "ppdp_probe_pkg.one", "ppdp_probe_pkg.two"):
            sys.modules.pop(name, None)


def test_the_risk_estimators_are_the_modules_of_engine_risk() -> None:
    from ppdp.engine.risk.base import estimators
    from ppdp.registry import _modules

    modules = {type(e).__module__ for e in estimators()}
    assert modules == set(_modules("ppdp.engine.risk.*")) - {"ppdp.engine.risk.base"}
