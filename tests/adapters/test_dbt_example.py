"""The dbt example project (examples/dbt) run by dbt itself, as a data team would run it.

dbt-duckdb: `dbt build` publishes the release inside the build (a Python model on dbt's own
connection) and the dbt_ppdp generic tests pass; an unchanged source is skipped (no __v2); a
model that publishes raw quasi-identifiers fails the build with one failing row per violating
class. dbt-postgres: the same generic tests on a release `ppdp run` published in a throwaway
PostgreSQL. Without dbt the tests skip, or fail when PPDP_REQUIRE_DBT=1 (CI).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import uuid
from pathlib import Path

import duckdb
import polars as pl
import pytest

from tests.support.dbt_in_process import SUBPROCESS as DBT_SUBPROCESS
from tests.support.dbt_in_process import run_dbt
from tests.support.paths import REPO

pytestmark = pytest.mark.slow

# PPDP_TEST_CLI_PATH=/old/checkout/src: that checkout's example, dbt package and ppdp (to show
# that a test failed there)
CHECKOUT = Path(os.environ["PPDP_TEST_CLI_PATH"]).resolve().parent if os.environ.get("PPDP_TEST_CLI_PATH") else REPO
EXAMPLE = CHECKOUT / "examples" / "dbt"
QIDS = ["age", "sex", "race", "marital_status", "education"]
PPDP_TESTS = {"ppdp_k_anonymous", "ppdp_l_diverse", "ppdp_t_close", "ppdp_release_verified", "ppdp_risk_below"}


def dbt_executable() -> str:
    found = Path(sys.executable).with_name("dbt")
    if found.exists():
        return str(found)
    if os.environ.get("PPDP_REQUIRE_DBT", "") not in ("", "0"):
        pytest.fail("PPDP_REQUIRE_DBT=1 but dbt is not installed beside this Python (make test installs ppdp[dbt]).")
    pytest.skip("dbt is not installed (pip install 'ppdp[dbt]')")


def example_copy(target: Path) -> Path:
    """A copy of the example project whose dbt_ppdp package is the repository's."""
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns("target", "dbt_packages", "logs", "*.duckdb*"))
    package = CHECKOUT / "src" / "ppdp" / "dbt_ppdp"
    (target / "packages.yml").write_text(f"packages:\n  - local: {json.dumps(str(package))}\n")
    return target


def copy_of(project: Path, target: Path) -> Path:
    """``project`` as it stands (its dbt_packages, target/ and DuckDB file), copied to ``target``."""
    shutil.copytree(project, target, symlinks=True)
    return target


@pytest.fixture(scope="module")
def installed_deps(tmp_path_factory) -> Path:
    """The example project after `dbt deps` (the dbt_ppdp package installed), once a module:
    each test takes a copy of it."""
    target = example_copy(tmp_path_factory.mktemp("dbt-deps") / "dbt")
    deps = dbt(target, "deps")
    assert deps.returncode == 0, deps.stdout[-3000:]
    return target


@pytest.fixture
def project(installed_deps: Path, tmp_path: Path) -> Path:
    """A copy of the example project (its dbt_ppdp package the repository's), `dbt deps` done."""
    return copy_of(installed_deps, tmp_path / "dbt")


@pytest.fixture(scope="module")
def first_build(installed_deps: Path, tmp_path_factory) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
    """The example project's first `dbt build` as shipped, once a module: the folder it was built
    in, a copy of that folder as the build left it, and the build."""
    folder = copy_of(installed_deps, tmp_path_factory.mktemp("dbt-built") / "dbt")
    build = dbt(folder, "build")
    return folder, copy_of(folder, tmp_path_factory.mktemp("dbt-built-copy") / "dbt"), build


@pytest.fixture
def built(first_build) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The project as its first `dbt build` left it, and that build. In the folder it was built in:
    the release's spec names its hierarchies by path, so a project moved elsewhere is another
    release (a new version, not a skipped run), and each test starts from the saved copy."""
    folder, saved, build = first_build
    shutil.rmtree(folder)
    return copy_of(saved, folder), build


def dbt(project: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``dbt ARGS --profiles-dir .`` in ``project``, ``env`` added to the environment: in this
    process (tests/support/dbt_in_process.py), or in a ``dbt`` subprocess to run another
    checkout's ppdp (its src/ on PYTHONPATH) or with PPDP_TEST_DBT_SUBPROCESS=1."""
    executable = dbt_executable()  # skips, or fails under PPDP_REQUIRE_DBT=1, when dbt is not installed
    argv = [*args, "--profiles-dir", "."]
    if CHECKOUT == REPO and not DBT_SUBPROCESS:
        return run_dbt(argv, cwd=project, env={"DBT_SEND_ANONYMOUS_USAGE_STATS": "false", **(env or {})})
    return subprocess.run([executable, *argv], cwd=project, capture_output=True,
                          text=True, timeout=900, env={**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
                                                       **({"PYTHONPATH": str(CHECKOUT / "src")} if CHECKOUT != REPO else {}),
                                                       **(env or {})})


