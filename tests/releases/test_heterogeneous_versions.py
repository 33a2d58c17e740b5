"""Later versions of a heterogeneous k-anonymity release: the previous graph
repaired locally then searched, versions and an exact __delta, and the method's cross-version
rule (sql/heterogeneous.py cross_version_failures): a new record that could be narrowed below k is
withheld, a record that would be singled out by leaving stands as a ghost and a change of its
own columns is held back; a second, independent attacker in Python re-derives
every candidate set."""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl
import pytest

from ppdp.connectors import connect
from ppdp.engine.app.rebuild import rebuild_data
from ppdp.engine.core.spec import load_spec
from ppdp.engine.release.run import run_release
from ppdp.errors import SpecError, VerificationError
from tests.attack.harness import check_deltas
from tests.conftest import load_adult, snapshot
from tests.releases.test_heterogeneous_release import QIDS, het_spec

K = 5
# six copies of record 5 under new keys: a cohort that hides each other; one QID-only change
COHORT = ["INSERT INTO adult SELECT id + 100000 + 1000 * c.i, adult.* EXCLUDE (id) FROM adult, range(6) AS c(i) WHERE id = 5",
          "UPDATE adult SET age = age + 1 WHERE id IN (11, 12)"]
# one record unlike any other (age 99, a rare education): alone among the new rows
LONE = "INSERT INTO adult SELECT 500000, sex, 99, * EXCLUDE (id, sex, age) FROM adult WHERE id = 7"


def spec_of(tmp_path: Path, db: Path, name: str = "s.toml", dynamic: str = ""):
    p = het_spec(tmp_path / name, db, params='initial = "k-member", seconds = 2')
    p.write_text(p.read_text().replace("budget = 100000", "budget = 20000") + "[dynamic]\nmax_repair_fraction = 0.2\n" + dynamic)
    return load_spec(p)


def change(db: Path, statements: list[str]) -> None:
    con = duckdb.connect(str(db))
    for sql in statements:
        con.execute(sql)
    con.close()


def read(db: Path, sql: str) -> pl.DataFrame:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.sql(sql).pl()
    finally:
        con.close()


def attacker_candidates(db: Path, versions: list[int], sources: dict[int, pl.DataFrame], *,
                        held_back: bool = False) -> dict[int, int]:
    """An independent attacker: who holds every published version and every person's record at
    each version (``sources``: id -> QIDs and own columns), and reasons by the rule of the module
    docstring of engine/methods/heterogeneous/method.py. Returns, for each person whose row is in the last
    version, the number of rows that can still be theirs. ``held_back``: the attacker knows that a
    change of a person's own columns may be held back (the row then keeps its own columns), so
    only a row whose own columns changed while the person's did not is ruled out."""
    tables = {v: {r["ppdp_row_id"]: r for r in read(db, f"SELECT * FROM published.adult_het__v{v}").iter_rows(named=True)}
              for v in versions}
    rid_of = dict(read(db, "SELECT key, row_id FROM _ppdp.row_ids").iter_rows())
    own = [c for c in next(iter(tables[versions[0]].values())) if c != "ppdp_row_id" and not c.startswith("age_")
           and c not in QIDS]
    people = {v: {str(r["id"]): r for r in sources[v].iter_rows(named=True)} for v in versions}

    def covers(row, person) -> bool:
        return (row["age_min"] <= person["age"] <= row["age_max"]
                and all(str(person[q]) in row[q].split("|") for q in QIDS if q != "age"))

    last = versions[-1]
    out = {}
    for pid in people[last]:
        if rid_of[pid] not in tables[last]:
            continue  # withheld
        count = 0
        for rid in {r for t in tables.values() for r in t}:
            ok = True
            for i, v in enumerate(versions):
                row, person = tables[v].get(rid), people[v].get(pid)
                if row is not None and (person is None or not covers(row, person)):
                    ok = False
                if i and ok:
                    u = versions[i - 1]
                    before, was = tables[u].get(rid), people[u].get(pid)
                    if before is not None and was is not None and person is not None:
                        if row is None:
                            ok = False
                        else:
                            row_changed = any(before[c] != row[c] for c in own)
                            person_changed = any(was[c] != person[c] for c in own)
                            if row_changed != person_changed and not (held_back and person_changed):
                                ok = False
            count += ok
        out[pid] = count
    return out


