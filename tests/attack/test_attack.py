"""Difference attacks on published versions (tests/attack): the harness's own logic on a hand-made
history with a known answer, then the difference attack's crafted cases and seeded random change sequences
replayed through run_release on DuckDB and on a throwaway PostgreSQL server.

A failing scenario test prints the scenario (and seed), the refused steps and a table of the
violations: (scenario, step, target key, version, model, measured value, required value).
"""

from __future__ import annotations

import math
from collections import Counter
from contextlib import closing
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from ppdp.engine.core.catalog import list_runs
from tests.attack.harness import (
    DELETE,
    INSERT,
    MODIFY_BOTH,
    MODIFY_QID,
    MODIFY_SA,
    UNCHANGED,
    ModelCheck,
    Observations,
    PublishedVersion,
    Scenario,
    ScenarioReport,
    SourceChange,
    SourceState,
    attack,
    candidate_mask,
    change_kinds,
    check_deltas,
    conjunction,
    duckdb_backend,
    exposure_table,
    measure,
    merge_kinds,
    postgres_backend,
    published_version,
    read_published,
    read_row_ids,
    run_scenario,
    run_share_file_scenario,
    sa_exposure,
    summarize_exposures,
    violation_table,
)
from tests.attack.scenarios import (
    K5,
    QIDS,
    SENSITIVE,
    GeneralizationRelease,
    HeterogeneousRelease,
    adult_base,
    crafted_scenarios,
    item21_scenarios,
    random_sequence,
)

BASE_ROWS = 2000
# Seeded random sequences per engine, each engine its own seeds: 24 different sequences, where
# the same 20 on both engines ran 40 (an engine's SQL is checked against the other's by the
# adapters' tests; here what counts is how many different histories are attacked).
RANDOM_SEQUENCES = 12
DUCKDB_SEEDS = range(RANDOM_SEQUENCES)
POSTGRES_SEEDS = range(RANDOM_SEQUENCES, 2 * RANDOM_SEQUENCES)


# --- the harness on a hand-made history (no engine) ------------------------------------------
#
# One QID, age, published as decades "20-29" / "30-39"; SA in {x, y}. Persons a..f, row ids ra..rf.
#   v1 source: a 25 x, b 27 x, c 23 y, d 35 x, e 36 y
#   v2 source: a deleted, c's SA y -> x, d moved to 24, f inserted (28 y); b and e unchanged.


def decade(version: int, labels: tuple, raw: tuple) -> bool:
    """Interval containment: the pluggable predicate another release method would supply."""
    lo, hi = (int(x) for x in labels[0].split("-"))
    return lo <= int(raw[0]) <= hi


def hand_history() -> tuple[Observations, dict[int, SourceState], dict[str, str]]:
    (v1, v2), sources, row_ids = hand_versions()
    return Observations([v1, v2]), sources, row_ids


def hand_versions() -> tuple[list[PublishedVersion], dict[int, SourceState], dict[str, str]]:
    v1 = PublishedVersion(1, {"ra": (("20-29",), ("x",)), "rb": (("20-29",), ("x",)), "rc": (("20-29",), ("y",)),
                              "rd": (("30-39",), ("x",)), "re": (("30-39",), ("y",))})
    v2 = PublishedVersion(2, {"rb": (("20-29",), ("x",)), "rc": (("20-29",), ("x",)), "rd": (("20-29",), ("x",)),
                              "re": (("30-39",), ("y",)), "rf": (("20-29",), ("y",))})
    s1 = SourceState(1, {"a": ("25",), "b": ("27",), "c": ("23",), "d": ("35",), "e": ("36",)},
                     {"a": ("x",), "b": ("x",), "c": ("y",), "d": ("x",), "e": ("y",)})
    s2 = SourceState(2, {"b": ("27",), "c": ("23",), "d": ("24",), "e": ("36",), "f": ("28",)},
                     {"b": ("x",), "c": ("x",), "d": ("x",), "e": ("y",), "f": ("y",)})
    row_ids = {p: f"r{p}" for p in "abcdef"}
    return [v1, v2], {1: s1, 2: s2}, row_ids


