"""Everything ppdp hands out carries no source value that the release itself does not show.

One audit over every shareable output of a release (the external report, ``ppdp job certificate``
in JSON and Markdown, the export file, and the ``--json`` of ``run``, ``job run``, ``verify`` and
``risk``): the source holds one person with a unique value in every column (``U``) and one person
who is suppressed (``S``: a NULL quasi-identifier under ``null_policy = "suppress"``) with unique
values of their own; every planted value that the published view does not show is searched for
in every output, and none may be found. Run for the three release methods, on DuckDB and on a
real PostgreSQL server. dbt's test failures (the rows ``--store-failures`` stores, dbt's log,
output and result files) are audited in one dbt run, on DuckDB (slow, as the other dbt tests).

The generalization release also carries the two models whose verification SQL used to hold
source values: t-closeness with the ordered ground distance (the whole sensitive domain as
literals, S's diagnosis included) and delta-presence (the research rule, here naming a value
that no released row shows).

Every output is produced through the command line (tests/support/cli_under_test.py), so the test
can be replayed against an older commit's CLI:
``PPDP_TEST_CLI_MODULE=ppdp.engine.cli PPDP_TEST_CLI_PATH=/old/src pytest tests/releases/test_shareable_audit.py``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import duckdb
import polars as pl
import pytest

from ppdp.connectors import connect
from tests.conftest import ADULT, toml_str, write_spec
from tests.support import paths as PATHS
from tests.support.cli_under_test import ppdp

QIDS = ["age", "sex", "race", "education"]
ROWS = 400
U_KEY, S_KEY = 7_310_019, 7_310_023  # no other key comes near them
DISEASES = [line.split(";")[0] for line in (PATHS.CATALOGUES / "diseases32.csv").read_text().splitlines()]
# U and S hold the last two diseases of the catalogue; everyone else one of the first 30
U_DISEASE, S_DISEASE = DISEASES[-2], DISEASES[-1]
RULE_VALUE = "Zz-rule-only-value"  # named by the delta-presence research rule, held by nobody
KEPT = ["marital-status", "native-country", "workclass", "occupation", "salary-class"]


def _frame(method: str) -> pl.DataFrame:
    frame = pl.read_csv(ADULT / "adult.csv", separator=";", n_rows=ROWS)
    frame = frame.with_row_index("id", offset=1).with_columns(pl.col("id").cast(pl.Int64))
    frame = frame.with_columns(pl.col("age").cast(pl.Int64),
                               pl.Series("disease", [DISEASES[i % 30] for i in range(frame.height)]))
    u = {"id": U_KEY, "age": 90, "sex": "Female", "race": "Amer-Indian-Eskimo", "education": "Doctorate",
         "marital-status": "Zz-U-marital", "native-country": "Zz-U-country", "workclass": "Zz-U-workclass",
         "occupation": "Zz-U-occupation", "salary-class": "Zz-U-salary", "disease": U_DISEASE}
    # microaggregation and the heterogeneous method group every record (no suppression, no NULL
    # quasi-identifier): there S is released like anyone else, and only U's and S's keys stay hidden
    nulls = method == "generalization"
    s = {"id": S_KEY, "age": None if nulls else 17, "sex": None if nulls else "Male",
         "race": None if nulls else "Other", "education": None if nulls else "Preschool",
         "marital-status": "Zz-S-marital", "native-country": "Zz-S-country", "workclass": "Zz-S-workclass",
         "occupation": "Zz-S-occupation", "salary-class": "Zz-S-salary", "disease": S_DISEASE}
    extra = pl.DataFrame([u, s], schema=frame.schema)
    return pl.concat([frame, extra])


PLANTED = [str(U_KEY), str(S_KEY), U_DISEASE, S_DISEASE, RULE_VALUE,
           *[f"Zz-{p}-{c}" for p in "US" for c in ("marital", "country", "workclass", "occupation", "salary")]]


@pytest.fixture(params=["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)])
def database(request, tmp_path, method) -> Iterator[str]:
    """URL of a database holding main.adult / public.adult (``_frame``)."""
    frame = _frame(method)
    if request.param == "duckdb":
        url = f"duckdb://{tmp_path / 'audit.duckdb'}"
        con = connect(url)
        try:
            con.write_frame("main", "adult", frame)
        finally:
            con.close()
        yield url
        return
    server = request.getfixturevalue("postgres_server")
    name = f"t_audit_{uuid.uuid4().hex[:8]}"
    admin = connect(server.url)
    try:
        admin.execute(f'CREATE DATABASE "{name}"')
        url = server.url_for(name)
        con = connect(url)
        try:
            con.write_frame("public", "adult", frame)
        finally:
            con.close()
        yield url
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        admin.close()


MODELS = {
    "generalization": ('[[privacy.models]]\nname = "k-anonymity"\nk = 5\n'
                       '[[privacy.models]]\nname = "t-closeness"\nt = 0.9\ndistance = "ordered"\n'
                       '[[privacy.models]]\nname = "delta-presence"\ndmin = 0.0\ndmax = 1.0\n'
                       f"research = {toml_str(f'workclass IS NULL OR workclass <> {chr(39)}{RULE_VALUE}{chr(39)}')}\n"),
    "microaggregation": '[[privacy.models]]\nname = "k-anonymity"\nk = 5\n',
    "heterogeneous": '[[privacy.models]]\nname = "k-anonymity"\nk = 5\n',
}
METHOD = {
    "generalization": "",
    "microaggregation": '[method]\nname = "microaggregation"\nparams = { catalogue = "diseases32" }\n',
    "heterogeneous": '[method]\nname = "heterogeneous"\nparams = { initial = "k-member", seconds = 2 }\n',
}


def _spec(path: Path, url: str, method: str) -> Path:
    placeholder = Path("/placeholder.duckdb")
    write_spec(path, db=placeholder, qids=QIDS, sensitive=["disease"], keep=KEPT, models=MODELS[method],
               output="audit", extra_source='null_policy = "suppress"', budget=100_000)
    text = path.read_text().replace(f"database = {toml_str('duckdb://' + str(placeholder))}", f"database = {toml_str(url)}")
    path.write_text(text + METHOD[method])
    return path


def _shown(url: str) -> str:
    """Every cell of the published view, as text."""
    con = connect(url, read_only=True)
    try:
        frame = con.query('SELECT * FROM "published"."audit"')
    finally:
        con.close()
    return "\n".join("\t".join("" if v is None else str(v) for v in row) for row in frame.iter_rows())


def _export_text(path: Path) -> str:
    con = duckdb.connect(str(path), read_only=True)
    try:
        out = []
        for schema, table in con.execute("SELECT table_schema, table_name FROM information_schema.tables").fetchall():
            out.append(f"{schema}.{table}")
            for row in con.execute(f'SELECT * FROM "{schema}"."{table}"').fetchall():
                out.append("\t".join("" if v is None else str(v) for v in row))
        return "\n".join(out)
    finally:
        con.close()


def _ok(proc, *codes: int) -> str:
    assert proc.returncode in (codes or (0,)), f"{proc.args if hasattr(proc, 'args') else ''}\nexit {proc.returncode}\n{proc.stderr[-3000:]}"
    return proc.stdout


@pytest.fixture(params=["generalization", "microaggregation", "heterogeneous"])
def method(request) -> str:
    return request.param


def test_no_shareable_output_names_a_value_the_release_does_not_show(database, tmp_path, method):
    url = database
    spec = _spec(tmp_path / "audit.toml", url, method)
    outputs: dict[str, str] = {}
    _ok(ppdp("job", "register", str(spec), "--db", url))
    outputs["job run --json"] = _ok(ppdp("job", "run", "audit", "--db", url, "--json", "--no-progress"))
    assert json.loads(outputs["job run --json"])["status"] == "published"
    outputs["job run --dry-run --json"] = _ok(ppdp("job", "run", "audit", "--db", url, "--json", "--dry-run", "--no-progress"),
                                             2, 3, 98)  # 98: DRY_RUN
    # the same spec run directly (not as the job): another version, or its refusal, as JSON
    outputs["run --json"] = _ok(ppdp("run", str(spec), "--no-progress", "--json"), 0, 2, 3, 99)
    outputs["verify --json"] = _ok(ppdp("verify", "audit", "--db", url, "--json"))
    outputs["job certificate (JSON and Markdown)"] = _ok(ppdp("job", "certificate", "audit", "--db", url))
    qids = ["age_min", "age_max", *QIDS[1:]] if method == "heterogeneous" else QIDS
    outputs["risk --json"] = _ok(ppdp("risk", "audit", "--db", url, "--json", "--qids", ",".join(qids)))
    html = tmp_path / "external.html"
    _ok(ppdp("report", "audit", "--external", "--html", str(html), "--db", url))
    outputs["report --external"] = html.read_text()
    export = tmp_path / "export.duckdb"
    _ok(ppdp("export", str(export), "--db", url))
    outputs["export file"] = _export_text(export)

    shown = _shown(url)
    hidden = [v for v in PLANTED if v not in shown]
    assert {str(S_KEY), str(U_KEY)} <= set(hidden), hidden
    if method == "generalization":  # S is suppressed: none of S's values is shown, each is searched for
        assert {S_DISEASE, "Zz-S-occupation", RULE_VALUE} <= set(hidden), hidden
    hits = {(name, v) for name, text in outputs.items() for v in hidden if v in text}
    assert not hits, f"{len(hits)} value(s) that the release does not show left the database: {sorted(hits)}"


def test_external_report_does_not_count_the_source_domain(tmp_path):
    """The per-QID count of source values ("race: 5 domain values, 4 published") told an outsider
    that a value exists whose holders were all suppressed; the internal report keeps it."""
    url = f"duckdb://{tmp_path / 'domain.duckdb'}"
    frame = _frame("generalization")
    con = connect(url)
    try:
        con.write_frame("main", "adult", frame)
    finally:
        con.close()
    spec = _spec(tmp_path / "audit.toml", url, "microaggregation")
    spec.write_text(spec.read_text().replace(METHOD["microaggregation"], ""))
    _ok(ppdp("run", str(spec), "--no-progress"))
    pages = {}
    for audience in ("external", "internal"):
        html = tmp_path / f"{audience}.html"
        _ok(ppdp("report", "audit", "--html", str(html), "--db", url, *(["--external"] if audience == "external" else [])))
        pages[audience] = html.read_text()
    assert "<th>domain values</th>" in pages["internal"]
    assert "<th>domain values</th>" not in pages["external"] and "domain values" not in pages["external"]


def test_the_query_is_withheld_exactly_where_it_holds_source_values():
    """Every built-in model's recorded parameters rebuild it (else a check would fail closed and
    lose its query for no reason); the query is withheld for the three that hold source values."""
    from ppdp.engine.app.shareable import WITHHELD, shareable_check
    from ppdp.engine.privacy.base import build_model

    examples = {
        "average-risk": {"threshold": 0.1}, "beta-likeness": {"beta": 1.0}, "delta-disclosure": {"delta": 1.2},
        "delta-presence": {"dmin": 0.0, "dmax": 0.5, "research": "age < 50"}, "distinct-l-diversity": {"l": 2},
        "entropy-l-diversity": {"l": 1.5}, "k-anonymity": {"k": 5}, "k-map": {"k": 20, "population": "pop.people"},
        "population-uniqueness": {"threshold": 0.01, "population": 100000},
        "recursive-cl-diversity": {"c": 3, "l": 2}, "sample-uniqueness": {"threshold": 0.01},
        **{f"t-closeness/{d}": {"t": 0.3, "distance": d} for d in ("euclidean", "equal", "ordered", "hierarchical")},
    }
    withheld = set()
    for key, params in examples.items():
        name = key.split("/")[0]
        recorded = build_model(name, params).params()
        shared = shareable_check({"model": name, "params": recorded, "query": "SELECT 1"})
        if shared["query"] == WITHHELD:
            withheld.add(key)
        assert {k for k, v in shared["params"].items() if v == WITHHELD} == ({"research"} if name == "delta-presence" else set())
    assert withheld == {"delta-presence", "t-closeness/ordered", "t-closeness/hierarchical"}


DBT_TESTS = """version: 2
sources:
  - name: published
    schema: published
    tables:
      - name: audit
        data_tests:
          - dbt_ppdp.ppdp_k_anonymous:
              arguments: {quasi_identifiers: [age, sex, race, education], k: 100000}
          - dbt_ppdp.ppdp_l_diverse:
              arguments: {quasi_identifiers: [age, sex, race, education], sensitive: disease, l: 1000}
          - dbt_ppdp.ppdp_l_diverse:
              arguments: {quasi_identifiers: [age, sex, race, education], sensitive: disease, l: 1000, kind: entropy}
          - dbt_ppdp.ppdp_t_close:
              arguments: {quasi_identifiers: [age, sex, race, education], sensitive: disease, t: 0.0,
                          release: audit, release_schema: published}
          - dbt_ppdp.ppdp_t_close:
              arguments: {quasi_identifiers: [age, sex, race, education], sensitive: disease, t: 0.0,
                          distance: equal}
          - dbt_ppdp.ppdp_risk_below:
              arguments: {quasi_identifiers: [age, sex, race, education], threshold: 0.0}
          - dbt_ppdp.ppdp_release_verified:
              arguments: {release: audit, release_schema: published}
  # the control: the source itself fails too, and its failure rows do name the planted values
  - name: source
    schema: main
    tables:
      - name: adult
        data_tests:
          - dbt_ppdp.ppdp_k_anonymous:
              arguments: {quasi_identifiers: [id, occupation], k: 2}
