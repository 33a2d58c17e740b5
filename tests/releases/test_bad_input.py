"""Every bad input of the foundation issue (point 11): a clear error, and the database unchanged."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from ppdp.engine.core.spec import load_spec
from ppdp.engine.release.run import run_release
from ppdp.errors import DataError, HierarchyError, SpecError
from tests.conftest import ADULT, load_adult, snapshot, write_spec

SMALL = ["age", "sex", "race"]


@pytest.fixture
def small_db(tmp_path) -> Path:
    return load_adult(tmp_path / "small.duckdb", rows=500)


def expect_failure(spec_path: Path, db: Path, error: type[Exception], pattern: str) -> None:
    before = snapshot(db)
    with pytest.raises(error, match=pattern):
        run_release(load_spec(spec_path), progress=False)
    assert snapshot(db) == before, "a failed run must leave the database as it was"


def test_missing_table(small_db, tmp_path):
    spec = write_spec(tmp_path / "s.toml", db=small_db, table="adlut", qids=SMALL)
    expect_failure(spec, small_db, DataError, r"Source table \"adlut\" does not exist in duckdb://.*Hint")


def test_missing_column_suggests_the_name(small_db, tmp_path):
    spec = write_spec(tmp_path / "s.toml", db=small_db, qids=["age", "sex", "raec"],
                      hierarchies={"raec": str(ADULT / "adult_hierarchy_race.csv")})
    expect_failure(spec, small_db, DataError, r"quasi-identifier column 'raec' is not in .*Did you mean 'race'\?")


def test_value_missing_from_hierarchy_names_column_value_and_file(small_db, tmp_path):
    short = tmp_path / "race.csv"
    rows = [r for r in (ADULT / "adult_hierarchy_race.csv").read_text().splitlines() if not r.startswith("Black")]
    short.write_text("\n".join(rows) + "\n")
    spec = write_spec(tmp_path / "s.toml", db=small_db, qids=SMALL, hierarchies={"race": str(short)})
    expect_failure(spec, small_db, HierarchyError, rf"Column 'race' has value\(s\) 'Black' .*\({short}\)")


def test_nulls_in_qids_error_policy_and_suppress_policy(small_db, tmp_path):
    con = duckdb.connect(str(small_db))
    con.execute("UPDATE adult SET age = NULL WHERE id IN (1, 2, 3)")
    con.close()
    spec = write_spec(tmp_path / "s.toml", db=small_db, qids=SMALL)
    expect_failure(spec, small_db, DataError, r"3 source rows have NULL in quasi-identifier\(s\) 'age'.*null_policy")
    spec2 = write_spec(tmp_path / "s2.toml", db=small_db, qids=SMALL, extra_source='null_policy = "suppress"')
    out = run_release(load_spec(spec2), progress=False)
    assert out.run.verification["passed"]
    assert out.run.metrics["suppressed"] >= 3
    con = duckdb.connect(str(small_db), read_only=True)
    withheld = {r[0] for r in con.execute("SELECT key FROM _ppdp.suppressed").fetchall()}
    con.close()
    assert {"1", "2", "3"} <= withheld


def test_empty_table(small_db, tmp_path):
    con = duckdb.connect(str(small_db))
    con.execute("CREATE TABLE empty AS SELECT * FROM adult WHERE false")
    con.close()
    spec = write_spec(tmp_path / "s.toml", db=small_db, table="empty", qids=SMALL)
    expect_failure(spec, small_db, DataError, "is empty: there is nothing to release")


def test_k_larger_than_table(small_db, tmp_path):
    spec = write_spec(tmp_path / "s.toml", db=small_db, qids=SMALL, models='[[privacy.models]]\nname = "k-anonymity"\nk = 501\n')
    expect_failure(spec, small_db, DataError, r"k = 501 is larger than the table \(500 rows\)")


@pytest.mark.parametrize("t", ["0", "1.5", "-0.1", '"0.2"'])
def test_t_outside_unit_interval(small_db, tmp_path, t):
    spec = write_spec(tmp_path / "s.toml", db=small_db, qids=SMALL, models=f'[[privacy.models]]\nname = "t-closeness"\nt = {t}\n')
    expect_failure(spec, small_db, SpecError, r"t-closeness needs t in \(0, 1\]")


def test_malformed_toml(small_db, tmp_path):
    spec = write_spec(tmp_path / "s.toml", db=small_db, qids=SMALL)
    spec.write_text(spec.read_text().replace("[output]", "[output"))
    before = snapshot(small_db)
    with pytest.raises(SpecError, match=r"is not valid TOML: .*line \d+"):
        load_spec(spec)
    assert snapshot(small_db) == before


def test_unknown_model_and_key_suggest_names(small_db, tmp_path):
    spec = write_spec(tmp_path / "s.toml", db=small_db, qids=SMALL, models='[[privacy.models]]\nname = "k-anonimity"\nk = 2\n')
    expect_failure(spec, small_db, SpecError, "Unknown privacy model 'k-anonimity'. Did you mean 'k-anonymity'")
    spec.write_text(spec.read_text().replace("k-anonimity", "k-anonymity").replace("budget =", "budgett ="))
    with pytest.raises(SpecError, match="Unknown key 'budgett' in \\[optimizer\\]. Did you mean 'budget'"):
        load_spec(spec)


def test_names_that_need_quoting_work_end_to_end(tmp_path):
    """Spaces, double quotes and SQL keywords in table and column names; an injection attempt
    as a name is just a name."""
    db = tmp_path / "weird.duckdb"
    table = 'my "odd" table; DROP TABLE adult; --'
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE adult AS SELECT CAST(row_number() OVER () AS BIGINT) AS id, * FROM read_csv(?, delim=';', header=true) LIMIT 800",
                [str(ADULT / "adult.csv")])
    con.execute('CREATE TABLE "my ""odd"" table; DROP TABLE adult; --" AS SELECT id AS "select", age AS "the age", sex AS "se""x", '
                'race AS "from", "salary-class" AS "salary class" FROM adult')
    con.close()
    spec = write_spec(tmp_path / "w.toml", db=db, table=table, key="select", qids=["the age", 'se"x', "from"],
                      hierarchies={"the age": str(ADULT / "adult_hierarchy_age.csv"), 'se"x': str(ADULT / "adult_hierarchy_sex.csv"),
                                   "from": str(ADULT / "adult_hierarchy_race.csv")},
                      sensitive=["salary class"], output='rel "x"; --', keep=[],
                      models='[[privacy.models]]\nname = "k-anonymity"\nk = 3\n[[privacy.models]]\nname = "t-closeness"\nt = 0.3\n')
    out = run_release(load_spec(spec), progress=False)
    assert out.run.verification["passed"]
    con = duckdb.connect(str(db), read_only=True)
    cols = [r[0] for r in con.execute("SELECT column_name FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position", ['rel "x"; --']).fetchall()]
    still_there = con.execute("SELECT COUNT(*) FROM adult").fetchone()[0]
    mins = con.execute('SELECT MIN(n) FROM (SELECT COUNT(*) AS n FROM published."rel ""x""; --" GROUP BY "the age", "se""x", "from")').fetchone()[0]
    con.close()
    assert cols == ["ppdp_row_id", "the age", 'se"x', "from", "salary class"]
    assert still_there == 800 and mins >= 3


def test_cli_bad_input_exit_code_2_one_line(small_db, tmp_path):
    spec = write_spec(tmp_path / "s.toml", db=small_db, table="nope", qids=SMALL)
    before = snapshot(small_db)
    proc = subprocess.run([sys.executable, "-m", "ppdp.engine.app.cli", "run", str(spec), "--no-progress"], capture_output=True, text=True)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ppdp: error: Source table") and "does not exist" in lines[0]
    assert snapshot(small_db) == before


# --- the bad-input sweep: every refusal is one line, exit 2, nothing written ------------
#
# Each case builds its input in a fresh folder (a DuckDB file with 300 adult rows, and one with a
# published release), runs the ``ppdp`` command (in this process: tests/support/cli_in_process.py;
# test_cli_bad_input_exit_code_2_one_line above runs the real entry point), and checks the refusal contract:
# exactly one ``ppdp: error:`` line on stderr, exit code 2, both database files unchanged (no
# ``_ppdp`` schema where there was none, no failed run recorded) and no file created or removed.


class Sweep:
    """One case's folder: ``db`` (adult, nothing published), ``pub`` (release "pub" published)."""

    def __init__(self, tmp: Path, template: Path, published: Path) -> None:
        self.tmp = tmp
        self.db = tmp / "sourcedb.duckdb"
        self.db.write_bytes(template.read_bytes())
        self.pub = tmp / "releasedb.duckdb"
        self.pub.write_bytes(published.read_bytes())
        self.url, self.pub_url = f"duckdb://{self.db}", f"duckdb://{self.pub}"

    def spec(self, **kw) -> Path:
        kw.setdefault("qids", SMALL)
        kw.setdefault("output", "sweep")
        return write_spec(self.tmp / "s.toml", db=self.db, **kw)

    def edit(self, old: str, new: str, **kw) -> Path:
        p = self.spec(**kw)
        text = p.read_text()
        assert old in text, old
        p.write_text(text.replace(old, new, 1))
        return p

    def append(self, extra: str, **kw) -> Path:
        p = self.spec(**kw)
        p.write_text(p.read_text() + extra)
        return p

    def sql(self, statement: str) -> None:
        con = duckdb.connect(str(self.db))
        con.execute(statement)
        con.close()

    def file(self, name: str, data: bytes | str) -> Path:
        p = self.tmp / name
        p.write_bytes(data if isinstance(data, bytes) else data.encode())
        return p

    def run(self, spec: Path) -> list[str]:
        return ["run", str(spec), "--no-progress"]


