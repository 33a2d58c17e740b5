"""Brief H3: every bad input is refused before any write, with one line; CLI hygiene.

Each test names the finding it reproduces (review findings 4, 5, 7, 10, 15, 16).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pytest

from ppdp.engine.core.spec import load_spec
from ppdp.engine.release.run import run_release
from ppdp.errors import DataError, SpecError
from tests.conftest import ADULT_COLUMNS, load_adult, snapshot, write_spec
from tests.support import paths as PATHS
from tests.support.cli_under_test import ppdp

SMALL = ["age", "sex", "race"]
ROOT = PATHS.REPO


@pytest.fixture
def small_db(tmp_path) -> Path:
    return load_adult(tmp_path / "small.duckdb", rows=500)


def cli(*args: str) -> subprocess.CompletedProcess:
    """``ppdp ARGS`` from the repository root, this checkout's code (in this process:
    tests/support/cli_in_process.py; the closed-pipe tests below start a real one)."""
    return ppdp(*args, cwd=ROOT)


def assert_one_line_error(proc: subprocess.CompletedProcess, *fragments: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ppdp: error: "), proc.stderr
    for f in fragments:
        assert f in lines[0], lines[0]


# --- impossible parameters must not publish an empty release ----------------------


def test_tiny_t_is_satisfied_by_a_nonempty_release(small_db, tmp_path):
    """t = 1e-9: the root class (distributed exactly like Q) has distance 0, so S* must keep
    records. The oracle's sum of q^2 over absent values cancelled to ~1e-17 (distance ~3e-9)."""
    spec = write_spec(tmp_path / "s.toml", db=small_db, qids=SMALL, output="tiny_t",
                      models='[[privacy.models]]\nname = "t-closeness"\nt = 1e-9\n')
    out = run_release(load_spec(spec), progress=False)
    assert out.run.verification["passed"]
    assert out.run.metrics["released_records"] > 0
    assert out.run.verification["checks"][0]["ad"] <= 1e-9


# --- the private schema, in any letter case ---------------------------------------


def base_spec(**sections) -> dict:
    """A valid spec as a dict (no database needed to validate it); ``sections`` replace parts."""
    raw = {
        "source": {"database": "duckdb://:memory:", "table": "adult", "key": "id",
                   "keep": ["education", "marital-status", "native-country", "workclass", "occupation"]},
        "quasi_identifiers": [{"column": "age", "hierarchy": "intervals"}, {"column": "sex", "hierarchy": "flat"},
                              {"column": "race", "hierarchy": "flat"}],
        "sensitive": {"columns": ["salary-class"]},
        "privacy": {"models": [{"name": "k-anonymity", "k": 2}]},
        "output": {"schema": "published", "name": "adult"},
    }
    for name, value in sections.items():
        raw[name] = value
    return raw


@pytest.mark.parametrize("schema", ["_ppdp", "_PPDP", "_Ppdp"])
def test_output_schema_private_in_any_case_is_refused(schema):
    from ppdp.engine.core.spec import spec_from_dict

    with pytest.raises(SpecError, match=r"output.schema cannot be .*private state"):
        spec_from_dict(base_spec(output={"schema": schema, "name": "adult"}))


def test_cli_run_into_private_schema_upper_case_is_refused(small_db, tmp_path):
    spec = write_spec(tmp_path / "s.toml", db=small_db, qids=SMALL)
    spec.write_text(spec.read_text().replace('schema = "published"', 'schema = "_PPDP"'))
    before = snapshot(small_db)
    assert_one_line_error(cli("run", str(spec), "--no-progress"), "output.schema cannot be '_PPDP'")
    assert snapshot(small_db) == before