def results(project: Path) -> dict[str, dict]:
    """run_results.json by node name: status and failures."""
    data = json.loads((project / "target" / "run_results.json").read_text())
    return {r["unique_id"]: r for r in data["results"]}


def ppdp_results(project: Path) -> dict[str, dict]:
    return {uid: r for uid, r in results(project).items() if uid.startswith("test.") and "dbt_ppdp_" in uid}


def generic_test_of(unique_id: str) -> str:
    return next(t for t in PPDP_TESTS if f"dbt_ppdp_{t}_" in unique_id or f"dbt_ppdp_source_{t}_" in unique_id)


def violating_classes(frame: pl.DataFrame, k: int) -> int:
    """Classes on QIDS with fewer than k rows, counted here in Polars (not by the macro)."""
    return frame.group_by(QIDS).len().filter(pl.col("len") < k).height


def test_dbt_build_publishes_skips_and_fails_on_a_leaky_model(built):
    project, first = built
    assert first.returncode == 0, first.stdout[-3000:]
    tests = ppdp_results(project)
    assert {generic_test_of(uid) for uid in tests} == PPDP_TESTS
    assert all(r["status"] == "pass" for r in tests.values()), tests
    db = project / "ppdp_example.duckdb"
    with duckdb.connect(str(db), read_only=True) as con:
        relations = dict(con.execute("SELECT table_name, table_type FROM information_schema.tables "
                                     "WHERE table_schema = 'published'").fetchall())
        runs = con.execute("SELECT status, version FROM _ppdp.runs").fetchall()
        published_rows = con.execute('SELECT COUNT(*) FROM "published"."adult"').fetchone()[0]
        model_rows = con.execute('SELECT COUNT(*) FROM "main"."adult_release"').fetchone()[0]
    assert relations == {"adult": "VIEW", "adult__v1": "BASE TABLE"}
    assert runs == [("succeeded", 1)]
    assert model_rows == published_rows > 0  # dbt's model table is the published view, nothing more

    # An unchanged source: the release is skipped, no second version.
    second = dbt(project, "build")
    assert second.returncode == 0, second.stdout[-3000:]
    with duckdb.connect(str(db), read_only=True) as con:
        statuses = [r[0] for r in con.execute("SELECT status FROM _ppdp.runs ORDER BY started_at").fetchall()]
        tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables "
                                            "WHERE table_schema = 'published'").fetchall()}
    assert statuses == ["succeeded", "skipped"]
    assert "adult__v2" not in tables

    # A model that publishes the raw quasi-identifiers: its k-anonymity test fails the build,
    # one failing row (stored with --store-failures) per class below k.
    (project / "models" / "raw_copy.sql").write_text(
        "select age, sex, race, marital_status, education, salary_class from {{ ref('stg_adult') }}\n")
    (project / "models" / "raw_copy.yml").write_text(
        "version: 2\nmodels:\n  - name: raw_copy\n    data_tests:\n      - dbt_ppdp.ppdp_k_anonymous:\n"
        "          arguments:\n            quasi_identifiers: [age, sex, race, marital_status, education]\n"
        "            k: 5\n")
    third = dbt(project, "build", "--store-failures")
    assert third.returncode == 1
    failing = {uid: r for uid, r in ppdp_results(project).items() if r["status"] == "fail"}
    assert len(failing) == 1 and "raw_copy" in next(iter(failing))
    expected = violating_classes(pl.read_csv(project / "seeds" / "adult_sample.csv"), 5)
    assert expected > 0
    assert next(iter(failing.values()))["failures"] == expected
    stored = next(iter(failing.values()))["relation_name"]  # the --store-failures table
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(f"SELECT class_size FROM {stored}").fetchall()
    assert len(rows) == expected and all(size < 5 for (size,) in rows)


