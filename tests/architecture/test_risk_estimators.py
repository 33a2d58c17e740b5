"""A risk estimator is one module (engine/risk/base.py): it declares its JSON keys and how they
render, and nothing else in the package names those keys (the run record, the report, the run
summary, ``ppdp risk``'s text and the JSON schema read them from the estimators)."""

from __future__ import annotations

import ast
import json
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from ppdp.connectors import connect
from ppdp.engine.app.outcome import Measured
from ppdp.engine.risk import assess
from ppdp.engine.risk.base import RiskEstimator, estimators, json_schema_properties
from tests.support import paths as PATHS

SCHEMAS = PATHS.PACKAGE / "engine" / "data" / "schemas"


def _module_file(e: RiskEstimator) -> Path:
    return Path(sys.modules[type(e).__module__].__file__ or "").resolve()


def key_strings(path: Path, keys: set[str]) -> list[str]:
    """(file:line: key) of string constants in ``path`` that are one of ``keys``."""
    return [f"{path.name}:{n.lineno}: {n.value}" for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in keys]


def test_each_built_in_estimator_is_one_module_with_distinct_keys() -> None:
    found = estimators()
    assert len(found) >= 7
    modules = [_module_file(e) for e in found]
    assert len(set(modules)) == len(modules), "one estimator per module"
    keys = [k for e in found for k in e.keys]
    assert len(set(keys)) == len(keys), keys


@pytest.mark.parametrize("estimator", estimators(), ids=lambda e: e.name)
def test_no_other_module_or_schema_names_an_estimators_keys(estimator: RiskEstimator) -> None:
    own = _module_file(estimator)
    keys = set(estimator.keys)
    offenders = [hit for path in sorted(PATHS.PACKAGE.rglob("*.py")) if path.resolve() != own
                 for hit in key_strings(path, keys)]
    offenders += [f"{p.name}: {k}" for p in sorted(SCHEMAS.glob("*.json")) for k in keys if f'"{k}"' in p.read_text()]
    assert not offenders, f"keys of risk estimator {estimator.name!r} named outside {own.name}:\n" + "\n".join(offenders)


def test_risk_json_validates_against_the_schema_and_the_estimators_keys(tmp_path: Path) -> None:
    con = connect(f"duckdb://{tmp_path / 'r.duckdb'}")
    try:
        con.execute("CREATE TABLE t AS SELECT i % 7 AS a, i % 3 AS b, 1.0 + (i % 5) AS w FROM range(60) AS r(i)")
        out = Measured(assess(con, "main.t", ["a", "b"], weight="w", sampling_fraction=0.5).to_json()).to_json()
    finally:
        con.close()
    schema = json.loads(resources.files("ppdp.engine").joinpath("data/schemas/risk.schema.json").read_text())
    merged = {**schema, "properties": {**schema["properties"], **json_schema_properties()}}
    jsonschema.validate(out, merged)
    assert set(json_schema_properties()) <= set(out)  # every estimator applied (a weight, the attributes)
    assert not set(json_schema_properties()) & set(schema["properties"])