@pytest.fixture
def published_db(tmp_path) -> Path:
    """A DuckDB file with a 'published' schema (a table and a view on it) and a private _ppdp."""
    db = tmp_path / "pub.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE SCHEMA published")
    con.execute("CREATE SCHEMA _ppdp")
    con.execute("CREATE TABLE published.r__v1 AS SELECT 1 AS a")
    con.execute("CREATE VIEW published.r AS SELECT * FROM published.r__v1")
    con.execute("CREATE TABLE _ppdp.suppressed AS SELECT 'secret' AS key")
    con.execute("CREATE TABLE main.source AS SELECT 'raw' AS x")
    con.close()
    # ppdp's record that it published r v1 (export copies what the record names)
    import datetime

    from ppdp.connectors import connect
    from ppdp.engine.core import catalog

    now = datetime.datetime(2026, 1, 1)
    pc = connect(f"duckdb://{db}")
    try:
        catalog.ensure_schema(pc)
        catalog.release_salt(pc, catalog.release_id("published", "r"), "published", "r")
        catalog.insert_run(pc, catalog.RunRecord("run1", catalog.release_id("published", "r"), 1, "succeeded", now, now, 1,
                                                 {}, {}, {}, {}, None))
    finally:
        pc.close()
    return db


@pytest.mark.parametrize("schema", ["_ppdp", "_PPDP", "_pPdP"])
def test_export_of_private_schema_in_any_case_is_refused(published_db, tmp_path, schema):
    out = tmp_path / "share.duckdb"
    assert_one_line_error(cli("export", str(out), "--db", f"duckdb://{published_db}", "--schema", schema), "private state")
    assert not out.exists()


def test_export_to_missing_directory_is_one_line(published_db, tmp_path):
    out = tmp_path / "no" / "such" / "dir" / "share.duckdb"
    assert_one_line_error(cli("export", str(out), "--db", f"duckdb://{published_db}"), "does not exist")
    assert not out.parent.exists()


def test_export_copies_the_published_relations_only(published_db, tmp_path):
    from ppdp.connectors import connect
    from ppdp.engine.app.export import export_schema

    con = connect(f"duckdb://{published_db}")
    try:
        copied = export_schema(con, "published", str(tmp_path / "share.duckdb"))
    finally:
        con.close()
    assert sorted(copied) == ["published.r (view)", "published.r__v1"]
    share = duckdb.connect(str(tmp_path / "share.duckdb"), read_only=True)
    schemas = {r[0] for r in share.execute("SELECT DISTINCT table_schema FROM information_schema.tables").fetchall()}
    share.close()
    assert schemas == {"published"}