def candidates(obs: Observations, sources: dict[int, SourceState], key: str) -> set[str]:
    mask = candidate_mask(obs, sources, key, decade)
    return {r for r, m in zip(obs.row_ids, mask, strict=True) if m}


def test_candidate_sets_of_a_hand_made_history():
    obs, sources, _ = hand_history()
    # rb and re stand unchanged in v2: to an attacker who knows steps can be held back, each may
    # be a delayed deletion or a held-back change
    # a left at v2: a's v1 rows that are gone at v2 (ra) or stand unchanged (rb); rc changed
    assert candidates(obs, sources, "a") == {"ra", "rb"}
    # b unchanged: rc is out (its SA changed, b's did not); rf is new in b's v2 class
    assert candidates(obs, sources, "b") == {"ra", "rb", "rf"}
    # c's SA changed: rc (changed), rb (unchanged: c's change may be held back), ra (gone), rf (new)
    assert candidates(obs, sources, "c") == {"ra", "rb", "rc", "rf"}
    # d moved from 30-39 to 20-29: rows with that path, new in 20-29, or unchanged in 30-39 (re)
    assert candidates(obs, sources, "d") == {"rd", "re", "rf"}
    # e alone in 30-39 in both versions once rd moved away
    assert candidates(obs, sources, "e") == {"re"}
    # f was not in the v1 source: every row published in v1 is out
    assert candidates(obs, sources, "f") == {"rf"}


def test_a_conjunction_gives_the_candidate_sets_of_the_whole_predicate():
    """``conjunction`` parts are evaluated one QID value at a time and memoized per class: the
    candidate sets equal those of the same predicate called whole, here with a second QID (the
    first letter of the row id's person, published as itself) beside the decade."""
    versions, sources, _ = hand_versions()
    obs = Observations([PublishedVersion(v.version, {r: ((lab[0], r[1]), sa) for r, (lab, sa) in v.rows.items()})
                        for v in versions])
    sources = {v: SourceState(v, {k: (q[0], k) for k, q in s.qids.items()}, s.sensitive) for v, s in sources.items()}

    def whole(version: int, labels: tuple, raw: tuple) -> bool:
        return decade(version, labels[:1], raw[:1]) and labels[1] == raw[1]

    parts = conjunction([lambda v, labels, r: decade(v, labels[:1], (r,)), lambda v, labels, r: labels[1] == r])
    for key in "abcdef":
        cache: dict = {}
        got = candidate_mask(obs, sources, key, parts, cache)
        assert any(k[0] == "part" for k in cache)  # the memoized path ran
        assert got.tolist() == candidate_mask(obs, sources, key, whole).tolist()
        assert got[obs.index[f"r{key}"]]  # the person's own row is consistent with them
        assert parts(1, ("20-29", key), ("25", key)) == whole(1, ("20-29", key), ("25", key))


def test_candidate_sets_when_rows_widen_and_ghosts_stand():
    """``widen`` (the heterogeneous release): a row whose sensitive value is
    unchanged may be a departed person's ghost or a held-back change even when its range widened;
    a row must cover its present person now, and is never withdrawn while its person stays."""
    def interval(version, labels, raw):
        return float(labels[0]) <= float(raw[0]) <= float(labels[1])

    v1 = PublishedVersion(1, {"ra": (("20", "29"), ("x",)), "rb": (("20", "29"), ("x",)), "rc": (("20", "29"), ("y",)),
                              "rx": (("20", "29"), ("x",))})
    v2 = PublishedVersion(2, {"ra": (("20", "39"), ("x",)), "rb": (("20", "29"), ("x",)), "rc": (("20", "29"), ("x",)),
                              "rd": (("20", "29"), ("y",))})
    s1 = SourceState(1, {"a": ("25",), "b": ("27",), "c": ("23",)}, {"a": ("x",), "b": ("x",), "c": ("y",)})
    s2 = SourceState(2, {"b": ("27",), "c": ("23",), "d": ("22",)}, {"b": ("x",), "c": ("x",), "d": ("y",)})
    obs, sources = Observations([v1, v2], widen=True), {1: s1, 2: s2}

    def cands(key: str) -> set[str]:
        return {r for r, m in zip(obs.row_ids, candidate_mask(obs, sources, key, interval), strict=True) if m}

    # a left: a standing row with its sensitive value (ra widened, rb) is a possible ghost, a
    # vanished row (rx) a departure shown; rc changed its value (a ghost never does), rd is new
    assert cands("a") == {"ra", "rb", "rx"}
    # b stayed unchanged: rx was withdrawn while b stayed, rc's value changed while b's did not
    assert cands("b") == {"ra", "rb", "rd"}
    # c's value changed: rc shows it, ra and rb may hold it back; rx was withdrawn while c stayed
    assert cands("c") == {"ra", "rb", "rc", "rd"}
    # d joined at v2: no row published before d joined can be d's
    assert cands("d") == {"rd"}
    # without widen, ra's widened range is no longer "the row standing unchanged" for a
    strict = Observations([v1, v2])
    assert "ra" not in {r for r, m in zip(strict.row_ids, candidate_mask(strict, sources, "a", interval), strict=True) if m}


