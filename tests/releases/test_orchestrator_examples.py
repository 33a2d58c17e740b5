"""examples/orchestrators: the Dagster asset runs here (when dagster is installed: the
``orchestrators`` extra, which ``make test`` installs); the Airflow DAG is syntax-checked, and
imported when Airflow is installed."""

from __future__ import annotations

import ast
import importlib.util
import os
from pathlib import Path

import pytest

from tests.conftest import load_adult
from tests.releases.test_jobs import SPEC, register_by_sql

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "orchestrators"


def load_example(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def job_url(tmp_path) -> str:
    db = load_adult(tmp_path / "warehouse.duckdb", rows=3000)
    register_by_sql(db, "adult_job", SPEC)
    return f"duckdb://{db}"


def materialize_once(dg, asset) -> tuple[dict, list]:
    result = dg.materialize([asset], raise_on_error=True)
    assert result.success
    (event,) = result.asset_materializations_for_node(asset.op.name)
    metadata = {k: getattr(v, "value", v) for k, v in event.metadata.items()}
    return metadata, result.get_asset_check_evaluations()


def test_dagster_asset_materializes_with_metadata_and_check_then_skips(job_url, monkeypatch):
    dg = pytest.importorskip("dagster", reason="examples/orchestrators needs the orchestrators extra (dagster)")
    monkeypatch.setenv("DAGSTER_HOME", str(Path(job_url.removeprefix("duckdb://")).parent))
    example = load_example("dagster_release")
    asset = example.release_asset("adult_job", job_url)

    first, checks = materialize_once(dg, asset)
    assert first["status"] == "published" and first["version"] == 1 and first["exit_code"] == 0
    assert first["k"] >= 5 and first["suppressed"] >= 0 and first["td"] > 0 and first["run_id"]
    (check,) = checks
    assert check.check_name == example.CHECK and check.passed and check.metadata["version"].value == 1

    second, checks = materialize_once(dg, asset)
    assert second["status"] == "skipped" and second["version"] == 1 and second["exit_code"] == 99
    assert second["k"] == first["k"] and second["td"] == pytest.approx(first["td"])
    assert [c.passed for c in checks] == [True]


def test_dagster_asset_fails_the_step_on_a_refusal(job_url, monkeypatch):
    dg = pytest.importorskip("dagster", reason="examples/orchestrators needs the orchestrators extra (dagster)")
    import json

    impossible = json.loads(json.dumps(SPEC))
    impossible["privacy"]["models"][0]["k"] = 5000
    register_by_sql(Path(job_url.removeprefix("duckdb://")), "impossible", impossible)
    asset = load_example("dagster_release").release_asset("impossible", job_url)
    result = dg.materialize([asset], raise_on_error=False)
    assert not result.success and not result.asset_materializations_for_node(asset.op.name)
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    assert "ppdp refused (exit code 3)" in str(failure.step_failure_data.user_failure_data.description)


def test_airflow_example_is_valid_python_and_imports_with_airflow():
    source = (EXAMPLES / "airflow_release.py").read_text()
    tree = ast.parse(source)
    assert "skip_on_exit_code" in source and any(isinstance(n, ast.FunctionDef) and n.name == "ppdp_release" for n in ast.walk(tree))
    if importlib.util.find_spec("airflow") is None:
        pytest.skip("Airflow is not installed: syntax-checked only")
    os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
    module = load_example("airflow_release")
    assert module.ppdp_release is not None