def _race_without_black(w: Sweep) -> str:
    rows = [r for r in (ADULT / "adult_hierarchy_race.csv").read_text().splitlines() if not r.startswith("Black")]
    return str(w.file("race.csv", "\n".join(rows) + "\n"))


def _micro(w: Sweep, params: str) -> Path:
    w.sql("ALTER TABLE adult ADD COLUMN disease VARCHAR")
    w.sql("UPDATE adult SET disease = 'influenza'")
    return w.append(f'[method]\nname = "microaggregation"\nparams = {{ {params} }}\n', sensitive=["disease"],
                    keep=["marital-status", "education", "native-country", "workclass", "occupation", "salary-class"])


def _model(text: str) -> str:
    return "[[privacy.models]]\n" + text + "\n"


SPEC_CASES = {
    # spec errors
    "toml-syntax": lambda w: w.run(w.edit("[output]", "[output")),
    "unknown-section": lambda w: w.run(w.append("[outptu]\nname = \"x\"\n")),
    "unknown-source-key": lambda w: w.run(w.edit('key = "id"', 'key = "id"\nkee = "id"')),
    "unknown-model": lambda w: w.run(w.spec(models=_model('name = "k-anonimity"\nk = 5'))),
    "k-zero": lambda w: w.run(w.spec(models=_model('name = "k-anonymity"\nk = 0'))),
    "k-string": lambda w: w.run(w.spec(models=_model('name = "k-anonymity"\nk = "five"'))),
    "k-float": lambda w: w.run(w.spec(models=_model('name = "k-anonymity"\nk = 2.5'))),
    "t-above-one": lambda w: w.run(w.spec(models=_model('name = "t-closeness"\nt = 1.5'))),
    "l-nan": lambda w: w.run(w.spec(models=_model('name = "distinct-l-diversity"\nl = nan'))),
    "entropy-l-below-one": lambda w: w.run(w.spec(models=_model('name = "entropy-l-diversity"\nl = 0.5'))),
    "no-models": lambda w: w.run(w.spec(models="")),
    "missing-output-name": lambda w: w.run(w.edit('name = "sweep"', "")),
    "private-output-schema": lambda w: w.run(w.edit('schema = "published"', 'schema = "_PPDP"')),
    "missing-key": lambda w: w.run(w.edit('key = "id"\n', "")),
    "table-and-query": lambda w: w.run(w.spec(extra_source='query = "SELECT * FROM adult"')),
    "unknown-optimizer": lambda w: w.run(w.spec(optimizer="lattise")),
    "unknown-evaluator": lambda w: w.run(w.edit("seed = 1", 'seed = 1\nevaluator = "numbaa"')),
    "budget-zero": lambda w: w.run(w.spec(budget=0)),
    "bad-null-policy": lambda w: w.run(w.spec(extra_source='null_policy = "ignore"')),
    "unknown-hierarchy-type": lambda w: w.run(w.spec(hierarchies={"age": '{ type = "bins" }'})),
    "negative-interval-width": lambda w: w.run(w.spec(hierarchies={"age": '{ type = "intervals", widths = [-5] }'})),
    "masking-levels-beyond-characters": lambda w: w.run(w.spec(hierarchies={"age": '{ type = "masking", levels = 5 }'})),
    "unknown-method": lambda w: w.run(w.append('[method]\nname = "microaggregaton"\n')),
    "microaggregation-without-catalogue": lambda w: w.run(w.append('[method]\nname = "microaggregation"\n')),
    "heterogeneous-unknown-param": lambda w: w.run(w.append('[method]\nname = "heterogeneous"\nparams = { secs = 1 }\n')),
    "generalization-with-method-params": lambda w: w.run(w.append('[method]\nname = "generalization"\nparams = { x = 1 }\n')),
    "column-with-two-roles": lambda w: w.run(w.spec(keep=["age", "marital-status", "education", "native-country", "workclass",
                                                          "occupation"])),
    "undeclared-columns": lambda w: w.run(w.spec(keep=[])),
    "access-roles-on-duckdb": lambda w: w.run(w.append('[access]\nroles = ["analyst"]\n')),
    # the data
    "missing-table": lambda w: w.run(w.spec(table="adlut")),
    "missing-qid-column": lambda w: w.run(w.spec(qids=["age", "sex", "raec"],
                                                 hierarchies={"raec": str(ADULT / "adult_hierarchy_race.csv")})),
    "key-not-unique": lambda w: w.run(w.spec(key="age", qids=["sex", "race", "education"], keep=["id", "marital-status",
                                             "native-country", "workclass", "occupation"])),
    "key-with-nulls": lambda w: (w.sql("UPDATE adult SET id = NULL WHERE id = 3"), w.run(w.spec()))[1],
    "nulls-in-a-qid": lambda w: (w.sql("UPDATE adult SET age = NULL WHERE id < 4"), w.run(w.spec()))[1],
    "empty-table": lambda w: (w.sql("DELETE FROM adult"), w.run(w.spec()))[1],
    "k-larger-than-table": lambda w: w.run(w.spec(models=_model('name = "k-anonymity"\nk = 301'))),
    "l-above-distinct-values": lambda w: w.run(w.spec(models=_model('name = "distinct-l-diversity"\nl = 3'))),
    "query-not-sql": lambda w: w.run(w.edit('table = "adult"', 'query = "SELEC * FROM adult"')),
    "query-two-statements": lambda w: w.run(w.edit('table = "adult"', 'query = "SELECT * FROM adult; DROP TABLE adult"')),
    "query-not-a-select": lambda w: w.run(w.edit('table = "adult"', 'query = "DELETE FROM adult"')),
    # files
    "hierarchy-missing": lambda w: w.run(w.spec(hierarchies={"age": str(w.tmp / "none.csv")})),
    "hierarchy-not-utf8": lambda w: w.run(w.spec(hierarchies={"sex": str(w.file("sex.csv", "Male;*\nFemale;*\nM\xe4nnlich;*\n"
                                                                                   .encode("latin-1")))})),
    "hierarchy-is-a-directory": lambda w: w.run(w.spec(hierarchies={"age": str(w.tmp)})),
    "hierarchy-misses-a-value": lambda w: w.run(w.spec(hierarchies={"race": _race_without_black(w)})),
    "hierarchy-conflicting-leaf": lambda w: w.run(w.spec(hierarchies={"sex": str(w.file("sex.csv", "Male;*\nFemale;*\nMale;X\n"))})),
    "hierarchy-one-level": lambda w: w.run(w.spec(hierarchies={"sex": str(w.file("sex.csv", "Male\nFemale\n"))})),
    "spec-missing": lambda w: ["run", str(w.tmp / "nope.toml")],
    "spec-not-utf8": lambda w: ["run", str(w.file("latin.toml", "# \xe4\n".encode("latin-1")))],
    "spec-is-a-directory": lambda w: ["run", str(w.tmp)],
    "source-file-missing": lambda w: w.run(w.edit('table = "adult"', 'file = "nope.csv"')),
    "source-file-wrong-kind": lambda w: (w.file("x.txt", "a,b\n1,2\n"), w.run(w.edit('table = "adult"', 'file = "x.txt"')))[1],
    "source-file-without-key": lambda w: (w.file("x.csv", "age,sex,race\n39,Male,White\n"),
                                          w.run(w.edit('table = "adult"', 'file = "x.csv"', keep=[])))[1],
    "catalogue-missing": lambda w: w.run(_micro(w, f'catalogue = "{w.tmp / "none.csv"}"')),
    "catalogue-misses-a-value": lambda w: w.run(_micro(w, 'catalogue = "diseases32"')),
    # URLs
    "unknown-connector": lambda w: w.run(w.edit(f'"duckdb://{w.db}"', '"mysql://host/db"')),
    "postgres-nobody-listening": lambda w: w.run(w.edit(f'"duckdb://{w.db}"', '"postgresql://u@127.0.0.1:1/db"')),
    "duckdb-unknown-url-option": lambda w: w.run(w.edit(f'"duckdb://{w.db}"', f'"duckdb://{w.db}?fast=1"')),
    "read-only-command-on-a-missing-file": lambda w: ["show", "x", "--db", f"duckdb://{w.tmp / 'missing.duckdb'}"],
    "runs-not-a-url": lambda w: ["runs", "--db", "notaurl"],
    "init-in-a-missing-folder": lambda w: ["init", "--db", f"duckdb://{w.tmp / 'no' / 'x.duckdb'}"],
    # models and optimizer parameters
    "suppression-limit-2.5": lambda w: w.run(w.edit("seed = 1", "seed = 1\nparams = { suppression_limit = 2.5 }")),
    "lattice-mode-fast": lambda w: w.run(w.edit("seed = 1", 'seed = 1\nparams = { mode = "fast" }')),
    "lattice-unknown-param": lambda w: w.run(w.edit("seed = 1", 'seed = 1\nparams = { modee = "bound" }')),
    "ga-pop-size-zero": lambda w: w.run(w.edit("seed = 1", "seed = 1\nparams = { pop_size = 0 }", optimizer="ga")),
    "de-unknown-strategy": lambda w: w.run(w.edit("seed = 1", 'seed = 1\nparams = { strategy = "best/9" }', optimizer="de")),
    "flash-with-a-non-monotone-model": lambda w: w.run(w.spec(optimizer="flash", models=_model('name = "t-closeness"\nt = 0.2'))),
    # command-line arguments
    "no-command": lambda w: [],
    "unknown-command": lambda w: ["frob"],
    "run-without-a-spec": lambda w: ["run"],
    "export-without-a-file": lambda w: ["export"],
    "unknown-option": lambda w: ["show", "pub", "--database", w.pub_url],
    "verify-unknown-release": lambda w: ["verify", "nope", "--db", w.pub_url],
    "show-unknown-release": lambda w: ["show", "nope", "--db", w.pub_url],
    "runs-unknown-release": lambda w: ["runs", "nope", "--db", w.pub_url],
    "sql-unknown-release": lambda w: ["sql", "nope", "--db", w.pub_url],
    "sql-unknown-dialect": lambda w: ["sql", "pub", "--dialect", "oracle", "--db", w.pub_url],
    "export-private-schema": lambda w: ["export", str(w.tmp / "o.duckdb"), "--schema", "_ppdp", "--db", w.pub_url],
    "export-over-an-existing-file": lambda w: ["export", str(w.file("exists.duckdb", b"")), "--db", w.pub_url],
    "export-into-a-missing-folder": lambda w: ["export", str(w.tmp / "no" / "o.duckdb"), "--db", w.pub_url],
    "job-run-unknown": lambda w: ["job", "run", "nope", "--db", w.pub_url],
    "job-certificate-unknown": lambda w: ["job", "certificate", "nope", "--db", w.pub_url],
    "job-register-bad-spec": lambda w: ["job", "register", str(w.spec(models=_model('name = "k-anonymity"\nk = 0'))),
                                        "--db", w.url],
    "job-certificate-bad-format": lambda w: ["job", "certificate", "pub", "--format", "pdf", "--db", w.pub_url],
}