def test_attack_reports_exactly_the_violations_of_the_hand_made_history():
    obs, sources, row_ids = hand_history()
    models = [ModelCheck("k-anonymity", 2), ModelCheck("distinct-l-diversity", 2)]
    found = attack(obs, sources, row_ids, list("abcdef"), models, decade, scenario="hand", step=1)
    got = sorted((v.target, v.version, v.model, v.measured) for v in found)
    assert got == sorted([
        ("a", 1, "distinct-l-diversity", 1.0),  # ra and rb both x at v1
        ("b", 1, "distinct-l-diversity", 1.0),  # ra and rb both x at v1
        ("e", 1, "k-anonymity", 1.0), ("e", 1, "distinct-l-diversity", 1.0),
        ("e", 2, "k-anonymity", 1.0), ("e", 2, "distinct-l-diversity", 1.0),
        ("f", 2, "k-anonymity", 1.0), ("f", 2, "distinct-l-diversity", 1.0),
    ])
    # the table names every violation's target and model
    table = violation_table(found)
    assert "hand" in table and "distinct-l-diversity" in table and "hand/k-anonymity: 3" in table


def test_k_only_targets_get_only_the_k_check():
    obs, sources, row_ids = hand_history()
    models = [ModelCheck("k-anonymity", 2), ModelCheck("distinct-l-diversity", 2)]
    found = attack(obs, sources, row_ids, [], models, decade, k_only=["b", "e"])
    assert sorted((v.target, v.version, v.model) for v in found) == [("e", 1, "k-anonymity"), ("e", 2, "k-anonymity")]


def test_entropy_and_t_closeness_measures_on_the_hand_made_history():
    obs, sources, _ = hand_history()
    mask = candidate_mask(obs, sources, "c", decade)
    ref = Counter(sources[1].sensitive.values())  # x: 3, y: 2
    # c's candidates published in v1: ra (x), rb (x), rc (y): p = (2/3, 1/3), q = (3/5, 2/5)
    h = -(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3))
    assert measure(ModelCheck("entropy-l-diversity", 2), obs, 0, mask, ref) == pytest.approx(math.exp(h))
    assert measure(ModelCheck("t-closeness", 0.1), obs, 0, mask, ref) == pytest.approx(math.sqrt(2) / 15)
    # in v2: rb (x), rc (x), rf (y) against the v2 source (x: 3, y: 2)
    assert measure(ModelCheck("t-closeness", 0.1), obs, 1, mask, Counter(sources[2].sensitive.values())) == pytest.approx(math.sqrt(2) / 15)


def test_a_published_row_contradicting_the_source_is_reported():
    obs, sources, row_ids = hand_history()
    # publish b as 30-39 in v2 although b is 27: b's own history is no longer consistent with b
    v2_rows = _rows(obs, 1) | {"rb": (("30-39",), ("x",))}
    bad = Observations([PublishedVersion(1, _rows(obs, 0)), PublishedVersion(2, v2_rows)])
    found = attack(bad, sources, row_ids, ["b"], [ModelCheck("k-anonymity", 1)], decade)
    assert {(v.target, v.model) for v in found} == {("b", "own-row-consistent")}


def _rows(obs: Observations, j: int) -> dict[str, tuple]:
    return {r: (obs.labels[j][obs.cls[j][i]], obs.sa_values[obs.sa[j][i]])
            for i, r in enumerate(obs.row_ids) if obs.present[j][i]}