"""


@pytest.mark.slow
def test_dbt_test_failures_name_no_value_the_release_does_not_show(tmp_path):
    """dbt_ppdp's generic tests on the published view, with parameters that fail them (k, l, t
    and the risk threshold out of reach), in one `dbt test --store-failures`: the failure rows
    dbt stores, its log, its printed output and its result files carry none of the planted
    values that the view does not show (the suppressed person's, the keys, the research rule's).
    DuckDB and the generalization release only: dbt takes a minute to start."""
    import shutil
    import subprocess

    from tests.adapters.test_dbt_example import dbt_executable

    executable = dbt_executable()  # skips (or fails under PPDP_REQUIRE_DBT=1) without dbt
    db = tmp_path / "audit.duckdb"
    url = f"duckdb://{db}"
    con = connect(url)
    try:
        con.write_frame("main", "adult", _frame("generalization"))
    finally:
        con.close()
    _ok(ppdp("run", str(_spec(tmp_path / "audit.toml", url, "generalization")), "--no-progress"))
    project = tmp_path / "dbt"
    (project / "models").mkdir(parents=True)
    (project / "dbt_project.yml").write_text("name: ppdp_audit\nversion: '1.0'\nconfig-version: 2\nprofile: ppdp_audit\n")
    (project / "profiles.yml").write_text(
        f"ppdp_audit:\n  target: dev\n  outputs:\n    dev:\n      type: duckdb\n      path: {json.dumps(str(db))}\n"
        "      threads: 1\n")
    (project / "models" / "sources.yml").write_text(DBT_TESTS)
    # the package as `dbt deps` would install it (a second dbt start otherwise)
    package = PATHS.REPO / "src" / "ppdp" / "dbt_ppdp"
    (project / "packages.yml").write_text(f"packages:\n  - local: {json.dumps(str(package))}\n")
    shutil.copytree(package, project / "dbt_packages" / "dbt_ppdp")
    proc = subprocess.run([executable, "test", "--store-failures", "--profiles-dir", "."], cwd=project,
                          capture_output=True, text=True, timeout=900,
                          env={**__import__("os").environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"})
    assert proc.returncode == 1, proc.stdout[-3000:]  # the tests failed, as they were made to
    results = json.loads((project / "target" / "run_results.json").read_text())["results"]
    status = {r["unique_id"]: r["status"] for r in results}
    assert len(status) == 8 and sum(s == "fail" for s in status.values()) == 7, status
    assert all(s == "pass" for uid, s in status.items() if "release_verified" in uid), status
    outputs = {"dbt stdout and stderr": proc.stdout + proc.stderr}
    for path in [*sorted((project / "logs").glob("*")), *sorted((project / "target").glob("*.json"))]:
        outputs[str(path.relative_to(project))] = path.read_text(errors="replace")
    with duckdb.connect(str(db), read_only=True) as con:
        stored = con.execute("SELECT table_schema, table_name FROM information_schema.tables "
                             "WHERE table_schema LIKE '%dbt_test__audit'").fetchall()
        failing_rows = 0
        control = ""
        for schema, table in stored:
            rows = con.execute(f'SELECT * FROM "{schema}"."{table}"').fetchall()
            text = "\n".join("\t".join("" if v is None else str(v) for v in r) for r in rows)
            if "source_ppdp_k_anonymous_source_adult" in table:
                control = text  # the source's failures: not an output of the release
                continue
            failing_rows += len(rows)
            outputs[f"stored failures {table}"] = text
    assert len(stored) == 8 and failing_rows > 0, stored
    shown = _shown(url)
    hidden = [v for v in PLANTED if v not in shown]
    assert {str(S_KEY), str(U_KEY), S_DISEASE, "Zz-S-occupation", RULE_VALUE} <= set(hidden), hidden
    assert {str(S_KEY), "Zz-S-occupation", str(U_KEY)} <= {v for v in hidden if v in control}  # the grep sees them
    hits = {(name, v) for name, text in outputs.items() for v in hidden if v in text}
    assert not hits, f"{len(hits)} value(s) that the release does not show left through dbt: {sorted(hits)}"