@pytest.fixture(scope="module")
def sweep_sources(tmp_path_factory) -> tuple[Path, Path]:
    """(adult, 300 rows, nothing published; the same with release "pub" published)."""
    folder = tmp_path_factory.mktemp("sweep")
    template = load_adult(folder / "template.duckdb", rows=300)
    published = folder / "withrelease.duckdb"
    published.write_bytes(template.read_bytes())
    run_release(load_spec(write_spec(folder / "pub.toml", db=published, qids=SMALL, output="pub")), progress=False)
    return template, published


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


# Parameters no release can meet on this data: refused by the privacy model before any write,
# exit 3 (docs/reference/exit-codes.md), not 2, so an orchestrator tells them from a malformed spec.
MODEL_REFUSALS = {"k-larger-than-table", "l-above-distinct-values"}


@pytest.mark.parametrize("case", sorted(SPEC_CASES))
def test_bad_input_sweep(sweep_sources, tmp_path, case):
    from tests.support.cli import assert_refused, file_state, ppdp

    w = Sweep(tmp_path, *sweep_sources)
    argv = SPEC_CASES[case](w)
    before, files = (file_state(w.db), file_state(w.pub)), _files(tmp_path)
    assert_refused(ppdp(*argv), code=3 if case in MODEL_REFUSALS else 2)
    assert (file_state(w.db), file_state(w.pub)) == before, "a refused command must write nothing"
    assert _files(tmp_path) == files, "a refused command must create or remove no file"


