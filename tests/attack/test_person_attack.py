"""The attacker who knows all of a person's rows (docs/design/person_unit.md), against a visits
table released per person over 4 versions, on DuckDB and PostgreSQL.

The attacker holds every published version and knows, for the target person, every one of its
rows through time: each row's raw QIDs in every version's source, when it joined and left, and
whether its sensitive value changed (the harness's row-level knowledge, ``candidate_mask``, for
each of the person's rows). Rows of one person are not linked in the published data, so the
attacker's candidate persons are those that have, for *each* of the target's rows, a published
row consistent with it: the intersection over the target's rows of the owners of their
candidate rows (owners from the harness's private knowledge of row ids and persons). Nobody
may have fewer than k candidate persons. The steps: persons gain a visit, persons drop one
visit, persons leave, persons change the sensitive value on one visit. The same steps released
with the row unit (persons not declared, k rows) leave people below k candidate persons.
"""

from __future__ import annotations

import random
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest

from ppdp.connectors import connect
from ppdp.engine.core.catalog import release_id
from ppdp.engine.core.spec import spec_from_dict
from ppdp.engine.release.run import run_release
from ppdp.errors import PpdpError
from tests.attack.harness import (
    ModelCheck,
    Observations,
    PublishedVersion,
    SourceState,
    candidate_mask,
)
from tests.attack.scenarios import GeneralizationRelease
from tests.conftest import ADULT
from tests.support.visits import VISIT_QIDS, VISIT_SA, make_visits

K = 5
PERSONS = 600


MONTH = {"column": "visit_month", "hierarchy": {"type": "intervals", "widths": [3, 6]}}


def qids(month: bool) -> list[str]:
    return [*VISIT_QIDS, "visit_month"] if month else list(VISIT_QIDS)


def spec(url: str, schema: str, output: str, person: bool, month: bool = False):
    source = {"database": url, "schema": schema, "table": "visits", "key": "visit_id", "drop": [] if month else ["visit_month"]}
    if person:
        source["person"] = "person_id"
        if month:
            source["person_varying"] = ["visit_month"]
    else:
        source["drop"] = [*source["drop"], "person_id"]
    return spec_from_dict({
        "source": source,
        "quasi_identifiers": [{"column": q, "hierarchy": str(ADULT / f"adult_hierarchy_{q}.csv")} for q in VISIT_QIDS]
        + ([MONTH] if month else []),
        "sensitive": {"columns": [VISIT_SA]},
        "privacy": {"models": [{"name": "k-anonymity", "k": K}]},
        "dynamic": {"max_repair_fraction": 0.2},
        "output": {"name": output},
    })


def read_visits(con, schema: str) -> pl.DataFrame:
    return con.query(f'SELECT * FROM "{schema}"."visits" ORDER BY visit_id')


def steps(frame: pl.DataFrame, rng: random.Random) -> list[list[tuple[str, list]]]:
    """Three steps of DML (statement, params): gain a visit; drop one visit; leave / change SA on one visit."""
    persons = sorted(set(frame["person_id"].to_list()))
    counts = dict(frame.group_by("person_id").len().rows())
    multi = [p for p in persons if counts[p] >= 2]
    next_id = int(frame["visit_id"].max()) + 1
    gain = rng.sample(persons, 15)
    step1 = []
    for p in gain:
        step1.append(('INSERT INTO visits SELECT ?, person_id, age, sex, race, "marital-status", "salary-class", 1 '
                      "FROM visits WHERE person_id = ? ORDER BY visit_id LIMIT 1", [next_id, p]))
        next_id += 1
    drop = rng.sample([p for p in multi if p not in gain], 15)
    step2 = [("DELETE FROM visits WHERE visit_id = (SELECT MAX(visit_id) FROM visits WHERE person_id = ?)", [p]) for p in drop]
    rest = [p for p in persons if p not in gain and p not in drop]
    leave = rng.sample(rest, 8)
    change = rng.sample([p for p in multi if p in rest and p not in leave], 8)
    step3 = [("DELETE FROM visits WHERE person_id = ?", [p]) for p in leave]
    step3 += [("UPDATE visits SET \"salary-class\" = CASE WHEN \"salary-class\" = '>50K' THEN '<=50K' ELSE '>50K' END "
               "WHERE visit_id = (SELECT MIN(visit_id) FROM visits WHERE person_id = ?)", [p]) for p in change]
    return [step1, step2, step3]


def source_state(frame: pl.DataFrame, version: int, month: bool) -> SourceState:
    q = qids(month)
    text = frame.select(pl.col("visit_id").cast(pl.String), *[pl.col(c).cast(pl.String) for c in [*q, VISIT_SA]])
    rows = text.rows()
    return SourceState(version, {r[0]: tuple(r[1:1 + len(q)]) for r in rows}, {r[0]: (r[-1],) for r in rows})