def source_state(db: Path) -> pl.DataFrame:
    return read(db, 'SELECT * FROM adult')


def test_second_version_repairs_the_graph_with_an_exact_delta_and_nobody_below_k(tmp_path):
    db = load_adult(tmp_path / "h.duckdb", rows=300)
    spec = spec_of(tmp_path, db)
    v1 = run_release(spec, progress=False)
    s1 = source_state(db)
    change(db, COHORT)
    v2 = run_release(spec, progress=False)
    s2 = source_state(db)
    run = v2.run
    assert v1.run.version == 1 and run.status == "succeeded" and run.version == 2 and run.verification["passed"]
    repair = run.solution["repair"]
    # six inserts paired among themselves or swapped in; 300 kept; nothing deleted; no start over
    assert repair["kept"] == 300 and repair["inserted"] == 6 and repair["deleted"] == 0 and not repair["started_over"]
    checks = {c["check"]: c for c in run.verification["method_checks"]}
    assert all(c["passed"] for c in checks.values()) and len(checks) == 4
    assert checks["nobody can be narrowed below k rows across versions"]["failing_records"] == 0
    assert run.metrics["released_records"] == 306 and run.metrics["held_back"]["inserts_withheld"] == 0
    tables = {v: read(db, f"SELECT * FROM published.adult_het__v{v}") for v in (1, 2)}
    assert check_deltas(tables, read(db, "SELECT * FROM published.adult_het__delta")) == []
    # rows keep their ids: every v1 row id is still published
    assert set(tables[1]["ppdp_row_id"]) <= set(tables[2]["ppdp_row_id"])
    counts = attacker_candidates(db, [1, 2], {1: s1, 2: s2})
    assert len(counts) == 306 and min(counts.values()) >= K
    # the cohort leaves together: their rows vanish together, nobody is narrowed below k
    change(db, ["DELETE FROM adult WHERE id > 100000"])
    v3 = run_release(spec, progress=False).run
    assert v3.status == "succeeded" and v3.solution["repair"]["deleted"] == 6 and v3.metrics["released_records"] == 300
    counts = attacker_candidates(db, [1, 2, 3], {1: s1, 2: s2, 3: source_state(db)})
    assert len(counts) == 300 and min(counts.values()) >= K
    tables[3] = read(db, "SELECT * FROM published.adult_het__v3")
    assert check_deltas(tables, read(db, "SELECT * FROM published.adult_het__delta")) == []


def test_a_lone_insert_is_withheld_then_published_when_others_join(tmp_path):
    db = load_adult(tmp_path / "h.duckdb", rows=300)
    spec = spec_of(tmp_path, db)
    run_release(spec, progress=False)
    s1 = source_state(db)
    change(db, [LONE])
    v2 = run_release(spec, progress=False).run
    s2 = source_state(db)
    assert v2.status == "succeeded" and v2.metrics["held_back"]["inserts_withheld"] == 1
    assert v2.metrics["released_records"] == 300 and v2.verification["passed"]
    assert v2.cross_version["metrics_after_withholding"]["released_records"] == 300
    rid = read(db, "SELECT row_id FROM _ppdp.row_ids WHERE key = '500000'")["row_id"][0]
    assert rid not in read(db, "SELECT ppdp_row_id FROM published.adult_het__v2")["ppdp_row_id"].to_list()
    assert read(db, "SELECT COUNT(*) AS n FROM _ppdp.hetero_edges WHERE version = 2 AND '500000' IN (original, anonymized)")["n"][0] == 0
    counts = attacker_candidates(db, [1, 2], {1: s1, 2: s2})
    assert min(counts.values()) >= K
    # five more records like it join: the six are published together
    change(db, ["INSERT INTO adult SELECT 500001 + c.i, sex, 99, adult.* EXCLUDE (id, sex, age) FROM adult, range(5) AS c(i) WHERE id = 7"])
    v3 = run_release(spec, progress=False).run
    assert v3.status == "succeeded" and v3.metrics["held_back"]["inserts_withheld"] == 0 and v3.metrics["released_records"] == 306
    assert rid in read(db, "SELECT ppdp_row_id FROM published.adult_het__v3")["ppdp_row_id"].to_list()
    counts = attacker_candidates(db, [1, 2, 3], {1: s1, 2: s2, 3: source_state(db)})
    assert len(counts) == 306 and min(counts.values()) >= K
    tables = {v: read(db, f"SELECT * FROM published.adult_het__v{v}") for v in (1, 2, 3)}
    assert check_deltas(tables, read(db, "SELECT * FROM published.adult_het__delta")) == []