def test_export_leaves_out_a_view_reading_outside_its_schema(published_db, tmp_path):
    """A view that is not ppdp's (here: over the source) stays behind; the release is exported
    (export copies what ppdp published, whatever else the schema holds)."""
    from ppdp.connectors import connect
    from ppdp.engine.app.export import export_schema

    con = duckdb.connect(str(published_db))
    con.execute("CREATE VIEW published.leak AS SELECT * FROM main.source")
    con.close()
    out = tmp_path / "share.duckdb"
    con = connect(f"duckdb://{published_db}")
    try:
        copied = export_schema(con, "published", str(out))
    finally:
        con.close()
    assert sorted(copied) == ["published.r (view)", "published.r__v1"]
    share = duckdb.connect(str(out), read_only=True)
    names = {r[0] for r in share.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    share.close()
    assert names == {"r", "r__v1"}


# --- every source column must be declared -----------------------------------------



def test_adult_columns_match_the_csv_header():
    from tests.conftest import ADULT

    header = (ADULT / "adult.csv").read_text().splitlines()[0].split(";")
    assert ["id", *header] == ADULT_COLUMNS


def test_undeclared_columns_are_listed_in_source_order():
    from ppdp.engine.core.spec import spec_from_dict
    from ppdp.engine.release.columns import check_declared, undeclared_columns

    raw = base_spec()
    raw["source"] = {"database": "duckdb://:memory:", "table": "adult", "key": "id", "drop": ["workclass"]}
    spec = spec_from_dict(raw)
    assert undeclared_columns(spec, ADULT_COLUMNS) == ["marital-status", "education", "native-country", "occupation"]
    with pytest.raises(DataError) as err:
        check_declared(spec, ADULT_COLUMNS)
    msg = str(err.value)
    assert "\n" not in msg and "4 source column(s) have no role" in msg
    assert "'marital-status', 'education', 'native-country', 'occupation'" in msg
    assert 'keep = ["marital-status", "education", "native-country", "occupation"]' in msg and "drop = [...]" in msg


def test_fully_declared_spec_passes_and_keep_must_exist():
    from ppdp.engine.core.spec import spec_from_dict
    from ppdp.engine.release.columns import check_declared, undeclared_columns

    spec = spec_from_dict(base_spec())
    assert undeclared_columns(spec, ADULT_COLUMNS) == []
    check_declared(spec, ADULT_COLUMNS)  # no error: every column has a role
    with pytest.raises(DataError, match=r"kept column 'education' \(source.keep\) is not in the source. Did you mean 'educaton'"):
        check_declared(spec, [c if c != "education" else "educaton" for c in ADULT_COLUMNS])


@pytest.mark.parametrize(("field", "value", "pattern"), [
    ("keep", ["age"], r"Column 'age' is both quasi-identifier and kept column"),
    ("drop", ["age"], r"Column 'age' is both quasi-identifier and dropped column"),
    ("drop", ["salary-class"], r"Column 'salary-class' is both sensitive attribute and dropped column"),
    ("keep", ["education", "education"], r"Column 'education' is listed twice as kept column"),
])
def test_a_column_with_two_roles_is_a_spec_error(field, value, pattern):
    from ppdp.engine.core.spec import spec_from_dict

    raw = base_spec()
    raw["source"] = {"database": "duckdb://:memory:", "table": "adult", "key": "id", field: value}
    with pytest.raises(SpecError, match=pattern):
        spec_from_dict(raw)


def test_qid_also_dropped_is_refused_before_any_write(small_db, tmp_path):
    """A QID also in drop used to reach DuckDB as a raw binder error."""
    spec = write_spec(tmp_path / "s.toml", db=small_db, qids=SMALL, drop=["age", "workclass"])
    before = snapshot(small_db)
    assert_one_line_error(cli("run", str(spec), "--no-progress"), "Column 'age' is both quasi-identifier and dropped column")
    assert snapshot(small_db) == before


# --- the run key covers hierarchy contents and the ppdp version ---------------------


def test_hierarchy_digest_follows_content_not_layout(tmp_path):
    from ppdp.engine.core import hierarchy as hier

    rows = [["a", "x", "*"], ["b", "x", "*"], ["c", "y", "*"]]
    base = hier.from_rows("q", rows, source="one.csv").digest()
    assert hier.from_rows("q", list(reversed(rows)), source="other.csv").digest() == base  # order / origin: same
    assert hier.from_rows("q", [["a", "x", "*"], ["b", "y", "*"], ["c", "y", "*"]]).digest() != base  # a leaf moved
    assert hier.from_rows("r", rows).digest() != base  # another attribute
    assert hier.from_rows("q", [["a", "x", "x", "*"], ["b", "x", "x", "*"], ["c", "y", "y", "*"]]).digest() != base  # a level added
    assert len(base) == 64 and int(base, 16) >= 0


def test_edited_arx_file_changes_the_digest(tmp_path):
    from ppdp.engine.core import hierarchy as hier
    from tests.conftest import ADULT

    original = ADULT / "adult_hierarchy_sex.csv"
    edited = tmp_path / "sex.csv"
    edited.write_text(original.read_text().replace("*", "any"))
    assert hier.read_arx_csv(original, "sex").digest() != hier.read_arx_csv(edited, "sex").digest()


def test_run_key_changes_with_each_input(monkeypatch):
    from ppdp.engine.core.spec import spec_from_dict
    from ppdp.engine.release.stages import identify

    spec = spec_from_dict(base_spec())
    key = identify.run_key(spec, "500:123", ["d1", "d2"])
    assert key == identify.run_key(spec_from_dict(base_spec()), "500:123", ["d1", "d2"])  # deterministic
    other_seed = spec_from_dict(base_spec(optimizer={"seed": 7}))
    other_spec = spec_from_dict(base_spec(privacy={"models": [{"name": "k-anonymity", "k": 3}]}))
    variants = [identify.run_key(spec, "500:124", ["d1", "d2"]), identify.run_key(spec, "500:123", ["d1", "d3"]),
                identify.run_key(spec, "500:123", ["d2", "d1"]), identify.run_key(other_seed, "500:123", ["d1", "d2"]),
                identify.run_key(other_spec, "500:123", ["d1", "d2"])]
    monkeypatch.setattr(identify, "ppdp_version", lambda: "999.0")
    variants.append(identify.run_key(spec, "500:123", ["d1", "d2"]))
    assert key not in variants and len(set(variants)) == len(variants)


def test_ppdp_version_falls_back_to_dev(monkeypatch):
    from importlib import metadata

    from ppdp.engine.release.stages import identify

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(identify.metadata, "version", missing)
    assert identify.ppdp_version() == "dev"


def test_edited_arx_hierarchy_is_not_skipped(small_db, tmp_path):
    from tests.conftest import ADULT

    sex = tmp_path / "sex.csv"
    sex.write_text((ADULT / "adult_hierarchy_sex.csv").read_text())
    spec = write_spec(tmp_path / "s.toml", db=small_db, qids=SMALL, hierarchies={"sex": str(sex)}, output="arx")
    assert run_release(load_spec(spec), progress=False).run.version == 1
    assert run_release(load_spec(spec), progress=False).run.status == "skipped"
    sex.write_text(sex.read_text().replace("*", "any sex"))
    again = run_release(load_spec(spec), progress=False)
    assert again.run.status == "succeeded" and again.run.version == 2


def test_undeclared_columns_are_refused_before_any_write(small_db, tmp_path):
    spec = write_spec(tmp_path / "s.toml", db=small_db, qids=SMALL, keep=["education"])
    before = snapshot(small_db)
    with pytest.raises(DataError, match=r"4 source column\(s\) have no role in the spec: 'marital-status', 'native-country', "
                                        r"'workclass', 'occupation'"):
        run_release(load_spec(spec), progress=False)
    assert snapshot(small_db) == before


# --- impossible parameters ---------------------------------------------------------


@pytest.mark.parametrize(("model", "pattern"), [
    ({"name": "entropy-l-diversity", "l": math.inf}, r"entropy-l-diversity needs a finite number l >= 1, got inf"),
    ({"name": "entropy-l-diversity", "l": math.nan}, r"entropy-l-diversity needs a finite number l >= 1, got nan"),
    ({"name": "distinct-l-diversity", "l": 2.5}, r"distinct-l-diversity needs an integer l >= 1"),
    ({"name": "t-closeness", "t": math.nan}, r"t-closeness needs t in \(0, 1\], got nan"),
    ({"name": "t-closeness", "t": math.inf}, r"t-closeness needs t in \(0, 1\], got inf"),
    ({"name": "k-anonymity", "k": 0}, r"k-anonymity needs an integer k >= 1"),
    ({"name": "k-anonymity", "k": 2.0}, r"k-anonymity needs an integer k >= 1"),
])
def test_model_parameters_must_be_finite_and_in_range(model, pattern):
    from ppdp.engine.core.spec import spec_from_dict

    with pytest.raises(SpecError, match=pattern):
        spec_from_dict(base_spec(privacy={"models": [model]}))


def test_cli_l_inf_is_one_line(small_db, tmp_path):
    spec = write_spec(tmp_path / "s.toml", db=small_db, qids=SMALL, models='[[privacy.models]]\nname = "entropy-l-diversity"\nl = inf\n')
    before = snapshot(small_db)
    assert_one_line_error(cli("run", str(spec), "--no-progress"), "needs a finite number l >= 1, got inf")
    assert snapshot(small_db) == before


def encoded(db: Path, tmp_path: Path, models: str):
    """The encoded table and models of a spec over ``db`` (prepare reads, never writes)."""
    from ppdp.connectors import connect
    from ppdp.engine.release.stages.validate import prepare

    spec = load_spec(write_spec(tmp_path / "enc.toml", db=db, qids=SMALL, models=models))
    con = connect(spec.database)
    try:
        prep = prepare(spec, con)
    finally:
        con.close()
    return prep.table, prep.models


def test_impossible_reason_of_each_model(small_db, tmp_path):
    """salary-class has 2 distinct values, the sample 500 rows."""
    models = ('[[privacy.models]]\nname = "k-anonymity"\nk = 500\n'
              '[[privacy.models]]\nname = "distinct-l-diversity"\nl = 2\n'
              '[[privacy.models]]\nname = "entropy-l-diversity"\nl = 2\n'
              '[[privacy.models]]\nname = "t-closeness"\nt = 1e-9\n')
    table, possible = encoded(small_db, tmp_path, models)
    assert [m.impossible_reason(table) for m in possible] == [None, None, None, None]
    from ppdp.engine.privacy import build_model

    assert "k = 501 is larger than the table (500 rows)" in build_model("k-anonymity", {"k": 501}).impossible_reason(table)
    assert "only 2 distinct value(s)" in build_model("distinct-l-diversity", {"l": 3}).impossible_reason(table)
    assert "only 2 distinct value(s)" in build_model("entropy-l-diversity", {"l": 2.01}).impossible_reason(table)
    assert build_model("t-closeness", {"t": 1e-12}).impossible_reason(table) is None


def test_entropy_l_up_to_the_number_of_values_is_possible_through_suppression(small_db, tmp_path):
    """The whole table's effective l is exp(H(0.77, 0.23)) ~ 1.7 < 2, yet l = 2 is met by
    suppressing the surplus of the majority value, so impossible_reason must not refuse it."""
    table, models = encoded(small_db, tmp_path, '[[privacy.models]]\nname = "entropy-l-diversity"\nl = 2\n')
    q = table.sa_distribution
    assert math.exp(-(q * np.log(q)).sum()) < 2
    assert models[0].impossible_reason(table) is None
    spec = write_spec(tmp_path / "e.toml", db=small_db, qids=SMALL, output="ent",
                      models='[[privacy.models]]\nname = "entropy-l-diversity"\nl = 2\n')
    out = run_release(load_spec(spec), progress=False)
    assert out.run.verification["passed"] and out.run.metrics["released_records"] > 0


def test_check_possible_and_check_not_empty():
    from ppdp.engine.privacy import build_model, check_not_empty

    models = [build_model("k-anonymity", {"k": 5})]
    check_not_empty(1, models)
    with pytest.raises(DataError, match=r"keeps no rows .*k-anonymity \{'k': 5\}.*nothing was published. Hint"):
        check_not_empty(0, models)


def test_check_possible_raises_the_first_reason(small_db, tmp_path):
    from ppdp.engine.privacy import build_model, check_possible

    table, models = encoded(small_db, tmp_path, '[[privacy.models]]\nname = "k-anonymity"\nk = 2\n')
    check_possible(table, models)
    with pytest.raises(DataError, match=r"No release can satisfy distinct-l-diversity: l = 3 but the sensitive attribute has only 2"):
        check_possible(table, models + [build_model("distinct-l-diversity", {"l": 3})])


@pytest.mark.parametrize("models", ['[[privacy.models]]\nname = "distinct-l-diversity"\nl = 3\n',
                                    '[[privacy.models]]\nname = "entropy-l-diversity"\nl = 2.5\n'])
def test_impossible_l_is_refused_before_any_write(small_db, tmp_path, models):
    spec = write_spec(tmp_path / "s.toml", db=small_db, qids=SMALL, models=models)
    before = snapshot(small_db)
    with pytest.raises(DataError, match=r"No release can satisfy .*only 2 distinct value"):
        run_release(load_spec(spec), progress=False)
    assert snapshot(small_db) == before


def test_models_impossible_together_publish_nothing(small_db, tmp_path):
    """k = 450 and entropy l = 2 (at most 2 x 114 balanced records) leave only the empty release."""
    spec = write_spec(tmp_path / "s.toml", db=small_db, qids=SMALL, models=(
        '[[privacy.models]]\nname = "k-anonymity"\nk = 450\n[[privacy.models]]\nname = "entropy-l-diversity"\nl = 2\n'))
    with pytest.raises(DataError, match=r"The best release found keeps no rows"):
        run_release(load_spec(spec), progress=False)
    con = duckdb.connect(str(small_db), read_only=True)
    published = con.execute("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'published'").fetchone()[0]
    con.close()
    assert published == 0


# --- one line, never a traceback ------------------------------------------------------


@pytest.fixture
def nan_db(tmp_path) -> Path:
    db = tmp_path / "nan.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t AS SELECT * FROM (VALUES (1, 1.5, 'a'), (2, 'nan'::DOUBLE, 'b'), (3, 'inf'::DOUBLE, 'a'), "
                "(4, 2.0, 'b')) AS v(id, x, s)")
    con.close()
    return db


