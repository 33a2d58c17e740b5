"""One ``ppdp`` package in the wheel, optional engines as extras, connectors by entry point."""

from __future__ import annotations

import email
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from ppdp.connectors import CONNECTORS, connect
from ppdp.errors import ConnectorError, SpecError
from tests.support import paths as PATHS


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out),
                    str(PATHS.REPO)], check=True, capture_output=True)
    return next(out.glob("ppdp-*.whl"))


@pytest.mark.slow
def test_the_wheel_holds_only_the_ppdp_package(wheel: Path) -> None:
    top = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert top == {"ppdp", next(t for t in top if t.endswith(".dist-info"))}, top
    names = zipfile.ZipFile(wheel).namelist()
    for layer in ("engine", "sql", "connectors"):
        assert f"ppdp/{layer}/__init__.py" in names
    assert "ppdp/engine/data/adult/adult.csv" in names  # the demo's bundled data


@pytest.mark.slow
def test_a_plain_install_pulls_no_optional_engine(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        meta = email.message_from_bytes(z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))))
        entry_points = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/entry_points.txt"))).decode()
    plain = [r for r in meta.get_all("Requires-Dist") if "extra ==" not in r]
    for optional in ("pyspark", "ray", "adbc"):
        assert not any(r.startswith(optional) for r in plain), plain
    assert {"postgres", "spark", "ray"} <= set(meta.get_all("Provides-Extra"))
    assert "[ppdp.connectors]" in entry_points and "duckdb = ppdp.connectors.duckdb_connector:DuckDBConnector" in entry_points


def test_connectors_are_found_by_scheme_and_an_unknown_one_is_named() -> None:
    assert {"duckdb", "postgresql", "postgres", "spark"} <= set(CONNECTORS.names())
    con = connect("duckdb:///:memory:")
    con.close()
    with pytest.raises(SpecError, match=r"Unknown database connector 'mysql'\. Known: duckdb, postgres, postgresql, spark\."):
        connect("mysql://host/db")


def test_a_connector_whose_driver_is_missing_says_which_extra(monkeypatch) -> None:
    from importlib.metadata import EntryPoint

    from ppdp.registry import Registry

    reg: Registry[type] = Registry("database connector", entry_point_group="ppdp.connectors")
    missing = EntryPoint("nodb", "ppdp_no_such_driver_module:Connector [nodb]", "ppdp.connectors")
    monkeypatch.setattr(reg, "_entry_points", {"nodb": missing})
    monkeypatch.setattr("ppdp.connectors.base.CONNECTORS", reg)
    with pytest.raises(ConnectorError, match=r"needs ppdp_no_such_driver_module that is not installed\. Hint: pip install 'ppdp\[nodb\]'"):
        connect("nodb://x")