def attack_persons(con, output: str, versions: list[int], sources: dict[int, SourceState],
                   person_of_key: dict[str, int], month: bool) -> dict[int, int]:
    """Candidate persons per published person (the module docstring's attacker)."""
    rid = release_id("published", output)
    tables = {v: con.query(f'SELECT * FROM "published"."{output}__v{v}"') for v in versions}
    published = []
    q = qids(month)
    for v in versions:
        t = tables[v].select(pl.col("ppdp_row_id").cast(pl.String), *[pl.col(c).cast(pl.String) for c in [*q, VISIT_SA]])
        published.append(PublishedVersion(v, {r[0]: (tuple(r[1:1 + len(q)]), (r[-1],)) for r in t.rows()}))
    obs = Observations(published)
    row_ids = dict(con.query("SELECT key, row_id FROM _ppdp.row_ids WHERE release = ?", [rid]).rows())
    matches = GeneralizationRelease(Path("."), [ModelCheck("k-anonymity", K)], q, [VISIT_SA],
                                    output_name=output).row_matches(con, versions)
    owner = np.array([person_of_key.get(k) for k in (dict((r, k) for k, r in row_ids.items()).get(r) for r in obs.row_ids)],
                     dtype=object)
    keys_of: dict[int, list[str]] = {}
    for key, person in person_of_key.items():
        keys_of.setdefault(person, []).append(key)
    cache: dict = {}
    out: dict[int, int] = {}
    for person, keys in keys_of.items():
        mine = [k for k in keys if obs.index.get(row_ids.get(k, ""), -1) >= 0]
        if not mine:
            continue  # never published: nothing to single out
        candidates: set | None = None
        for key in mine:
            owners = set(owner[candidate_mask(obs, sources, key, matches, cache)].tolist())
            candidates = owners if candidates is None else candidates & owners
        assert candidates is not None and person in candidates, (person, "own person not among the candidates")
        out[person] = len(candidates)
    return out


def scenario(url: str, schema: str, month: bool) -> tuple[dict[int, int], dict[int, int], list[int], list[int]]:
    con = connect(url)
    person_of_key: dict[str, int] = {}
    sources: dict[int, SourceState] = {}
    rng = random.Random(36)
    published: dict[str, list[int]] = {"visits_p": [], "visits_r": []}
    try:
        frame = read_visits(con, schema)
        plan = steps(frame, rng)
        for step in range(4):
            if step:
                for sql, params in plan[step - 1]:
                    con.execute(sql.replace("visits", f'"{schema}"."visits"'), params)
            frame = read_visits(con, schema)
            person_of_key |= {str(k): int(p) for k, p in frame.select("visit_id", "person_id").rows()}
            for output, person in (("visits_p", True), ("visits_r", False)):
                try:
                    run = run_release(spec(url, schema, output, person, month), progress=False).run
                except PpdpError:
                    continue  # refused: nothing published at this step
                published[output].append(int(run.version))
                sources_version = int(run.version)
                if person:
                    sources[sources_version] = source_state(frame, sources_version, month)
        assert published["visits_p"] == published["visits_r"] == [1, 2, 3, 4], published
        per_person = attack_persons(con, "visits_p", published["visits_p"], sources, person_of_key, month)
        per_row = attack_persons(con, "visits_r", published["visits_r"], sources, person_of_key, month)
    finally:
        con.close()
    return per_person, per_row, published["visits_p"], published["visits_r"]


def check(per_person: dict[int, int], per_row: dict[int, int]) -> None:
    below = sum(1 for n in per_row.values() if n < K)
    print(f"\nper person: {len(per_person)} published persons, fewest candidates {min(per_person.values())}; "
          f"row unit: {len(per_row)} persons, fewest {min(per_row.values())}, {below} below k = {K}")
    assert per_person and min(per_person.values()) >= K, sorted(per_person.items(), key=lambda x: x[1])[:5]
    # the naive alternative: k rows per (history) class, people left below k candidate persons
    assert min(per_row.values()) < K


@pytest.fixture
def visits_frame(tmp_path) -> pl.DataFrame:
    db = make_visits(tmp_path / "v.duckdb", persons=PERSONS)
    con = duckdb.connect(str(db))
    try:
        rows = con.execute("SELECT * FROM visits ORDER BY visit_id").fetchall()
        cols = [d[0] for d in con.description]
    finally:
        con.close()
    return pl.DataFrame(rows, schema=cols, orient="row")


@pytest.mark.slow
@pytest.mark.parametrize("month", [False, True], ids=["person-level QIDs", "with a visit-month QID"])
def test_person_attack_over_four_versions_on_duckdb(tmp_path, visits_frame, month):
    url = f"duckdb://{tmp_path / 'attack.duckdb'}"
    con = connect(url)
    con.write_frame("main", "visits", visits_frame)
    con.close()
    per_person, per_row, _, _ = scenario(url, "main", month)
    check(per_person, per_row)


@pytest.mark.postgres
@pytest.mark.slow
@pytest.mark.parametrize("month", [False, True], ids=["person-level QIDs", "with a visit-month QID"])
def test_person_attack_over_four_versions_on_postgres(postgres_database, visits_frame, month):
    con = connect(postgres_database)
    con.write_frame("public", "visits", visits_frame)
    con.close()
    per_person, per_row, _, _ = scenario(postgres_database, "public", month)
    check(per_person, per_row)
