"""``ppdp report``: one self-contained page per release version, for the three
release methods, on DuckDB and PostgreSQL; what the external page must not contain; the risk
table against ``ppdp risk --json``; bad input refused with exit code 2 and nothing written.

The browser half (zero requests, zero console errors, DOM and screenshot in headless Chromium)
is tests/releases/test_report_browser.py.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import duckdb
import pytest

from ppdp.connectors import connect
from ppdp.engine.app import jobs
from ppdp.engine.app.cli import main
from ppdp.engine.app.report import build_report
from ppdp.engine.app.report.html import SECTIONS
from ppdp.engine.core.spec import load_spec
from ppdp.engine.release.run import run_release
from ppdp.engine.risk import risk_rows
from tests.conftest import load_adult, snapshot, write_spec
from tests.releases.test_heterogeneous_release import het_spec
from tests.releases.test_microaggregation_release import adult_with_disease, micro_spec

GEN_QIDS = ["age", "sex", "race", "education"]
INSERTED, DELETED = 30, 20  # source changes between the generalization release's two versions
# (write_spec publishes kept columns with kept_columns = "warn": the report shows that finding.)
K5 = '[[privacy.models]]\nname = "k-anonymity"\nk = 5\n'
K8 = '[[privacy.models]]\nname = "k-anonymity"\nk = 8\n'


class Page(HTMLParser):
    """Sections, table rows (cell texts), risk cells and every URL-bearing attribute of a page."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.sections: list[str] = []
        self.rows: list[list[str]] = []
        self.risk: dict[tuple[str, str], object] = {}
        self.tags: set[str] = set()
        self.urls: list[str] = []
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.add(tag)
        for k in ("src", "href", "srcset", "action", "data", "poster", "xlink:href", "formaction"):
            if k in a:
                self.urls.append(str(a[k]))
        if tag == "section":
            self.sections.append(str(a.get("id")))
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []
            if "data-key" in a:
                self.risk[(str(a["data-key"]), str(a["data-side"]))] = json.loads(str(a["data-value"]))

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def assert_self_contained(text: str) -> Page:
    """No script, no fetchable reference, a CSP that forbids fetching, every section."""
    page = Page(text)
    assert not page.tags & {"script", "link", "img", "iframe", "object", "embed", "video", "audio", "source", "base", "form"}
    assert all(u.startswith("#") for u in page.urls), page.urls
    assert "url(" not in text and "@import" not in text and "http:" not in text and "https:" not in text and "//" not in text.replace("<!DOCTYPE", "")
    assert "default-src 'none'" in text
    assert page.sections == [key for key, _ in SECTIONS]
    return page


@pytest.fixture(scope="module")
def releases(tmp_path_factory) -> dict[str, Path]:
    """A DuckDB file with three releases of adult: generalization (two versions, a source change
    between them), microaggregation and heterogeneous (in their own file)."""
    d = tmp_path_factory.mktemp("report")
    db = adult_with_disease(d / "a.duckdb", rows=1000)
    gen = write_spec(d / "g.toml", db=db, qids=GEN_QIDS, output="adult_gen", drop=["disease"], models=K5)
    url = f"duckdb://{db}"
    jobs.register_job(url, str(gen), name="gen")
    jobs.run_job(url, "gen", progress=False)
    con = duckdb.connect(str(db))
    con.execute(f"DELETE FROM adult WHERE id <= {DELETED}")
    con.execute(f"INSERT INTO adult SELECT id + 100000, sex, age, race, \"marital-status\", education, \"native-country\", workclass, "
                f"occupation, \"salary-class\", disease FROM adult WHERE id > 500 AND id <= {500 + INSERTED}")
    con.close()
    jobs.run_job(url, "gen", progress=False)
    run_release(load_spec(micro_spec(d / "m.toml", db, models=K8)), progress=False)
    hdb = load_adult(d / "h.duckdb", rows=200)
    run_release(load_spec(het_spec(d / "h.toml", hdb, params='initial = "k-member", seconds = 1', models=K5)), progress=False)
    return {"adult_gen": db, "adult_micro": db, "adult_het": hdb}


def report(db: Path, name: str, tmp_path: Path, *extra: str) -> str:
    out = tmp_path / f"{name}{'_'.join(extra)}.html"
    assert main(["report", name, "--db", f"duckdb://{db}", "--html", str(out), *extra]) == 0
    return out.read_text(encoding="utf-8")