FLIP = "UPDATE adult SET \"salary-class\" = CASE WHEN \"salary-class\" = '>50K' THEN '<=50K' ELSE '>50K' END WHERE id = 9"


@pytest.mark.parametrize("statement, held", [("DELETE FROM adult WHERE id = 9", "deletes_delayed"), (FLIP, "changes_delayed")])
def test_a_lone_departure_or_own_change_is_followed_with_its_row_standing(tmp_path, statement, held):
    """A lone departure (a lone change of a sensitive value) used to be refused:
    the one row that vanished (changed) was the person's. Now the person's v1 row stands in v2 with
    its own columns (a ghost node of the graph at the person's last QIDs; a held-back change), and
    nobody, the person included, has fewer than k rows; dynamic.policy = "strict" still refuses."""
    db = load_adult(tmp_path / "h.duckdb", rows=200)
    spec = spec_of(tmp_path, db)
    run_release(spec, progress=False)
    s1 = source_state(db)
    change(db, [statement])
    before = read(db, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'published' ORDER BY 1")
    with pytest.raises(VerificationError, match=r"could narrow \d+ record\(s\) .*to fewer than k rows \(fewest: 1\); "
                                                r"dynamic.policy \"strict\".*Nothing was published"):
        run_release(spec_of(tmp_path, db, "strict.toml", 'policy = "strict"\n'), progress=False)
    after = read(db, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'published' ORDER BY 1")
    assert before.equals(after) and "adult_het__v2" not in after["table_name"].to_list()
    v2 = run_release(spec, progress=False).run
    s2 = source_state(db)
    assert v2.status == "succeeded" and v2.version == 2 and v2.verification["passed"]
    assert v2.metrics["held_back"] == {"inserts_withheld": 0, "deletes_delayed": 0, "changes_delayed": 0} | {held: 1}
    assert v2.metrics["released_records"] == 200  # the ghost keeps the row count; the attacker knows one is there
    tables = {v: read(db, f"SELECT * FROM published.adult_het__v{v}") for v in (1, 2)}
    rid = read(db, "SELECT row_id FROM _ppdp.row_ids WHERE key = '9'")["row_id"][0]
    own = [c for c in tables[1].columns if c not in ("ppdp_row_id", "age_min", "age_max", *QIDS)]
    row = {v: tables[v].filter(pl.col("ppdp_row_id") == rid) for v in (1, 2)}
    assert row[2].height == 1 and row[2].select(own).equals(row[1].select(own))
    assert check_deltas(tables, read(db, "SELECT * FROM published.adult_het__delta")) == []
    con = connect(f"duckdb://{db}")
    try:  # the source no longer has what the standing row shows: no rebuild script from it
        with pytest.raises(SpecError, match=r"holds 1 row\(s\) held back from v1"):
            rebuild_data(con, "published.adult_het")
    finally:
        con.close()
    counts = attacker_candidates(db, [1, 2], {1: s1, 2: s2}, held_back=True)
    assert min(counts.values()) >= K and len(counts) == (200 if held == "changes_delayed" else 199)
    # person 9 (gone, or changed): the v1 rows covering 9 that stand in v2 with their own columns
    nine = s1.filter(pl.col("id") == 9).row(0, named=True)
    v1 = {r["ppdp_row_id"]: r for r in tables[1].iter_rows(named=True)}
    standing = [r for r in tables[2].iter_rows(named=True) if r["ppdp_row_id"] in v1
                and v1[r["ppdp_row_id"]]["age_min"] <= nine["age"] <= v1[r["ppdp_row_id"]]["age_max"]
                and all(str(nine[q]) in v1[r["ppdp_row_id"]][q].split("|") for q in QIDS if q != "age")
                and all(r[c] == v1[r["ppdp_row_id"]][c] for c in own)]
    assert len(standing) >= K and rid in {r["ppdp_row_id"] for r in standing}


def test_a_ghost_stands_until_enough_similar_records_leave_then_goes_with_them(tmp_path):
    """Six copies of record 5 join (v2); one leaves alone: its row stands as a ghost (v3); the
    other five leave together and the ghost retires with them (v4): six rows vanish at once, each
    covering all six, and nobody is narrowed below k by the four versions."""
    db = load_adult(tmp_path / "h.duckdb", rows=200)
    spec = spec_of(tmp_path, db)
    run_release(spec, progress=False)
    states = {1: source_state(db)}
    steps = {2: "INSERT INTO adult SELECT id + 900000 + c.i, adult.* EXCLUDE (id) FROM adult, range(6) AS c(i) WHERE id = 5",
             3: "DELETE FROM adult WHERE id = 900005", 4: "DELETE FROM adult WHERE id > 900000"}
    runs = {}
    for v, sql in steps.items():
        change(db, [sql])
        runs[v] = run_release(spec, progress=False).run
        states[v] = source_state(db)
        assert runs[v].version == v and runs[v].verification["passed"]
    assert [runs[v].metrics["held_back"]["deletes_delayed"] for v in (2, 3, 4)] == [0, 1, 0]
    assert [runs[v].metrics["released_records"] for v in (2, 3, 4)] == [206, 206, 200]
    rid = read(db, "SELECT row_id FROM _ppdp.row_ids WHERE key = '900005'")["row_id"][0]
    present = {v: set(read(db, f"SELECT ppdp_row_id FROM published.adult_het__v{v}")["ppdp_row_id"]) for v in (2, 3, 4)}
    assert rid in present[2] and rid in present[3] and rid not in present[4]
    assert len(present[3] - present[4]) == 6 and not present[4] - present[3]
    counts = attacker_candidates(db, [1, 2, 3, 4], states)
    assert len(counts) == 200 and min(counts.values()) >= K
    tables = {v: read(db, f"SELECT * FROM published.adult_het__v{v}") for v in (1, 2, 3, 4)}
    assert check_deltas(tables, read(db, "SELECT * FROM published.adult_het__delta")) == []


def test_the_verification_catches_a_lone_insert_the_hook_let_through(tmp_path, monkeypatch):
    """The history hook disabled: the lone new record is published, and the verification's own
    re-check of the written tables refuses the version."""
    from ppdp.engine.methods.heterogeneous.method import Heterogeneous
    from ppdp.engine.release.stages.history import HistoryOutcome

    db = load_adult(tmp_path / "h.duckdb", rows=200)
    spec = spec_of(tmp_path, db)
    run_release(spec, progress=False)
    change(db, [LONE])
    monkeypatch.setattr(Heterogeneous, "cross_version", lambda self, *a: HistoryOutcome(None))
    before = snapshot(db)
    with pytest.raises(VerificationError, match="nobody can be narrowed below k rows across versions failed"):
        run_release(spec, progress=False)
    assert [t for t in snapshot(db) if "adult_het__v2" in str(t)] == [t for t in before if "adult_het__v2" in str(t)]


@pytest.mark.postgres
def test_postgres_second_version_with_a_withheld_insert(tmp_path, postgres_database):
    db = load_adult(tmp_path / "h.duckdb", rows=200)
    frame = read(db, "SELECT * FROM adult")
    pg = connect(postgres_database)
    pg.write_frame("public", "adult", frame)
    pg.close()
    spec_path = het_spec(tmp_path / "p.toml", db, params='initial = "l-greedy", seconds = 2')
    spec_path.write_text(spec_path.read_text().replace(f'database = "duckdb://{db}"', f'database = "{postgres_database}"')
                         .replace('table = "adult"', 'table = "adult"\nschema = "public"').replace("budget = 100000", "budget = 20000")
                         + "[dynamic]\nmax_repair_fraction = 0.2\n")
    spec = load_spec(spec_path)
    assert run_release(spec, progress=False).run.version == 1
    pg = connect(postgres_database)
    pg.execute("INSERT INTO public.adult (id, sex, age, race, education, \"marital-status\", \"native-country\", workclass, occupation, \"salary-class\") "
               "SELECT 500000, sex, 99, race, education, \"marital-status\", \"native-country\", "
               "workclass, occupation, \"salary-class\" FROM public.adult WHERE id = 7")
    pg.execute("INSERT INTO public.adult (id, sex, age, race, education, \"marital-status\", \"native-country\", workclass, occupation, \"salary-class\") "
               "SELECT id + 100000 + 1000 * c.i, sex, age, race, education, \"marital-status\", "
               "\"native-country\", workclass, occupation, \"salary-class\" FROM public.adult, generate_series(0, 5) AS c(i) "
               "WHERE id = 5")
    pg.close()
    run = run_release(spec, progress=False).run
    assert run.status == "succeeded" and run.version == 2 and run.verification["passed"]
    assert run.metrics["held_back"]["inserts_withheld"] == 1 and run.metrics["released_records"] == 206
    pg = connect(postgres_database)
    try:
        v1 = pg.query("SELECT * FROM published.adult_het__v1")
        v2 = pg.query("SELECT * FROM published.adult_het__v2")
        delta = pg.query("SELECT * FROM published.adult_het__delta")
    finally:
        pg.close()
    assert check_deltas({1: v1, 2: v2}, delta) == []


def test_a_later_version_with_other_columns_or_k_is_refused(tmp_path):
    db = load_adult(tmp_path / "h.duckdb", rows=120)
    spec = spec_of(tmp_path, db)
    run_release(spec, progress=False)
    change(db, COHORT)
    p = tmp_path / "s.toml"
    text = p.read_text()
    p.write_text(text.replace('"occupation"]', ']\ndrop = ["occupation"]'))
    with pytest.raises(SpecError, match="published other quasi-identifiers or columns"):
        run_release(load_spec(p), progress=False)
    p.write_text(text.replace("k = 5", "k = 4"))
    with pytest.raises(SpecError, match="with k = 4; its graph cannot be continued"):
        run_release(load_spec(p), progress=False)
    assert read(db, "SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_name = 'adult_het__v2'")["n"][0] == 0


def test_a_broken_second_version_graph_fails_the_verification(tmp_path, monkeypatch):
    """v2's private graph loses one edge after the repair: the verification refuses v2 and v1 stays."""
    from ppdp.engine.methods.heterogeneous.method import Heterogeneous

    db = load_adult(tmp_path / "h.duckdb", rows=150)
    spec = spec_of(tmp_path, db)
    run_release(spec, progress=False)
    change(db, COHORT)
    original = Heterogeneous.write_private_state

    def drop_one_edge(self, ctx, prep, plan):
        original(self, ctx, prep, plan)
        o, a = next((o, a) for o, a in plan.state.edges.iter_rows() if o != a)
        ctx.con.execute("DELETE FROM _ppdp.hetero_edges WHERE original = ? AND anonymized = ? AND version = 2", [o, a])

    monkeypatch.setattr(Heterogeneous, "write_private_state", drop_one_edge)
    with pytest.raises(VerificationError, match="the private graph is exactly k-regular with every self edge failed"):
        run_release(spec, progress=False)
    assert read(db, "SELECT COUNT(*) AS n FROM published.adult_het")["n"][0] == 150