# --- probe 37: names, risk inputs, signals, a full disk, late errors ----------------------------
#
# Each case below failed at 1175431 (PPDP_CLI_SRC=/path/to/that/src runs its ``ppdp``, see
# benchmarks/results/probe37/trust-b.md) and passes now.


def _in_pub(w: Sweep, statement: str) -> None:
    con = duckdb.connect(str(w.pub))
    con.execute(statement)
    con.close()


def _weighted(w: Sweep, expr: str) -> list[str]:
    w.sql(f"ALTER TABLE adult ADD COLUMN wt DOUBLE; UPDATE adult SET wt = {expr}")
    return ["risk", "--table", "main.adult", "--qids", "age,sex", "--weight", "wt", "--db", w.url]


PROBE37_CASES = {
    # item 8: reserved names refused when the spec is read
    "output-name-is-a-delta": lambda w: w.run(w.spec(output="pub__delta")),
    "output-name-is-a-version-table": lambda w: w.run(w.spec(output="pub__v1")),
    "output-name-is-a-version-table-other-case": lambda w: w.run(w.spec(output="Pub__V12")),
    "qid-named-ppdp_row_id": lambda w: (w.sql('ALTER TABLE adult RENAME COLUMN sex TO ppdp_row_id'),
                                        w.run(w.spec(qids=["age", "ppdp_row_id", "race"],
                                                     hierarchies={"ppdp_row_id": str(ADULT / "adult_hierarchy_sex.csv")},
                                                     keep=["marital-status", "education", "native-country", "workclass",
                                                           "occupation"])))[1],
    "kept-column-named-ppdp_row_id": lambda w: (w.sql("ALTER TABLE adult ADD COLUMN PPDP_ROW_ID INTEGER"),
                                                w.run(w.spec(keep=["marital-status", "education", "native-country",
                                                                   "workclass", "occupation", "PPDP_ROW_ID"])))[1],
    # items 9 and 11: sampling weights and population tables
    "weight-below-one": lambda w: _weighted(w, "CASE WHEN id = 1 THEN 0.5 ELSE 10 END"),
    "weight-null": lambda w: _weighted(w, "CASE WHEN id = 1 THEN NULL ELSE 10 END"),
    "weight-zero": lambda w: _weighted(w, "CASE WHEN sex = 'Female' THEN 0 ELSE 10 END"),
    "weight-negative": lambda w: _weighted(w, "CASE WHEN sex = 'Female' THEN -1 ELSE 10 END"),
    "population-smaller-than-the-sample": lambda w: (w.sql("CREATE TABLE pop AS SELECT * FROM adult WHERE id % 2 = 0"),
                                                     ["risk", "--table", "main.adult", "--qids", "age,sex",
                                                      "--population-table", "main.pop", "--db", w.url])[1],
    "raw-population-against-a-release": lambda w: (_in_pub(w, "CREATE TABLE popraw AS SELECT CAST(age AS VARCHAR) AS age, "
                                                          "sex, race FROM adult"),
                                                   ["risk", "pub", "--population-table", "main.popraw", "--db", w.pub_url])[1],
    # item 16: a worker refuses a missing DuckDB file, as run does
    "worker-on-a-missing-duckdb-file": lambda w: ["worker", "--once", "--db", f"duckdb://{w.tmp / 'typo.duckdb'}"],
    # item 20: late errors
    "job-history-unknown": lambda w: ["job", "history", "nope", "--db", w.pub_url],
    "risk-table-with-version": lambda w: ["risk", "--table", "main.adult", "--qids", "age", "--version", "3", "--db", w.pub_url],
}