def test_delta_check_accepts_an_exact_delta_and_rejects_a_wrong_one():
    v1 = pl.DataFrame({"ppdp_row_id": ["r1", "r2", "r3"], "age": ["20-29", "20-29", "30-39"]})
    v2 = pl.DataFrame({"ppdp_row_id": ["r1", "r3", "r4"], "age": ["20-29", "20-29", "30-39"]})
    good = pl.DataFrame({"version": [2, 2, 2, 2], "op": ["-", "-", "+", "+"],
                         "ppdp_row_id": ["r2", "r3", "r3", "r4"], "age": ["20-29", "30-39", "20-29", "30-39"]})
    assert check_deltas({1: v1, 2: v2}, good) == []
    missing_plus = good.filter(pl.col("ppdp_row_id") != "r4")
    assert check_deltas({1: v1, 2: v2}, missing_plus) == ["v2: delta applied to v1 differs from v2 (0 extra, 1 missing rows)"]
    assert check_deltas({1: v1, 2: v2}, None) == ["v2: no __delta table"]


def test_observations_track_previous_presence_and_sa_changes():
    obs, _, _ = hand_history()
    i = obs.index
    assert obs.prev[1][i["rc"]] == 0 and obs.prev[1][i["rf"]] == -1
    assert obs.sa_diff[1][i["rc"]] and not obs.sa_diff[1][i["rb"]]
    assert np.array_equal(obs.any_present, np.ones(6, dtype=bool))


# --- sensitive-value exposure on the hand-made history -----------------------------------------

HAND_KINDS = {"a": DELETE, "c": MODIFY_SA, "d": MODIFY_QID, "f": INSERT, "b": UNCHANGED, "e": UNCHANGED}


def test_sa_exposure_of_the_hand_made_history():
    obs, sources, row_ids = hand_history()
    got = {e.target: (e.kind, e.version, e.candidates, e.p_exact, e.p_category)
           for e in sa_exposure(obs, sources, row_ids, HAND_KINDS, decade, scenario="hand", step=1)}
    assert got == {
        # a left at v2: measured at v1, its last presence; candidates ra (x), rb (x); a is x
        "a": (DELETE, 1, 2, 1.0, 1.0),
        # c is x at v2; candidates published in v2: rb (x), rc (x), rf (y)
        "c": (MODIFY_SA, 2, 3, pytest.approx(2 / 3), pytest.approx(2 / 3)),
        # d is x at v2; candidates rd (x), re (y), rf (y)
        "d": (MODIFY_QID, 2, 3, pytest.approx(1 / 3), pytest.approx(1 / 3)),
        "f": (INSERT, 2, 1, 1.0, 1.0),  # rf alone: f's y is certain
        "b": (UNCHANGED, 2, 2, 0.5, 0.5),  # rb (x), rf (y); ra is gone at v2
        "e": (UNCHANGED, 2, 1, 1.0, 1.0),  # re alone
    }
    summary = summarize_exposures(sa_exposure(obs, sources, row_ids, HAND_KINDS, decade))
    assert list(summary) == [INSERT, DELETE, MODIFY_QID, MODIFY_SA, UNCHANGED]
    u = summary[UNCHANGED]
    assert (u.count, u.unmeasured, u.p_exact_mean, u.p_exact_worst) == (2, 0, 0.75, 1.0)
    assert summary[MODIFY_QID].p_exact_worst == pytest.approx(1 / 3)
    assert "unchanged" in exposure_table(summary)