def test_a_valid_second_version_passes_dbt_build(project: Path):
    """ppdp keeps v1's Q for t-closeness while the models are unchanged; the example's
    ppdp_t_close compared the classes with the current source's distribution, so once the source
    drifted (here: one more copy of every person earning >50K, 3,000 -> 3,776 rows, the share
    >50K 0.26 -> 0.41) `dbt build` failed a v2 that ppdp had verified. It reads the stored Q now."""
    spec = project / "ppdp" / "adult_release.toml"
    spec.write_text(spec.read_text() + "\n[dynamic]\nmax_repair_fraction = 0.5\n")  # let v2 hold back what it must
    first = dbt(project, "build")
    assert first.returncode == 0, first.stdout[-3000:]
    seed = project / "seeds" / "adult_sample.csv"
    frame = pl.read_csv(seed)
    rich = frame.filter(pl.col("salary_class") == ">50K").with_columns((pl.col("id") + 100_000).alias("id"))
    pl.concat([frame, rich]).write_csv(seed)
    second = dbt(project, "build")
    with duckdb.connect(str(project / "ppdp_example.duckdb"), read_only=True) as con:
        runs = con.execute("SELECT status, version FROM _ppdp.runs ORDER BY started_at").fetchall()
    assert runs == [("succeeded", 1), ("succeeded", 2)]  # ppdp verified v2 against v1's Q
    assert second.returncode == 0, second.stdout[-3000:]
    tests = ppdp_results(project)
    assert {generic_test_of(uid) for uid in tests} == PPDP_TESTS
    assert all(r["status"] == "pass" for r in tests.values()), {u: r["status"] for u, r in tests.items()}


def test_t_close_with_the_stored_q_still_fails_a_raw_copy(built):
    """The stored-Q form of ppdp_t_close is no weaker: the raw staging table fails it."""
    project, first = built
    assert first.returncode == 0, first.stdout[-3000:]
    (project / "models" / "raw_copy.sql").write_text(
        "select age, sex, race, marital_status, education, salary_class from {{ ref('stg_adult') }}\n")
    (project / "models" / "raw_copy.yml").write_text(
        "version: 2\nmodels:\n  - name: raw_copy\n    data_tests:\n      - dbt_ppdp.ppdp_t_close:\n"
        "          arguments:\n            quasi_identifiers: [age, sex, race, marital_status, education]\n"
        "            sensitive: salary_class\n            t: 0.3\n            release: adult\n"
        "            release_schema: published\n")
    third = dbt(project, "build", "--select", "raw_copy")
    assert third.returncode == 1
    failing = [r for r in ppdp_results(project).values() if r["status"] == "fail"]
    assert len(failing) == 1 and failing[0]["failures"] > 0


@pytest.mark.postgres
def test_generic_tests_pass_under_dbt_postgres(project: Path, postgres_server):
    from ppdp.connectors import connect
    from ppdp.engine.core.spec import spec_from_dict
    from ppdp.engine.release.run import run_release

    name = f"dbt_{uuid.uuid4().hex[:8]}"
    admin = connect(postgres_server.url)
    admin.execute(f'CREATE DATABASE "{name}"')
    env = {"PPDP_PG_HOST": "127.0.0.1", "PPDP_PG_PORT": str(postgres_server.port), "PPDP_PG_USER": "postgres",
           "PPDP_PG_DBNAME": name}
    try:
        # the seed and the staging model in one dbt process, no test before the release
        staged = dbt(project, "build", "--select", "+stg_adult", "--resource-type", "seed", "--resource-type", "model",
                     "--target", "pg", env=env)
        assert staged.returncode == 0, staged.stdout[-3000:]
        assert {uid.split(".")[0] for uid in results(project)} == {"seed", "model"}
        raw = tomllib.loads((project / "ppdp" / "adult_release.toml").read_text())
        raw["source"] |= {"database": postgres_server.url_for(name), "schema": "analytics", "table": "stg_adult"}
        outcome = run_release(spec_from_dict(raw, base_dir=project / "ppdp"), progress=False)
        assert outcome.run.status == "succeeded"
        checked = dbt(project, "test", "--target", "pg", env=env)
        assert checked.returncode == 0, checked.stdout[-3000:]
        tests = ppdp_results(project)
        assert {generic_test_of(uid) for uid in tests} == PPDP_TESTS
        assert all(r["status"] == "pass" for r in tests.values()), tests
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()
