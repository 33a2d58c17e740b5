"""A new privacy model is one new module: the models package imports every module it holds, so a
module that registers a model is found without any list to edit."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import ppdp.engine.privacy as models_package
from ppdp.engine.privacy import MODELS

# A complete model module as a user would write it (k-anonymity under another name is enough:
# the test is about discovery, not about the model).
NEW_MODULE = '''
from dataclasses import dataclass
from typing import ClassVar

from ppdp.engine.privacy.base import MODELS
from ppdp.engine.privacy.k_anonymity import KAnonymity


@MODELS.register("discovery-probe")
@dataclass(frozen=True)
class DiscoveryProbe(KAnonymity):
    name: ClassVar[str] = "discovery-probe"
'''


@pytest.fixture
def extra_model_folder(tmp_path: Path, monkeypatch):
    (tmp_path / "discovery_probe.py").write_text(NEW_MODULE)
    monkeypatch.setattr(models_package, "__path__", [*models_package.__path__, str(tmp_path)])
    yield
    MODELS._items.pop("discovery-probe", None)
    sys.modules.pop("ppdp.engine.privacy.discovery_probe", None)


def test_a_module_dropped_into_the_models_package_registers_its_model(extra_model_folder):
    assert "discovery-probe" not in MODELS.names()
    models_package._import_every_model_module()
    model = MODELS.get("discovery-probe").from_params({"k": 3})
    assert model.name == "discovery-probe" and model.k == 3


def test_every_model_module_of_the_package_is_registered():
    folder = Path(models_package.__file__).parent
    registering = {p.stem for p in folder.glob("*.py") if "@MODELS.register(" in p.read_text()}
    registered_from = {MODELS.get(name).__module__.rsplit(".", 1)[1] for name in MODELS.names()}
    assert len(registering) >= 10 and registering <= registered_from
