"""delta-presence and k-map release on adult, on DuckDB and inside PostgreSQL.

Each release must pass its own SQL verification (the population's classes recounted in the
database from the stored hierarchies at the version's levels), and an independent re-check in
Python: the published multiset equals the (research) source rows generalized with the ARX files
at the recorded levels, suppressed keys removed, and the model holds on it when the population
is generalized alike from the source. Refusals are one line and write nothing.
"""

from __future__ import annotations

import json
import math
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from ppdp.connectors import connect
from ppdp.engine.core import hierarchy as H
from ppdp.engine.core.spec import load_spec
from ppdp.engine.release.run import run_release
from ppdp.errors import CrossVersionRefusal, DataError, SpecError
from tests.conftest import ADULT, toml_str, write_spec

QIDS = ["age", "education", "race", "sex", "workclass"]
RESEARCH = "\"salary-class\" = '>50K' OR (age >= 60 AND sex = 'Female')"


def _research(row: dict) -> bool:  # RESEARCH, in Python
    return row["salary-class"] == ">50K" or (row["age"] >= 60 and row["sex"] == "Female")


DP = ('[[privacy.models]]\nname = "delta-presence"\ndmin = 0.0\ndmax = 0.6\n'
      f"research = {toml_str(RESEARCH)}\n")
KMAP_POP = '[[privacy.models]]\nname = "k-map"\nk = 20\npopulation = "pop.people"\n'
KMAP_EST = ('[[privacy.models]]\nname = "k-map"\nk = 10\nestimator = "poisson"\npopulation_size = 300000\n'
            "significance = 0.01\n")


def adult_frame() -> pl.DataFrame:
    frame = pl.read_csv(ADULT / "adult.csv", separator=";")
    return frame.with_row_index("id", offset=1).with_columns(pl.col("id").cast(pl.Int64))


def _load(url: str, schema: str) -> None:
    frame = adult_frame()
    con = connect(url)
    try:
        con.write_frame(schema, "adult", frame)
        con.write_frame(schema, "sample", frame.filter(pl.col("id") % 3 == 0))
        con.execute('CREATE SCHEMA IF NOT EXISTS "pop"')
        con.write_frame("pop", "people", frame.drop("salary-class"))
    finally:
        con.close()


@pytest.fixture(scope="module", params=["duckdb", pytest.param("postgres", marks=pytest.mark.postgres)])
def database(request, tmp_path_factory) -> Iterator[tuple[str, str]]:
    """(URL, schema) of a database holding adult, a one-in-three sample, and pop.people; shared
    by the module's tests, which only read the source and each publish a release of its own name."""
    if request.param == "duckdb":
        url = f"duckdb://{tmp_path_factory.mktemp('population') / 'adult.duckdb'}"
        _load(url, "main")
        yield url, "main"
        return
    server = request.getfixturevalue("postgres_server")
    name = f"t_population_{uuid.uuid4().hex[:8]}"
    admin = connect(server.url)
    try:
        admin.execute(f'CREATE DATABASE "{name}"')
        url = server.url_for(name)
        _load(url, "public")
        yield url, "public"
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        admin.close()


def _spec(path: Path, url: str, schema: str, *, table: str, models: str, output: str, method: str = ""):
    placeholder = Path("/placeholder.duckdb")
    write_spec(path, db=placeholder, table=table, qids=QIDS, models=models, output=output,
               schema_line=f"schema = {toml_str(schema)}", keep=["marital-status", "native-country", "occupation"])
    text = path.read_text().replace(f"database = {toml_str('duckdb://' + str(placeholder))}", f"database = {toml_str(url)}")
    path.write_text(text + method)
    return load_spec(path)


def _generalizers(levels: dict[str, int]) -> dict[str, dict[str, str]]:
    out = {}
    for q in QIDS:
        h = H.read_arx_csv(ADULT / f"adult_hierarchy_{q}.csv", q)
        out[q] = {r[0]: r[levels[q]] for r in h.rows}
    return out


def _recheck(url: str, output: str, source: pl.DataFrame, keep) -> tuple[Counter, dict, dict]:
    """Published classes re-derived in Python and compared with the published rows; returns
    (released records per class, the generalizers, the run's solution)."""
    con = connect(url)
    try:
        identity = f'"published"."{output}"'
        pub = con.query(f'SELECT * FROM "published"."{output}"')
        runs = con.query("SELECT solution, version FROM _ppdp.runs WHERE release = ? AND status = 'succeeded'", [identity])
        version = int(runs["version"][0])
        suppressed = set(con.query("SELECT key FROM _ppdp.suppressed WHERE release = ? AND version = ?",
                                   [identity, version])["key"].to_list())
    finally:
        con.close()
    solution = json.loads(runs["solution"][0])
    gen = _generalizers(solution["levels"])
    expected = Counter()
    for row in source.iter_rows(named=True):
        if keep(row) and str(row["id"]) not in suppressed:
            expected[tuple(gen[q][str(row[q])] for q in QIDS) + (row["salary-class"],)] += 1
    published = Counter(tuple(str(v) for v in r) for r in pub.select(QIDS + ["salary-class"]).iter_rows())
    assert published == expected
    classes = Counter(tuple(str(v) for v in r) for r in pub.select(QIDS).iter_rows())
    return classes, gen, solution


def _persons(frame: pl.DataFrame, gen: dict) -> Counter:
    return Counter(tuple(gen[q][str(v)] for q, v in zip(QIDS, r, strict=True)) for r in frame.select(QIDS).iter_rows())