def risk_json(capsys, db_url: str, *args: str) -> dict:
    capsys.readouterr()
    assert main(["risk", *args, "--db", db_url, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def assert_risk_equals_cli(page: Page, capsys, db_url: str, name: str, qids: list[str], source: str) -> None:
    """Every number of the page's risk table equals ``ppdp risk --json`` of the same relation."""
    rel = risk_json(capsys, db_url, name, "--qids", ",".join(risk_columns(page)))
    src = risk_json(capsys, db_url, "--table", source, "--qids", ",".join(qids))
    for _, path in risk_rows():
        for side, expected in (("release", rel), ("source", src)):
            value = expected
            for part in path.split("."):
                value = value[part]
            assert page.risk[(path, side)] == value, (path, side)


def risk_columns(page: Page) -> list[str]:
    """The attacker's columns the page names (the release side's QID columns)."""
    for row in page.rows:
        if row and row[0] == "attacker columns":
            return row[1].split(", ")
    raise AssertionError("the risk section names no attacker columns")


@pytest.mark.parametrize("name", ["adult_gen", "adult_micro", "adult_het"])
def test_every_section_and_the_risk_of_ppdp_risk_json(releases, tmp_path, capsys, name):
    db = releases[name]
    page = assert_self_contained(report(db, name, tmp_path))
    qids = GEN_QIDS  # the three releases share these QIDs
    assert_risk_equals_cli(page, capsys, f"duckdb://{db}", name, qids, "main.adult")
    # the method's own equivalent of levels: hierarchy levels, ranges, value sets
    levels = {r[0]: r[2] for r in page.rows if r and r[0] in qids and len(r) == 4}
    expected_age = {"adult_gen": "hierarchy level", "adult_micro": "ranges over [", "adult_het": "ranges over ["}[name]
    assert levels["age"].startswith(expected_age)
    # the attacker matches on what is published: a heterogeneous release's age is its bound pair
    expected_cols = ["age_min", "age_max", *GEN_QIDS[1:]] if name == "adult_het" else GEN_QIDS
    assert risk_columns(page) == expected_cols


def test_history_shows_the_source_changes_and_what_was_held_back(releases, tmp_path):
    page = Page(report(releases["adult_gen"], "adult_gen", tmp_path))
    header = next(r for r in page.rows if r[:2] == ["version", "published (UTC)"])
    rows = [dict(zip(header, r, strict=True)) for r in page.rows if len(r) == len(header) and r[0] in ("1", "2")]
    assert [r["version"] for r in rows] == ["1", "2"]
    assert rows[1]["inserted"] == str(INSERTED) and rows[1]["deleted"] == str(DELETED)
    con = connect(f"duckdb://{releases['adult_gen']}", read_only=True)
    try:
        plus = con.query("SELECT COUNT(*) AS n FROM published.adult_gen__delta WHERE version = 2 AND op = '+'")["n"][0]
        held = json.loads(con.query("SELECT cross_version FROM _ppdp.runs WHERE version = 2 AND release = '\"published\".\"adult_gen\"'")
                          ["cross_version"][0])["held_back"]
    finally:
        con.close()
    assert rows[1]["delta +"] == f"{plus:,}" and rows[1]["inserts withheld"] == f"{held['inserts_withheld']:,}"


def published_combinations(db: Path, relation: str, qids: list[str]) -> list[tuple[str, ...]]:
    """Every published QID combination, as text (a float's ".0" dropped, as the page writes it)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        cols = ", ".join(f"regexp_replace(CAST(\"{q}\" AS VARCHAR), '\\.0$', '')" for q in qids)
        return [tuple(r) for r in con.execute(f"SELECT DISTINCT {cols} FROM {relation}").fetchall()]
    finally:
        con.close()


def rows_naming(page: Page, combos: list[tuple[str, ...]]) -> list[list[str]]:
    """Table rows that name every value of some QID combination (in cells or a joined label)."""
    hits = []
    for row in page.rows:
        cells = set(row) | {p.strip() for c in row for p in c.split("|")}
        if any({p.strip() for v in combo for p in v.split("|")} <= cells for combo in combos):  # value sets: a|b
            hits.append(row)
    return hits


@pytest.mark.parametrize(("name", "relation", "columns"), [
    ("adult_gen", "published.adult_gen__v2", GEN_QIDS), ("adult_micro", "published.adult_micro__v1", GEN_QIDS),
    ("adult_het", "published.adult_het__v1", ["age_min", "age_max", *GEN_QIDS[1:]])])
def test_external_report_names_no_class_and_no_row(releases, tmp_path, name, relation, columns):
    """An attacker reading the external page: no row of any table names a published QID
    combination (a small class is who it singles out), no published row id, no source Q."""
    db = releases[name]
    combos = published_combinations(db, relation, columns)
    internal, external = Page(report(db, name, tmp_path)), report(db, name, tmp_path, "--external")
    assert rows_naming(internal, combos), "the internal page lists classes: the check below must be able to fail"
    ext = assert_self_contained(external)
    assert rows_naming(ext, combos) == []
    assert 'class="combinations"' not in external and "class=combinations" not in external
    con = duckdb.connect(str(db), read_only=True)
    try:
        row_ids = [r[0] for r in con.execute(f"SELECT ppdp_row_id FROM {relation}").fetchall()]
        keys = [r[0] for r in con.execute("SELECT key FROM _ppdp.suppressed").fetchall()]
    finally:
        con.close()
    assert not any(rid in external for rid in row_ids)
    assert "(source Q)" not in external
    assert not any(f">{k}<" in external for k in keys if len(k) > 3)  # suppressed keys are never listed


def test_bad_input_exits_2_and_writes_nothing(releases, tmp_path, capsys):
    db = releases["adult_gen"]
    before = snapshot(db)
    out = tmp_path / "x.html"
    assert main(["report", "no_such_release", "--db", f"duckdb://{db}", "--html", str(out)]) == 2
    assert main(["report", "adult_gen", "--db", f"duckdb://{db}", "--html", str(out), "--version", "9"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("ppdp: error:") for line in err)
    assert not out.exists() and snapshot(db) == before


@pytest.mark.postgres
def test_postgres_report_equals_the_duckdb_one_and_ppdp_risk(postgres_database, tmp_path, capsys):
    """The same release in PostgreSQL: every section, the risk table equals ppdp risk --json
    there, and the class-size table equals the DuckDB release's."""
    from tests.adapters.test_postgres_release import adult_frame, spec_for

    frame = adult_frame().head(1000)
    duck = tmp_path / "d.duckdb"
    pages = {}
    for url, schema in ((postgres_database, "public"), (f"duckdb://{duck}", "main")):
        con = connect(url)
        try:
            con.write_frame(schema, "adult", frame)
        finally:
            con.close()
        run_release(spec_for(tmp_path / f"{schema}.toml", url, schema, qids=GEN_QIDS, output="adult_pg", models=K5), progress=False)
        con = connect(url, read_only=True)
        try:
            text = build_report(con, "adult_pg")
        finally:
            con.close()
        page = assert_self_contained(text)
        assert_risk_equals_cli(page, capsys, url, "adult_pg", GEN_QIDS, f"{schema}.adult")
        pages[schema] = page
    sizes = [[r for r in p.rows if len(r) == 3 and (r[0][:1].isdigit())] for p in (pages["public"], pages["main"])]
    assert sizes[0] == sizes[1] and sizes[0]


def test_labels_from_the_data_are_escaped(releases):
    """A hostile label in the data (a QID value, a sensitive value) cannot add markup or a script."""
    import dataclasses

    from ppdp.engine.app.report import gather, render

    con = connect(f"duckdb://{releases['adult_gen']}", read_only=True)
    try:
        data = gather(con, "adult_gen")
    finally:
        con.close()
    evil = '<script>fetch("http://x")</script><img src=//x>'
    sv = data.sensitive_view
    assert sv is not None and sv.classes
    cls = dataclasses.replace(sv.classes[0], labels=(evil,) * len(sv.classes[0].labels), shares=((evil, 1.0),))
    data = dataclasses.replace(data, qid_views=tuple(dataclasses.replace(q, attribute=evil) for q in data.qid_views),
                               sensitive_view=dataclasses.replace(sv, classes=(cls,), source=((evil, 1.0),)))
    page = Page(render(data))
    assert not page.tags & {"script", "img"} and page.urls == [f"#{k}" for k, _ in SECTIONS]


@pytest.mark.postgres
@pytest.mark.parametrize("method", ["microaggregation", "heterogeneous"])
def test_postgres_report_of_the_other_methods(postgres_database, tmp_path, capsys, method):
    """Microaggregation (groups, ranges) and heterogeneous (range columns, value sets) releases
    inside PostgreSQL: every section, and the risk table equals ppdp risk --json there."""
    from tests.conftest import toml_str

    duck = adult_with_disease(tmp_path / "d.duckdb", rows=300)
    con = duckdb.connect(str(duck), read_only=True)
    frame = con.sql("SELECT * FROM adult").pl()
    con.close()
    if method == "heterogeneous":
        frame = frame.drop("disease")
    pg = connect(postgres_database)
    try:
        pg.write_frame("public", "adult", frame)
    finally:
        pg.close()
    spec = (micro_spec(tmp_path / "s.toml", duck, models=K8) if method == "microaggregation"
            else het_spec(tmp_path / "s.toml", duck, params='initial = "k-member", seconds = 1', models=K5))
    text = spec.read_text()
    spec.write_text(text.replace(f"database = {toml_str('duckdb://' + str(duck))}",
                                 f"database = {toml_str(postgres_database)}\nschema = \"public\""))
    assert spec.read_text() != text
    out = run_release(load_spec(spec), progress=False)
    name = out.view.split(".")[-1].strip('"')
    pg = connect(postgres_database, read_only=True)
    try:
        page = assert_self_contained(build_report(pg, name))
    finally:
        pg.close()
    assert_risk_equals_cli(page, capsys, postgres_database, name, GEN_QIDS, "public.adult")
    levels = {r[0]: r[2] for r in page.rows if r and r[0] in GEN_QIDS and len(r) == 4}
    assert levels["age"].startswith("ranges over [")


def test_a_version_without_stored_risk_is_measured_now(releases, tmp_path, capsys):
    """Versions published before runs stored their risk: the page measures both sides now, and
    they still equal ppdp risk --json."""
    db = tmp_path / "old.duckdb"
    db.write_bytes(releases["adult_gen"].read_bytes())
    con = duckdb.connect(str(db))
    con.execute("DELETE FROM _ppdp.risk")
    con.close()
    text = report(db, "adult_gen", tmp_path)
    assert "measured on the source as it is now" in text
    page = assert_self_contained(text)
    assert_risk_equals_cli(page, capsys, f"duckdb://{db}", "adult_gen", GEN_QIDS, "main.adult")