@pytest.mark.parametrize("case", sorted(PROBE37_CASES))
def test_probe37_bad_input(sweep_sources, tmp_path, case):
    from tests.support.cli import assert_refused, file_state, ppdp

    w = Sweep(tmp_path, *sweep_sources)
    argv = PROBE37_CASES[case](w)
    before, files = (file_state(w.db), file_state(w.pub)), _files(tmp_path)
    line = assert_refused(ppdp(*argv), code=2)
    assert "Traceback" not in line
    assert (file_state(w.db), file_state(w.pub)) == before, "a refused command must write nothing"
    assert _files(tmp_path) == files, "a refused command must create or remove no file"


def test_probe37_spec_with_a_utf8_bom_is_read(sweep_sources, tmp_path):
    """Item 19: a spec saved with a byte-order mark (Notepad) is the same TOML."""
    from tests.support.cli import assert_ok, ppdp

    w = Sweep(tmp_path, *sweep_sources)
    spec = w.spec()
    spec.write_bytes(b"\xef\xbb\xbf" + spec.read_bytes())
    assert "published" in assert_ok(ppdp(*w.run(spec)))


def test_probe37_table_with_a_dot_in_its_name(sweep_sources, tmp_path):
    """Item 20: --table names a table whose name has a dot (and SCHEMA.TABLE still works)."""
    from tests.support.cli import assert_ok, ppdp

    w = Sweep(tmp_path, *sweep_sources)
    w.sql('CREATE TABLE "my.table" AS SELECT * FROM adult')
    out = assert_ok(ppdp("risk", "--table", "my.table", "--qids", "age,sex", "--db", w.url))
    assert '"main"."my.table": 300 rows' in out
    assert '"main"."my.table": 300 rows' in assert_ok(ppdp("risk", "--table", "main.my.table", "--qids", "age,sex", "--db", w.url))