def test_sa_exposure_category_counts_every_value_of_the_category():
    obs, sources, row_ids = hand_history()
    one = {"x": "income", "y": "income"}  # one category: the attacker always knows it
    got = {e.target: (e.p_exact, e.p_category) for e in sa_exposure(obs, sources, row_ids, HAND_KINDS, decade, category=one)}
    assert got["d"] == (pytest.approx(1 / 3), 1.0) and got["b"] == (0.5, 1.0)
    # three values in one class, x and y in category A, z in B
    v1 = PublishedVersion(1, {"r1": (("20-29",), ("x",)), "r2": (("20-29",), ("y",)), "r3": (("20-29",), ("z",))})
    src = SourceState(1, {"p1": ("25",), "p2": ("26",), "p3": ("27",)}, {"p1": ("x",), "p2": ("y",), "p3": ("z",)})
    ids = {"p1": "r1", "p2": "r2", "p3": "r3"}
    got = {e.target: (e.p_exact, e.p_category)
           for e in sa_exposure(Observations([v1]), {1: src}, ids, {"p1": UNCHANGED, "p3": UNCHANGED}, decade,
                                category={"x": "A", "y": "A", "z": "B"})}
    assert got == {"p1": (pytest.approx(1 / 3), pytest.approx(2 / 3)), "p3": (pytest.approx(1 / 3), pytest.approx(1 / 3))}


def test_a_person_whose_row_was_never_published_is_unmeasured():
    obs, sources, row_ids = hand_history()
    # g joined at v2 but its row was held back: no published row to read its value from
    s2 = SourceState(2, sources[2].qids | {"g": ("29",)}, sources[2].sensitive | {"g": ("x",)})
    found = sa_exposure(obs, {1: sources[1], 2: s2}, row_ids | {"g": "rg"}, {"g": INSERT, "f": INSERT}, decade)
    assert [(e.target, e.version, e.p_exact) for e in found] == [("g", None, None), ("f", 2, 1.0)]
    s = summarize_exposures(found)[INSERT]
    assert (s.count, s.unmeasured, s.p_exact_mean) == (1, 1, 1.0)


def test_change_kinds_and_their_merge_across_unpublished_steps():
    change = SourceChange(deletes=(1,), updates=((2, (("age", 30),)), (3, (("salary-class", ">50K"),)),
                                                 (4, (("age", 30), ("salary-class", ">50K")))),
                          inserts=({"id": 5, "age": 40},))
    kinds = change_kinds(change, ["age"], ["salary-class"])
    assert kinds == {"1": DELETE, "2": MODIFY_QID, "3": MODIFY_SA, "4": MODIFY_BOTH, "5": INSERT}
    pending = dict(kinds)
    # a refused step, then: 5 modified (still an insertion), 2's SA changed, 3 deleted, 1 back
    merge_kinds(pending, {"5": MODIFY_SA, "2": MODIFY_SA, "3": DELETE, "1": INSERT})
    assert pending == {"1": INSERT, "2": MODIFY_BOTH, "3": DELETE, "4": MODIFY_BOTH, "5": INSERT}
    merge_kinds(pending, {"5": DELETE})  # inserted and deleted before any publication: never seen
    assert "5" not in pending


# --- scenarios through run_release -----------------------------------------------------------


@pytest.fixture(scope="module")
def base() -> pl.DataFrame:
    return adult_base(BASE_ROWS)


def assert_no_leak(report: ScenarioReport, seed: int | None = None) -> None:
    """The scenario published every step and no target is singled out below the models."""
    head = f"{report.summary()}" + (f" (seed {seed})" if seed is not None else "")
    refused = "".join(f"\n  refused step {s}: {msg}" for s, msg in report.refusals)
    assert report.versions, f"{head}: the first release was refused{refused}"
    problems = []
    if report.violations:
        problems.append(violation_table(report.violations))
    problems += [f"delta: {p}" for p in report.delta_problems]
    # a refused step publishes nothing and so cannot leak: the scenarios are sized so that
    # holding records back suffices, and a refusal would hide what the attack tests
    problems += [f"step {s} was refused" for s, _ in report.refusals]
    assert not problems, f"{head}{refused}\n" + "\n".join(problems)


CRAFTED = sorted(crafted_scenarios(adult_base(10)))


def _crafted(base: pl.DataFrame, name: str) -> Scenario:
    return crafted_scenarios(base)[name]


def _run(scenario: Scenario, backend, models, tmp_path: Path, base: pl.DataFrame) -> ScenarioReport:
    """``base``: the module's first BASE_ROWS rows of adult (the ``base`` fixture)."""
    method = GeneralizationRelease(tmp_path, list(models), QIDS, SENSITIVE)
    return run_scenario(scenario, backend, method, base)