def small_toml(db: Path, *, extra: str = "", hierarchy: str = '"intervals"') -> str:
    return (f'[source]\ndatabase = "duckdb://{db}"\ntable = "t"\nkey = "id"\n[[quasi_identifiers]]\ncolumn = "x"\n'
            f'hierarchy = {hierarchy}\n[sensitive]\ncolumns = ["s"]\n[[privacy.models]]\nname = "k-anonymity"\nk = 2\n'
            f'{extra}[output]\nname = "n"\n')


def test_nan_and_inf_in_an_intervals_column_is_one_line(nan_db, tmp_path):
    spec = tmp_path / "nan.toml"
    spec.write_text(small_toml(nan_db))
    before = snapshot(nan_db)
    assert_one_line_error(cli("run", str(spec), "--no-progress"), "Interval hierarchy for 'x' needs finite numbers", "'Infinity', 'NaN'")
    assert snapshot(nan_db) == before


def test_infinite_interval_width_is_a_spec_error(nan_db, tmp_path):
    spec = tmp_path / "w.toml"
    spec.write_text(small_toml(nan_db, hierarchy='{ type = "intervals", widths = [5, inf] }'))
    assert_one_line_error(cli("run", str(spec), "--no-progress"), "widths must be positive finite numbers, got inf")