def _passed(out) -> None:
    assert out.run.status == "succeeded" and out.run.verification["passed"]
    assert all(c["passed"] for c in out.run.verification["checks"])


@pytest.mark.slow
def test_delta_presence_releases_the_research_subset_verified_and_rechecked(database, tmp_path):
    url, schema = database
    out = run_release(_spec(tmp_path / "dp.toml", url, schema, table="adult", models=DP, output="adult_dp"), progress=False)
    _passed(out)
    # S*(G)'s delta-presence term is exact (tests/oracles/test_presence_oracle.py): certified
    assert out.result.certified and not out.result.not_certified_because, out.result.not_certified_because
    source = adult_frame()
    released, gen, _ = _recheck(url, "adult_dp", source, _research)
    persons = _persons(source, gen)  # the population is the whole source
    assert sum(released.values()) == out.run.metrics["released_records"] < source.filter(
        pl.struct(source.columns).map_elements(_research, return_dtype=pl.Boolean)).height + 1
    for cls, n in persons.items():
        assert 0.0 <= released.get(cls, 0) / n <= 0.6, cls
    if url.startswith("duckdb://"):  # `ppdp sql` rebuilds the research subset only, in every dialect
        from tests.releases.test_rebuild_methods import assert_rebuilds

        assert_rebuilds(Path(url.removeprefix("duckdb://")), "adult_dp", 1, tmp_path)


@pytest.mark.slow
def test_k_map_against_a_population_table_verified_and_rechecked(database, tmp_path):
    url, schema = database
    out = run_release(_spec(tmp_path / "km.toml", url, schema, table="sample", models=KMAP_POP, output="adult_km"),
                      progress=False)
    _passed(out)
    frame = adult_frame()
    released, gen, _ = _recheck(url, "adult_km", frame.filter(pl.col("id") % 3 == 0), lambda row: True)
    persons = _persons(frame, gen)
    assert released and min(persons[c] for c in released) >= 20
    # ... while k-anonymity with k = 20 on the sample alone would have been stricter somewhere
    assert min(released.values()) < 20 or out.run.metrics["suppressed"] == 0


def test_k_map_with_an_estimator_is_k_prime_anonymity_certified(database, tmp_path):
    url, schema = database
    out = run_release(_spec(tmp_path / "ke.toml", url, schema, table="adult", models=KMAP_EST, output="adult_ke"),
                      progress=False)
    _passed(out)
    assert out.result.certified  # k' -anonymity: the exact oracle applies
    released, _, _ = _recheck(url, "adult_ke", adult_frame(), lambda row: True)
    # k' from ARX's definition: lambda = n / N * k = 30162 / 300000 * 10; the first c with
    # P(X <= c) >= 0.99 is 4 (P(X <= 3) = 0.981, P(X <= 4) = 0.996), so k' = 4 + 2 = 6 (ARX prints 6)
    lam = 30162 / 300000 * 10
    cdf = [sum(math.exp(-lam) * lam ** i / math.factorial(i) for i in range(c + 1)) for c in range(6)]
    c = next(c for c in range(6) if cdf[c] >= 0.99)
    assert min(released.values()) >= min(10, c + 2) == 6


def test_population_models_are_refused_in_one_line_without_writing(tmp_path):
    url = f"duckdb://{tmp_path / 'adult.duckdb'}"
    _load(url, "main")

    def tables() -> list:
        con = connect(url)
        try:
            return con.query("SELECT table_schema, table_name FROM information_schema.tables ORDER BY 1, 2").rows()
        finally:
            con.close()

    before = tables()
    cases = [
        ("adult", DP.replace(RESEARCH.replace('"', '\\"'), "secret > 1"), SpecError, "'secret'"),
        ("adult", KMAP_POP.replace("pop.people", "pop.nobody"), DataError, "does not exist"),
        ("adult", DP + KMAP_POP, SpecError, "different populations"),
        ("adult", DP + '[[privacy.models]]\nname = "k-anonymity"\nk = 5\n', SpecError, "microaggregation"),
    ]
    for i, (table, models, error, fragment) in enumerate(cases):
        method = '[method]\nname = "microaggregation"\n' if fragment == "microaggregation" else ""
        with pytest.raises(error) as exc:
            run_release(_spec(tmp_path / f"r{i}.toml", url, "main", table=table, models=models, output=f"r{i}", method=method),
                        progress=False)
        assert fragment in str(exc.value) and "\n" not in str(exc.value), str(exc.value)
    con = connect(url)
    try:
        con.execute('CREATE TABLE "pop"."half" AS SELECT age, sex, race FROM "pop"."people"')
    finally:
        con.close()
    with pytest.raises(DataError, match="lacks quasi-identifier"):
        run_release(_spec(tmp_path / "h.toml", url, "main", table="adult", models=KMAP_POP.replace("people", "half"),
                          output="h"), progress=False)
    assert [t for t in tables() if t != ("pop", "half")] == before


@pytest.mark.slow
def test_a_second_version_of_a_delta_presence_release_is_refused(tmp_path):
    url = f"duckdb://{tmp_path / 'adult.duckdb'}"
    _load(url, "main")
    spec = _spec(tmp_path / "dp.toml", url, "main", table="adult", models=DP, output="dp2")
    _passed(run_release(spec, progress=False))
    con = connect(url)
    try:
        con.execute('DELETE FROM "main"."adult" WHERE id % 97 = 0')
    finally:
        con.close()
    with pytest.raises(CrossVersionRefusal, match="union of classes") as exc:
        run_release(spec, progress=False)
    assert "\n" not in str(exc.value)