@pytest.mark.parametrize("name", CRAFTED)
def test_crafted_finding1_duckdb(name, tmp_path, base):
    report = _run(_crafted(base, name), duckdb_backend(tmp_path / "attack.duckdb"), K5, tmp_path, base)
    assert_no_leak(report)


@pytest.mark.postgres
@pytest.mark.parametrize("name", CRAFTED)
def test_crafted_finding1_postgres(name, tmp_path, base, postgres_database):
    report = _run(_crafted(base, name), postgres_backend(postgres_database), K5, tmp_path, base)
    assert_no_leak(report)


def test_scenario_report_measures_the_changed_person_and_the_unchanged_sample(tmp_path, base):
    report = _run(_crafted(base, "d-update-sa-only"), duckdb_backend(tmp_path / "attack.duckdb"), K5, tmp_path, base)
    assert_no_leak(report)
    per_step = Counter((e.step, e.kind) for e in report.exposures)
    assert per_step == {(0, UNCHANGED): 200, (1, UNCHANGED): 200, (1, MODIFY_SA): 1}
    changed = next(e for e in report.exposures if e.kind == MODIFY_SA)
    assert changed.target == "3" and changed.version == 2
    measured = [e for e in report.exposures if e.version is not None]
    assert len(measured) > 300  # the rest of the sample: suppressed rows, nothing to read
    for e in measured:
        # an unchanged person's own row shows their value and is among the candidates in that
        # version; no category map: the category is the value itself
        assert e.p_exact * e.candidates >= 1 - 1e-9 if e.kind == UNCHANGED else e.p_exact >= 0.0
        assert e.p_exact <= 1.0 and e.p_category == e.p_exact


@pytest.mark.slow
@pytest.mark.parametrize("seed", DUCKDB_SEEDS)
def test_random_sequence_duckdb(seed, tmp_path, base):
    scenario, models = random_sequence(seed)
    report = _run(scenario, duckdb_backend(tmp_path / "attack.duckdb"), models, tmp_path, base)
    assert_no_leak(report, seed)


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.parametrize("seed", POSTGRES_SEEDS)
def test_random_sequence_postgres(seed, tmp_path, postgres_database, base):
    scenario, models = random_sequence(seed)
    report = _run(scenario, postgres_backend(postgres_database), models, tmp_path, base)
    assert_no_leak(report, seed)



# --- a heterogeneous release follows a lone departure or a lone change -----

HET_ROWS = 300
ITEM21 = sorted(item21_scenarios())


def _text_state(version: int, frame: pl.DataFrame) -> SourceState:
    """The attacker's knowledge of a source frame (as text, like harness.snapshot_source)."""
    rows = frame.select(pl.col("id").cast(pl.String), *[pl.col(c).cast(pl.String) for c in QIDS + SENSITIVE]).rows()
    return SourceState(version, {r[0]: tuple(r[1:1 + len(QIDS)]) for r in rows},
                       {r[0]: tuple(r[1 + len(QIDS):]) for r in rows})