@pytest.mark.parametrize("value", ["-1", "0"])
def test_workload_queries_must_be_positive(nan_db, tmp_path, value):
    spec = tmp_path / "wq.toml"
    spec.write_text(small_toml(nan_db, extra=f"[utility]\nworkload_queries = {value}\n"))
    before = snapshot(nan_db)
    assert_one_line_error(cli("run", str(spec), "--no-progress"), f"utility.workload_queries must be >= 1, got {value}")
    assert snapshot(nan_db) == before


def test_spec_path_that_is_a_directory(tmp_path):
    assert_one_line_error(cli("run", str(tmp_path), "--no-progress"), "is a directory")


def test_spec_file_that_is_not_utf8(tmp_path):
    spec = tmp_path / "latin1.toml"
    spec.write_bytes('[source]\ndatabase = "café"\n'.encode("latin-1"))
    assert_one_line_error(cli("run", str(spec), "--no-progress"), "is not UTF-8 text")


def test_run_into_a_closed_pipe_exits_quietly(small_db, tmp_path):
    """The reader is gone before ppdp prints: no traceback, no 'Exception ignored', exit 141."""
    spec = write_spec(tmp_path / "s.toml", db=small_db, qids=SMALL)
    proc = subprocess.Popen([sys.executable, "-m", "ppdp.engine.app.cli", "run", str(spec), "--no-progress"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()
    with proc.stderr:
        err = proc.stderr.read()
    proc.wait(timeout=120)
    assert "Traceback" not in err and "BrokenPipe" not in err and err == ""
    assert proc.returncode == 141


def test_run_piped_into_head(small_db, tmp_path):
    spec = write_spec(tmp_path / "s.toml", db=small_db, qids=SMALL)
    err = tmp_path / "stderr.txt"
    shell = f"{sys.executable} -m ppdp.engine.app.cli run {spec} --no-progress 2>{err} | head -1"
    proc = subprocess.run(["bash", "-c", shell], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stdout.startswith('release "published"."adult" version 1') and len(proc.stdout.splitlines()) == 1
    assert "Traceback" not in err.read_text() and "BrokenPipe" not in err.read_text()


# --- names checked when the spec is parsed ---------------------------------------------


@pytest.mark.parametrize(("sections", "pattern"), [
    ({"optimizer": {"name": "latice"}}, r"optimizer.name: Unknown optimizer 'latice'. Did you mean 'lattice'\?"),
    ({"optimizer": {"evaluator": "numbaa"}}, r"optimizer.evaluator: Unknown evaluator backend 'numbaa'. Did you mean 'numba'\?"),
    ({"utility": {"report": ["td", "query_precison"]}},
     r"utility.report: Unknown utility metric 'query_precison'. Did you mean 'query_precision'\?"),
    ({"output": {"name": ""}}, r"output.name is empty"),
    ({"output": {"name": "   "}}, r"output.name is empty"),
])
def test_names_are_checked_at_parse_time(sections, pattern):
    from ppdp.engine.core.spec import spec_from_dict

    with pytest.raises(SpecError, match=pattern):
        spec_from_dict(base_spec(**sections))


def test_optimizer_typo_via_cli_writes_nothing(small_db, tmp_path):
    spec = write_spec(tmp_path / "s.toml", db=small_db, qids=SMALL, optimizer="flsh")
    before = snapshot(small_db)
    assert_one_line_error(cli("run", str(spec), "--no-progress"), "Unknown optimizer 'flsh'. Did you mean 'flash'?")
    assert snapshot(small_db) == before


def test_unknown_key_where_no_keys_are_allowed_never_prints_an_empty_list(monkeypatch):
    from ppdp.engine.core import spec as spec_module
    from ppdp.errors import known_names

    monkeypatch.setitem(spec_module._SCHEMA, "nothing", set())
    with pytest.raises(SpecError) as err:
        spec_module._check_keys("nothing", {"x": 1}, "[nothing]")
    assert "Known: ." not in str(err.value) and "no keys are allowed" in str(err.value)
    assert known_names([]) == " Nothing is allowed here." and known_names(["b", "a"]) == " Known: a, b."


def test_job_register_stores_source_file_as_absolute_path(tmp_path, monkeypatch):
    import json

    from ppdp.engine.app import jobs

    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "people.csv").write_text("id,age,s\n1,30,a\n2,31,b\n3,30,a\n4,31,b\n")
    (folder / "spec.toml").write_text(
        '[source]\ndatabase = "duckdb://x.duckdb"\nfile = "people.csv"\nkey = "id"\n[[quasi_identifiers]]\ncolumn = "age"\n'
        'hierarchy = "intervals"\n[sensitive]\ncolumns = ["s"]\n[[privacy.models]]\nname = "k-anonymity"\nk = 2\n'
        '[output]\nname = "people"\n')
    db = tmp_path / "jobs.duckdb"
    monkeypatch.chdir(tmp_path)  # registered from elsewhere: the relative path must not leak into the job
    jobs.register_job(f"duckdb://{db}", folder / "spec.toml")
    con = duckdb.connect(str(db), read_only=True)
    stored = json.loads(con.execute("SELECT spec FROM _ppdp.jobs WHERE name = 'people'").fetchone()[0])
    con.close()
    assert stored["source"]["file"] == str((folder / "people.csv").resolve())
