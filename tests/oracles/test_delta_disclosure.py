"""delta-disclosure privacy (Brickell and Shmatikov 2008) as ARX's DDisclosurePrivacy: the verdict
per class by hand (log base 2, strict < delta, a value absent from a class not checked), the NumPy
per-class values against the plain-Python twin on random releases, the declarations (not
union-closed, not monotone, no oracle), a release verified by its SQL check with a later version refused, and bad
parameters refused in one line.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ppdp.engine.core.spec import load_spec
from ppdp.engine.privacy import build_model, plan_oracle
from ppdp.engine.release.run import run_release
from ppdp.errors import CrossVersionRefusal, SpecError
from tests.conftest import snapshot, write_spec
from tests.support.class_stats import class_stats as _stats

Q = [0.5, 0.25, 0.25]
# class -> counts; hand values of max |log2(p / q)| over the values present in it
HAND = {
    0: ({0: 2, 1: 1, 2: 1}, 0.0),  # p = q
    1: ({0: 1, 1: 1}, 1.0),  # p_1 = 1/2 = 2 q_1; value 2 absent: not checked
    2: ({0: 1, 1: 3}, math.log2(3)),  # p_0 = 1/4 = q_0 / 2 (|-1|), p_1 = 3/4 = 3 q_1
    3: ({2: 1}, 2.0),  # p_2 = 1 = 4 q_2; values 0 and 1 absent
}


def test_per_class_values_and_verdicts_by_hand() -> None:
    model = build_model("delta-disclosure", {"delta": 1.0})
    classes = {c: counts for c, (counts, _) in HAND.items()}
    per_class = model.class_ad(_stats(classes, Q))
    assert per_class == pytest.approx([v for _, v in HAND.values()], abs=1e-15)
    # strict: a class exactly at delta fails, as ARX's `value >= d` -> not anonymous
    verdicts = [model.feasible(model.reference_ad({0: counts}, Q)) for counts, _ in HAND.values()]
    assert verdicts == [True, False, False, False]
    assert [build_model("delta-disclosure", {"delta": 1.01}).feasible(v) for v in per_class] == [True, True, False, False]
    assert model.ad(_stats(classes, Q)) == pytest.approx(2.0, abs=1e-15)


def test_an_absent_value_is_not_checked_as_in_arx() -> None:
    """The paper's ln 0 = -inf would fail any class missing a value; ARX loops over present
    values only, so {s} with q = (1/2, 1/2) is |log2 2| = 1 < 1.5 and passes."""
    model = build_model("delta-disclosure", {"delta": 1.5})
    assert model.reference_ad({0: {0: 3}}, [0.5, 0.5]) == 1.0
    assert model.feasible(model.ad(_stats({0: {0: 3}}, [0.5, 0.5])))


def test_numpy_values_equal_the_plain_twin_on_random_releases() -> None:
    rng = np.random.default_rng(25)
    model = build_model("delta-disclosure", {"delta": 0.7})
    for _ in range(300):
        n_sa = int(rng.integers(1, 6))
        q = list(rng.dirichlet(np.ones(n_sa)))
        classes = {c: {int(v): int(rng.integers(1, 6)) for v in rng.choice(n_sa, size=int(rng.integers(1, n_sa + 1)),
                                                                             replace=False)}
                   for c in range(int(rng.integers(1, 7)))}
        per_class = model.class_ad(_stats(classes, q))
        twins = [model.reference_ad({0: classes[c]}, q) for c in range(len(classes))]
        assert per_class == pytest.approx(twins, rel=1e-12)
        assert model.ad(_stats(classes, q)) == pytest.approx(model.reference_ad(classes, q), rel=1e-12)
        assert [model.feasible(v) for v in per_class] == [model.feasible(t) for t in twins]


def test_not_union_closed_because_absent_values_are_unchecked() -> None:
    model = build_model("delta-disclosure", {"delta": 0.5})
    q = [0.8, 0.2]
    a, b = {0: 9}, {0: 4, 1: 1}
    assert model.feasible(model.reference_ad({0: a}, q)) and model.feasible(model.reference_ad({0: b}, q))
    assert not model.feasible(model.reference_ad({0: {0: 13, 1: 1}}, q))
    assert not model.union_closed and not model.has_history_check


def test_never_impossible_the_whole_table_passes() -> None:
    for delta in (1e-9, 0.1, 3.0):
        model = build_model("delta-disclosure", {"delta": delta})
        assert model.impossible_reason(None) is None  # type: ignore[arg-type]
        for counts in ([3], [2, 1], [3, 1, 1], [7, 2, 1, 1]):
            q = [c / sum(counts) for c in counts]
            assert model.feasible(model.ad(_stats({0: dict(enumerate(counts))}, q)))


def test_declarations_follow_arx_and_nothing_is_certified() -> None:
    model = build_model("delta-disclosure", {"delta": 1.0})
    assert not model.monotone  # ARX: ExplicitPrivacyCriterion(attribute, false, false)
    assert model.oracle() is None
    plan = plan_oracle([build_model("k-anonymity", {"k": 2}), model])
    assert not plan.exact and any("delta-disclosure" in r for r in plan.reasons)
    assert model.params() == {"delta": 1.0} and build_model("delta-disclosure", model.params()) == model


@pytest.mark.parametrize(("params", "fragment"), [
    ({"delta": 0}, "delta > 0"),
    ({"delta": -1.0}, "delta > 0"),
    ({"delta": float("inf")}, "delta > 0"),
    ({"delta": float("nan")}, "delta > 0"),
    ({"delta": True}, "delta > 0"),
    ({"delta": "1"}, "delta > 0"),
    ({}, "delta > 0"),
    ({"delta": 1, "beta": 1}, "only 'delta'"),
])
def test_bad_parameters_are_one_line_spec_errors(params, fragment) -> None:
    with pytest.raises(SpecError, match=fragment) as err:
        build_model("delta-disclosure", params)
    assert "\n" not in str(err.value)


def test_a_release_verifies_in_sql_and_a_later_version_is_not_published_unchecked(adult_db, tmp_path) -> None:
    """The SQL check of a version (sql.distributions.disclosure_gap) passes on a release and
    agrees with the in-memory AD; the model is not union-closed, so after deletions a second
    version is refused in one line with nothing written (no check across versions can protect it)."""
    import duckdb

    spec_path = write_spec(tmp_path / "d.toml", db=adult_db, qids=["age", "sex", "race"], sensitive=["occupation"],
                           models='[[privacy.models]]\nname = "delta-disclosure"\ndelta = 1.0\n', output="adult_delta")
    out = run_release(load_spec(spec_path), progress=False)
    assert out.run.status == "succeeded" and out.run.verification["passed"]
    (check,) = out.run.verification["checks"]
    assert check["passed"] and check["ad"] < 1.0
    assert check["ad"] == pytest.approx(out.result.ad, abs=1e-9)
    con = duckdb.connect(str(adult_db))
    con.execute("DELETE FROM adult WHERE id % 40 = 0")
    con.close()
    before = snapshot(adult_db)
    # refused (exit 3), as every model with no cross-version check: the spec is valid, the step is not safe
    with pytest.raises(CrossVersionRefusal, match="not declared to hold for a union of classes") as err:
        run_release(load_spec(spec_path), progress=False)
    assert "\n" not in str(err.value)
    assert snapshot(adult_db) == before