def _item21(name: str, backend, tmp_path: Path) -> None:
    """Every step of the scenario is published (6e1dadf refused the first: "publish less often"),
    nobody is singled out below k by everything published (the ghost and the held-back change
    are indistinguishable from the rows that stand), the deltas are exact, and the attack that
    breaks the alternative (following the step in place) is shown on the same v1."""
    method = HeterogeneousRelease(tmp_path, list(K5), QIDS, SENSITIVE)
    base = adult_base(HET_ROWS)
    departure = name == "h21-lone-departure"
    target = "2" if departure else "3"
    report = run_scenario(item21_scenarios()[name], backend, method, base)
    assert_no_leak(report)
    assert report.versions == [1, 2, 3]
    with closing(backend.connect()) as con:
        runs = {r.version: r for r in list_runs(con, method.release_id) if r.status == "succeeded"}
        tables, _ = read_published(con, method, [1, 2])
        rid = read_row_ids(con, method.release_id)[target]
        matches = method.row_matches(con, [1, 2])
    held = runs[2].metrics["held_back"]
    # the step is followed: the departed person's row is carried as a ghost (the row count does
    # not drop), or the changed person's row keeps its sensitive value (the change is held back)
    assert (held["deletes_delayed"], held["changes_delayed"]) == ((1, 0) if departure else (0, 1))
    assert runs[2].metrics["released_records"] == HET_ROWS and runs[2].verification["passed"]
    own = [c for c in tables[1].columns if c not in method.published_qids and c != "ppdp_row_id"]
    before = tables[1].filter(pl.col("ppdp_row_id").cast(pl.String) == rid).select(own)
    after = tables[2].filter(pl.col("ppdp_row_id").cast(pl.String) == rid).select(own)
    assert after.height == 1 and after.equals(before)  # the ghost / held row shows only what v1 showed
    # The alternative: v2 following the step in place (the row vanishes, or its sensitive value
    # flips), with nothing carried or held back. Its attacker knows that mechanism (v2 has one
    # row per person: none is a ghost), so t's row is a v1 row covering t that vanished (that
    # changed its sensitive value) in v2: exactly one, t's own.
    flip = {"<=50K": ">50K", ">50K": "<=50K"}
    naive = (tables[1].filter(pl.col("ppdp_row_id").cast(pl.String) != rid) if departure else
             tables[1].with_columns(pl.when(pl.col("ppdp_row_id").cast(pl.String) == rid)
                                    .then(pl.col("salary-class").replace_strict(flip)).otherwise(pl.col("salary-class"))
                                    .alias("salary-class")))
    obs = Observations([published_version(1, tables[1], method.published_qids, method.sensitive),
                        published_version(2, naive, method.published_qids, method.sensitive)], widen=True)
    raw = _text_state(1, base).qids[target]
    covers = np.array([matches(1, obs.labels[0][c], raw) if c >= 0 else False for c in obs.cls[0]])
    moved = (obs.present[0] & ~obs.present[1]) if departure else obs.sa_diff[1]
    singled = covers & moved
    assert singled.sum() == 1 and obs.row_ids[int(np.flatnonzero(singled)[0])] == rid
    # ... while in what ppdp published, the ghost (held) row is one of at least k rows covering t
    # that stand in v2 with their sensitive value (the same reading finds k or more)
    real = Observations([published_version(v, tables[v], method.published_qids, method.sensitive) for v in (1, 2)],
                        widen=True)
    standing = np.array([matches(1, real.labels[0][c], raw) if c >= 0 else False for c in real.cls[0]]) & real.same_row[1]
    assert standing.sum() >= 5 and not (real.present[0] & ~real.present[1]).any() and not real.sa_diff[1].any()


@pytest.mark.parametrize("name", ITEM21)
def test_item21_heterogeneous_lone_step_duckdb(name, tmp_path):
    _item21(name, duckdb_backend(tmp_path / "attack.duckdb"), tmp_path)


@pytest.mark.postgres
@pytest.mark.parametrize("name", ITEM21)
def test_item21_heterogeneous_lone_step_postgres(name, tmp_path, postgres_database):
    _item21(name, postgres_backend(postgres_database), tmp_path)


# --- the share file ------------------------------------------------------------

SHARE_ROWS = 1000


PLANTS = {"table": "CREATE TABLE published.source_copy AS SELECT * FROM {source}",
          "view": "CREATE VIEW published.source_view AS SELECT * FROM {source}"}


def _share_file(backend, tmp_path: Path, plant: str) -> None:
    """A copy of the source (keys included), or a view on it, sits in the published schema beside
    the release; the holder of the exported file finds the release's relations and no source key
    or row."""
    method = GeneralizationRelease(tmp_path, list(K5), QIDS, SENSITIVE)
    share = tmp_path / "share.duckdb"
    statement = PLANTS[plant].format(source=f"{backend.source_schema}.adult")
    versions, proc, findings = run_share_file_scenario(backend, method, adult_base(SHARE_ROWS), share, [statement])
    assert versions == [1, 2]
    assert findings == [], findings
    assert proc.returncode == 0 and share.exists(), proc.stderr


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_share_file_duckdb(tmp_path, plant):
    _share_file(duckdb_backend(tmp_path / "share_source.duckdb"), tmp_path, plant)


@pytest.mark.postgres
@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_share_file_postgres(tmp_path, postgres_database, plant):
    _share_file(postgres_backend(postgres_database), tmp_path, plant)
