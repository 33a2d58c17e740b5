"""Fixtures for tests marked ``spark``: one local Spark session (and warehouse) per test process.

Spark runs one session per process and its warehouse is fixed when it starts, so every Spark
test shares ``spark_url`` and keeps to schemas and release names of its own. Without pyspark the
tests are skipped — or fail when ``PPDP_REQUIRE_SPARK=1`` (CI machines meant to have Spark).
"""

from __future__ import annotations

import importlib.util
import os
import shutil

import pytest

__all__ = ["spark_url", "spark_required"]


def spark_required() -> bool:
    return os.environ.get("PPDP_REQUIRE_SPARK", "") not in ("", "0")


@pytest.fixture(scope="session")
def spark_url(tmp_path_factory) -> str:
    """``spark://local[2]?warehouse=...``: Parquet tables in a temp folder, the catalog in the
    session (a Derby metastore, the product's default, costs ~25 s to create on this machine)."""
    if importlib.util.find_spec("pyspark") is None:
        if spark_required():
            pytest.fail("PPDP_REQUIRE_SPARK=1 but pyspark is not installed (pip install 'ppdp[spark]').")
        pytest.skip("pyspark is not installed (pip install 'ppdp[spark]')")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        if spark_required():
            pytest.fail("PPDP_REQUIRE_SPARK=1 but no Java runtime (Spark needs Java 17: apt-get install openjdk-17-jre-headless).")
        pytest.skip("no Java runtime for Spark (install Java 17, e.g. openjdk-17-jre-headless)")
    folder = tmp_path_factory.mktemp("spark") / "warehouse"
    # The tests' tables are small, so what a query costs is mostly its planning: no whole-stage
    # code generation (a Java compile per new plan) and no adaptive re-planning. Spark's
    # interpreted operators compute the same rows. The driver JVM's JIT stops at its first tier
    # (C1): a test session's code is run a few times, not long enough for C2's optimizing
    # compiles to pay back the CPU they take (half the JVM's CPU time on the release tests).
    return (f"spark://local[2]?warehouse={folder}&catalog=in-memory&conf.spark.sql.shuffle.partitions=1"
            "&conf.spark.sql.codegen.wholeStage=false&conf.spark.sql.adaptive.enabled=false"
            "&conf.spark.driver.extraJavaOptions=-XX:TieredStopAtLevel=1")