def test_probe37_sigint_or_sigterm_during_a_duckdb_query_exits_130(tmp_path):
    """Item 13: a signal that lands inside a DuckDB query ends with 130 and the documented line,
    never 70 with "RuntimeError: Query interrupted"; the database holds no version."""
    import os
    import shutil
    import signal
    import time

    from tests.support.cli import OLD_SRC, _src_module

    source = load_adult(tmp_path / "big.duckdb", rows=2000)
    con = duckdb.connect(str(source))
    # every query on the source computes a large sum first (about a second): the run is mostly
    # DuckDB queries, so the signals land inside them
    con.execute("CREATE VIEW slow AS SELECT * FROM adult WHERE id > (SELECT SUM(x % 7) FROM range(100000000) t(x)) * 0")
    con.close()
    env = {**os.environ, "PYTHONPATH": OLD_SRC or str(Path(__file__).resolve().parents[2] / "src")}
    module = _src_module(OLD_SRC) if OLD_SRC else "ppdp.engine.app.cli"

    def tables(db: Path) -> list[tuple]:
        c = duckdb.connect(str(db), read_only=True)
        try:
            return c.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'published' "
                             "ORDER BY 1").fetchall()
        finally:
            c.close()

    # Six runs at once, each on its own copy of the database, each signalled at a different
    # point of its run (imports, fingerprint, histogram, search).
    runs = []
    for i, sig in enumerate([signal.SIGINT, signal.SIGTERM] * 3):
        db = shutil.copy(source, tmp_path / f"run{i}.duckdb")
        spec = write_spec(tmp_path / f"s{i}.toml", db=Path(db), table="slow", qids=SMALL)
        proc = subprocess.Popen([sys.executable, "-m", module, "run", str(spec), "--no-progress"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        runs.append((sig, Path(db), proc, time.monotonic() + 3 + 0.8 * i, tables(Path(db))))
    ended = []
    try:
        for sig, _db, proc, when, _before in runs:
            time.sleep(max(0.0, when - time.monotonic()))
            proc.send_signal(sig)
        for sig, db, proc, _when, before in runs:
            _out, err = proc.communicate(timeout=300)
            ended.append((sig, db, proc.returncode, err, before))
    finally:  # a run left behind by a failure here must not outlive the test
        for _sig, _db, proc, _when, _before in runs:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()
    codes = []
    for sig, db, returncode, err, before in ended:
        if returncode in (0, 99):
            continue  # finished (published, or nothing changed since) before the signal
        if returncode == -sig and not err.strip():
            continue  # arrived while Python was still starting (a loaded machine), before ppdp's main ran
        codes.append(returncode)
        assert returncode == 130, f"signal {sig!r} -> exit {returncode}\n{err[-2000:]}"
        assert "ppdp: interrupted" in err and "Traceback" not in err
        if "is published and verified" in err:
            continue  # the signal came after the commit, and the line says so
        assert tables(db) == before, "the interrupted run published nothing"
    assert codes, "no run was interrupted"


def test_probe37_a_full_disk_is_one_line_and_leaves_no_private_schema(tmp_path):
    """Item 14: a write the file system refuses (RLIMIT_FSIZE just above the file's size, the
    way a full disk refuses it) ends with one line, exit 2, and the file as it was: no empty
    ``_ppdp`` behind the first run."""
    import os
    import resource
    import signal

    from tests.support.cli import OLD_SRC, _src_module, assert_refused, file_state

    db = load_adult(tmp_path / "full.duckdb", rows=2000)
    spec = write_spec(tmp_path / "s.toml", db=db, qids=SMALL)
    before = file_state(db)
    limit = db.stat().st_size + 20_000

    def small_disk() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead of killing
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = {**os.environ, "PYTHONPATH": OLD_SRC or str(Path(__file__).resolve().parents[2] / "src")}
    module = _src_module(OLD_SRC) if OLD_SRC else "ppdp.engine.app.cli"
    proc = subprocess.run([sys.executable, "-m", module, "run", str(spec), "--no-progress"], preexec_fn=small_disk,
                          capture_output=True, text=True, env=env, timeout=600)
    assert_refused(proc, "File too large", code=2)
    assert file_state(db) == before  # (opening it replays what the write-ahead log holds)


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_probe37_a_signal_that_the_database_turns_into_its_own_error_exits_130(signame):
    """Item 13, deterministically: DuckDB runs Python's signal handler inside a query
    (PyErr_CheckSignals), swallows the KeyboardInterrupt it raises and raises its own error,
    "RuntimeError: Query interrupted" (exit 70 before). A command whose query does exactly that
    ends with 130 and the documented line."""
    import os

    from tests.support.cli import OLD_SRC, _src_module

    module = _src_module(OLD_SRC) if OLD_SRC else "ppdp.engine.app.cli"
    code = ("import os, signal, sys\n"
            f"import {module} as c\n"
            "def query(args):\n"
            "    try:\n"
            f"        os.kill(os.getpid(), signal.{signame})\n"
            "        for _ in range(10 ** 6):  # the handler runs at the next bytecode\n"
            "            pass\n"
            "    except KeyboardInterrupt:\n"
            "        raise RuntimeError('Query interrupted') from None\n"
            "    return 0\n"
            "c.COMMANDS['runs'] = query\n"
            "sys.exit(c.main(['runs', '--db', 'duckdb://:memory:']))\n")
    env = {**os.environ, "PYTHONPATH": OLD_SRC or str(Path(__file__).resolve().parents[2] / "src")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 130, f"exit {proc.returncode}\n{proc.stderr[-2000:]}"
    assert proc.stderr.strip() == "ppdp: interrupted; nothing was published by the interrupted run."


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_a_signal_raised_again_while_the_first_unwinds_still_exits_130(signame):
    """DuckDB raises the signal again once it has stopped its query. A second signal while the
    first is being reported must not escape the handler and kill the process by the signal
    (exit -2 or -15) instead of the documented 130 and line."""
    import os

    code = ("import os, signal, sys\n"
            "import ppdp.engine.app.cli as c\n"
            "class Stderr:  # the signal comes again while the first one is being reported\n"
            "    def __init__(self, real):\n"
            "        self.real, self.sent = real, False\n"
            "    def write(self, text):\n"
            "        if not self.sent:\n"
            "            self.sent = True\n"
            f"            os.kill(os.getpid(), signal.{signame})\n"
            "            for _ in range(10 ** 6):\n"
            "                pass\n"
            "        return self.real.write(text)\n"
            "    def flush(self):\n"
            "        self.real.flush()\n"
            "def query(args):\n"
            "    sys.stderr = Stderr(sys.__stderr__)\n"
            f"    os.kill(os.getpid(), signal.{signame})\n"
            "    for _ in range(10 ** 6):\n"
            "        pass\n"
            "    return 0\n"
            "c.COMMANDS['runs'] = query\n"
            "sys.exit(c.main(['runs', '--db', 'duckdb://:memory:']))\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 130, f"exit {proc.returncode}\n{proc.stderr[-2000:]}"
    assert proc.stderr.strip() == "ppdp: interrupted; nothing was published by the interrupted run."


# Where a signal lands after the run's transaction committed: while the command prints its
# summary, or before the command holds the outcome at all (while the run builds it), where it
# waits until the command does (ppdp/handoff.py; this window said "nothing was published"
# beside a published version before). Either way the command ends with 130 and says the version
# is published, which it is.
AFTER_COMMIT = {
    "summary-SIGINT": ("c._print_run = lambda run: interrupt()\n", "SIGINT"),
    "outcome-SIGINT": ("real = r.ReleaseOutcome\n"
                       "r.ReleaseOutcome = lambda *a, **k: (interrupt(), real(*a, **k))[1]\n", "SIGINT"),
    "outcome-SIGTERM": ("real = r.ReleaseOutcome\n"
                        "r.ReleaseOutcome = lambda *a, **k: (interrupt(), real(*a, **k))[1]\n", "SIGTERM"),
}


@pytest.mark.parametrize("case", sorted(AFTER_COMMIT))
def test_a_signal_after_the_commit_says_the_version_is_published(tmp_path, case):
    import os

    patch, signame = AFTER_COMMIT[case]
    db = load_adult(tmp_path / "late.duckdb", rows=300)
    spec = write_spec(tmp_path / "late.toml", db=db, qids=["age", "sex", "race"], output="late")
    code = ("import os, signal, sys\n"
            "import ppdp.engine.app.cli as c\n"
            "import ppdp.engine.release.run as r\n"
            "def interrupt():\n"
            f"    os.kill(os.getpid(), signal.{signame})\n"
            "    for _ in range(10 ** 6):  # a raise lands here, at the next bytecode, unless it waits\n"
            "        pass\n"
            + patch +
            f"sys.exit(c.main(['run', {str(spec)!r}, '--no-progress']))\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 130, f"exit {proc.returncode}\n{proc.stderr[-2000:]}"
    assert "nothing was published" not in proc.stderr, proc.stderr[-2000:]
    assert "is published and verified" in proc.stderr, proc.stderr[-2000:]
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM published.late").fetchone()[0] > 0


# --- ppdp report --html: the file is written whole or not at all, and never over what it must not --
#
# Driven through tests/support/cli_under_test.py, so that the same cases can be replayed against an
# older commit's CLI (PPDP_TEST_CLI_MODULE=ppdp.engine.cli PPDP_TEST_CLI_PATH=/old/src).


@pytest.fixture(scope="module")
def report_db(tmp_path_factory) -> Path:
    """A DuckDB file with release "pub" published (adult, 300 rows), made through the CLI."""
    from tests.support.cli_under_test import ppdp

    folder = tmp_path_factory.mktemp("report")
    db = load_adult(folder / "pub.duckdb", rows=300)
    proc = ppdp("run", str(write_spec(folder / "pub.toml", db=db, qids=SMALL, output="pub")), "--no-progress")
    assert proc.returncode == 0, proc.stderr
    return db


def _report_case(report_db: Path, tmp_path: Path, target_of, *extra: str, env: dict | None = None):
    from tests.support.cli_under_test import ppdp

    db = tmp_path / "pub.duckdb"
    db.write_bytes(report_db.read_bytes())
    target = target_of(tmp_path, db)
    before_db, files = snapshot(db), {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    proc = ppdp("report", "pub", "--html", str(target), "--db", f"duckdb://{db}", *extra, env=env)
    after = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    return proc, before_db == snapshot(db), files == after, target


REPORT_CASES = {
    "existing-file": (lambda tmp, db: (tmp / "old.html").write_text("<p>kept</p>") and tmp / "old.html", (), "already exists"),
    "the-database-itself": (lambda tmp, db: db, (), "database"),
    "the-database-itself-with-force": (lambda tmp, db: db, ("--force",), "database"),
    "missing-folder": (lambda tmp, db: tmp / "no" / "such" / "r.html", (), "does not exist"),
    "a-directory": (lambda tmp, db: (tmp / "adir").mkdir() or tmp / "adir", (), "directory"),
}


@pytest.mark.parametrize("case", sorted(REPORT_CASES))
def test_report_refuses_a_bad_target(report_db, tmp_path, case):
    target_of, extra, fragment = REPORT_CASES[case]
    proc, db_same, files_same, _ = _report_case(report_db, tmp_path, target_of, *extra)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("ppdp: error: ") and fragment in lines[0], \
        f"exit {proc.returncode}\n{proc.stderr[-2000:]}"
    assert db_same and files_same, "a refused report must write nothing"


def test_report_force_replaces_another_file(report_db, tmp_path):
    proc, db_same, _, target = _report_case(
        report_db, tmp_path, lambda tmp, db: (tmp / "old.html").write_text("<p>kept</p>") and tmp / "old.html", "--force")
    assert proc.returncode == 0, proc.stderr
    assert db_same and target.read_text().startswith("<!DOCTYPE html>") and not list(tmp_path.glob(".*.tmp"))


def test_report_on_a_full_disk_is_one_line_and_leaves_nothing(report_db, tmp_path):
    """A file-size limit of 4 KiB (RLIMIT_FSIZE: the write fails as on a full disk) in a subprocess."""
    import os
    import resource

    from tests.support.cli_under_test import CLI_MODULE, CLI_PATH

    db = tmp_path / "pub.duckdb"
    db.write_bytes(report_db.read_bytes())
    out = tmp_path / "out"
    out.mkdir()
    env = dict(os.environ) | ({"PYTHONPATH": CLI_PATH} if CLI_PATH else {})
    proc = subprocess.run([sys.executable, "-m", CLI_MODULE, "report", "pub", "--html", str(out / "r.html"),
                           "--db", f"duckdb://{db}"], capture_output=True, text=True, env=env, timeout=600,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096)))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("ppdp: error: Cannot write the report"), \
        f"exit {proc.returncode}\n{proc.stderr[-2000:]}"
    assert list(out.iterdir()) == [], "nothing half-written"
# --- the person unit (docs/design/person_unit.md): source.person ---------------------------


@pytest.fixture
def visits_db(tmp_path) -> Path:
    from tests.support.visits import make_visits

    return make_visits(tmp_path / "visits.duckdb", persons=300)


def _visits_spec(tmp_path: Path, db: Path, person: str, **kw) -> Path:
    from tests.support.visits import VISIT_QIDS, VISIT_SA

    return write_spec(tmp_path / "v.toml", db=db, table="visits", key="visit_id", qids=kw.pop("qids", VISIT_QIDS),
                      sensitive=[VISIT_SA], keep=[], drop=kw.pop("drop", ["visit_month"]), output="visits",
                      extra_source=f"person = {person!r}".replace("'", '"'), **kw)


def _cli_one_line_exit_2(spec: Path, db: Path, pattern: str) -> None:
    before = snapshot(db)
    proc = subprocess.run([sys.executable, "-m", "ppdp.engine.app.cli", "run", str(spec), "--no-progress"],
                          capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and __import__("re").search(pattern, lines[0]), proc.stderr
    assert snapshot(db) == before


def test_person_column_missing(visits_db, tmp_path):
    spec = _visits_spec(tmp_path, visits_db, "persn_id", drop=["visit_month", "person_id"])
    expect_failure(spec, visits_db, DataError, r"The person column 'persn_id' is not in .*Did you mean 'person_id'\?")
    _cli_one_line_exit_2(spec, visits_db, r"person column 'persn_id' is not in")


def test_person_column_with_nulls(visits_db, tmp_path):
    con = duckdb.connect(str(visits_db))
    con.execute("UPDATE visits SET person_id = NULL WHERE visit_id IN (3, 7)")
    con.close()
    spec = _visits_spec(tmp_path, visits_db, "person_id")
    expect_failure(spec, visits_db, DataError, r"The person column 'person_id' is NULL in 2 row\(s\)")
    _cli_one_line_exit_2(spec, visits_db, r"is NULL in 2 row")


def test_person_column_is_a_qid(visits_db, tmp_path):
    spec = _visits_spec(tmp_path, visits_db, "age")
    with pytest.raises(SpecError, match=r"source.person 'age' is also a quasi-identifier"):
        load_spec(spec)
    _cli_one_line_exit_2(spec, visits_db, r"source.person 'age' is also a quasi-identifier")


def test_person_contradicting_qids(visits_db, tmp_path):
    con = duckdb.connect(str(visits_db))
    # two persons whose second visit says another age: a person-level QID that contradicts itself
    con.execute("UPDATE visits SET age = age + 1 WHERE visit_id IN "
                "(SELECT MAX(visit_id) FROM visits GROUP BY person_id HAVING COUNT(*) > 1 ORDER BY 1 LIMIT 2)")
    con.close()
    spec = _visits_spec(tmp_path, visits_db, "person_id")
    expect_failure(spec, visits_db, DataError, r"^2 person\(s\) have rows that differ on the quasi-identifiers")
    _cli_one_line_exit_2(spec, visits_db, r"2 person\(s\) have rows that differ")


def test_person_row_varying_qid_is_refused(visits_db, tmp_path):
    from tests.support.visits import VISIT_QIDS

    spec = _visits_spec(tmp_path, visits_db, "person_id", qids=[*VISIT_QIDS, "visit_month"], drop=[],
                        hierarchies={"visit_month": '{ type = "intervals", widths = [3, 6] }'})
    expect_failure(spec, visits_db, DataError, r"person\(s\) have rows that differ on the quasi-identifiers")


def test_person_varying_must_name_a_qid(visits_db, tmp_path):
    spec = _visits_spec(tmp_path, visits_db, "person_id")
    text = spec.read_text().replace('person = "person_id"', 'person = "person_id"\nperson_varying = ["visit_month"]')
    spec.write_text(text)
    with pytest.raises(SpecError, match=r"source.person_varying names 'visit_month', which is not a quasi-identifier"):
        load_spec(spec)
    _cli_one_line_exit_2(spec, visits_db, r"source.person_varying names 'visit_month'")


def test_person_varying_refuses_sensitive_models(visits_db, tmp_path):
    from tests.support.visits import VISIT_QIDS

    spec = _visits_spec(tmp_path, visits_db, "person_id", qids=[*VISIT_QIDS, "visit_month"], drop=[],
                        hierarchies={"visit_month": '{ type = "intervals", widths = [3, 6] }'},
                        models='[[privacy.models]]\nname = "k-anonymity"\nk = 5\n[[privacy.models]]\nname = "distinct-l-diversity"\nl = 2\n')
    spec.write_text(spec.read_text().replace('person = "person_id"', 'person = "person_id"\nperson_varying = ["visit_month"]'))
    expect_failure(spec, visits_db, SpecError, r"distinct-l-diversity cannot count persons when quasi-identifiers vary by row")


def test_sigint_inside_code_run_by_exec_still_exits_130(tmp_path):
    """CPython makes a ``python -m`` process kill itself by SIGINT at exit when exactly
    KeyboardInterrupt left code run by ``exec`` of a string (as dataclasses and Numba build
    functions during imports), even if the CLI caught it: the CLI's handler must raise its
    subclass, so the run ends with 130. The signal lands inside such code here every time."""
    import os

    (tmp_path / "signal_in_exec.py").write_text(
        "import os, signal, sys\n"
        "from ppdp.engine.app import cli\n"
        "cli._on_sigterm()\n"
        "try:\n"
        "    exec('import os, signal\\nos.kill(os.getpid(), signal.SIGINT)\\nfor _ in range(10**6): pass')\n"
        "except KeyboardInterrupt as exc:\n"
        "    print(type(exc).__name__, file=sys.stderr)\n"
        "sys.exit(130)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(Path(__file__).resolve().parents[2] / "src")])}
    proc = subprocess.run([sys.executable, "-m", "signal_in_exec"], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 130, (proc.returncode, proc.stderr[-1000:])
    assert proc.stderr.strip() == "Interrupted"
