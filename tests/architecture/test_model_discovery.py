"""A new privacy model is one new module plus its line in ppdp/registry.py ``KINDS``: the
registry imports a model's module only when its name is asked for, so a module that registers a
model without its line there is caught here, before a spec naming it would be refused."""

from __future__ import annotations

from pathlib import Path

import ppdp.engine.privacy as models_package
from ppdp.engine.privacy import MODELS
from ppdp.registry import KINDS


def test_every_module_that_registers_a_model_is_listed_in_kinds():
    folder = Path(models_package.__file__).parent
    registering = {f"{models_package.__name__}.{p.stem}" for p in folder.glob("*.py") if "@MODELS.register(" in p.read_text()}
    assert len(registering) >= 10 and registering == set(KINDS["model"].modules)


def test_each_listed_model_comes_from_its_listed_module():
    listed = KINDS["model"].builtins
    assert set(listed) <= set(MODELS.names())
    for name, module in listed.items():
        assert MODELS.get(name).__module__ == module
