"""The sensitive-value difference attacker: engine/methods/microaggregation/attack.py.

Crafted releases whose answer follows from the attacker model in the module docstring, plus one
history produced by DRASL's own insertion (dynamic.py), where the forged row has Link 0 to the
new value. Catalogue: the shipped ``diseases32`` (anemia, leukemia: blood; bronchitis,
pneumonia: respiratory; acne: skin; gastritis: digestive; epilepsy: nervous).
"""

from __future__ import annotations

import numpy as np
import pytest

from ppdp.engine.methods.microaggregation import attack as atk
from ppdp.engine.methods.microaggregation import dynamic as dyn
from ppdp.engine.methods.microaggregation.distances import QidKind, encode, fit_schema
from ppdp.engine.methods.microaggregation.linkage import builtin_catalogue, link
from ppdp.errors import DataError

CAT = builtin_catalogue("diseases32")
FOUR = ["anemia", "acne", "gastritis", "epilepsy"]  # four categories


def _g(lo, hi, sa):
    return atk.PublishedGroup((("age", (float(lo), float(hi))),), tuple(sa))


def _base():
    return [_g(20,23, FOUR), _g(60, 63, FOUR)]


def test_insert_without_forged_row_reveals_the_value():
    after = [_g(20, 23, FOUR), _g(60, 63, FOUR + ["bronchitis"])]
    ch = atk.Change(7, "insert", {"age": 61}, "bronchitis")
    (r,) = atk.attack([_base(), after], [[ch]], CAT)
    assert (r.p_exact, r.p_category, r.candidates, r.fallback) == (1.0, 1.0, 1, False)


def test_forged_row_of_the_same_category_hides_the_value_but_not_the_category():
    # The paper's Table 7: bronchitis inserted with a forged pneumonia.
    after = [_g(20, 23, FOUR), _g(60, 63, FOUR + ["bronchitis", "pneumonia"])]
    ch = atk.Change(7, "insert", {"age": 61}, "bronchitis")
    (r,) = atk.attack([_base(), after], [[ch]], CAT)
    assert (r.p_exact, r.p_category) == (0.5, 1.0)


def test_box_growth_still_finds_the_counterpart():
    # The insert widens the box (60-63 -> 60-66): the group is matched by its SA multiset.
    after = [_g(20, 23, FOUR), _g(60, 66, FOUR + ["bronchitis"])]
    ch = atk.Change(7, "insert", {"age": 66}, "bronchitis")
    (r,) = atk.attack([_base(), after], [[ch]], CAT)
    assert (r.p_exact, r.fallback) == (1.0, False)


def test_delete_uses_the_removed_values():
    before = [_g(20, 23, FOUR), _g(60, 63, FOUR + ["bronchitis", "leukemia"])]
    # bronchitis deleted; Alg. 3 rewrote the forged leukemia into acne: removed {bronchitis, leukemia}.
    after = [_g(20, 23, FOUR), _g(60, 63, FOUR + ["acne"])]
    ch = atk.Change(3, "delete", {"age": 62}, "bronchitis")
    (r,) = atk.attack([before, after], [[ch]], CAT)
    assert (r.p_exact, r.p_category, r.candidates) == (0.5, 0.5, 2)


def test_merge_is_matched_by_shared_values():
    before = [_g(20, 23, FOUR), _g(60, 63, ["bronchitis", "anemia", "acne", "epilepsy"])]
    after = [_g(20, 63, FOUR + ["anemia", "acne", "epilepsy"])]  # the rest joined the first group
    ch = atk.Change(3, "delete", {"age": 62}, "bronchitis")
    (r,) = atk.attack([before, after], [[ch]], CAT)
    # 3 of the group's 4 values reappear in one changed group: its counterpart; removed = bronchitis.
    assert (r.p_exact, r.fallback) == (1.0, False)


def test_dissolved_group_falls_back_to_its_whole_multiset():
    gone = ["bronchitis", "pneumonia", "leukemia", "hemophilia"]
    before = [_g(20, 23, FOUR), _g(40, 43, FOUR), _g(60, 63, gone)]
    # Its three remaining records spread over both other groups: none keeps more than half.
    after = [_g(20, 63, FOUR + ["pneumonia", "leukemia"]), _g(40, 63, FOUR + ["hemophilia"])]
    ch = atk.Change(3, "delete", {"age": 62}, "bronchitis")
    (r,) = atk.attack([before, after], [[ch]], CAT)
    assert r.fallback and r.candidates == 4
    assert (r.p_exact, r.p_category) == (0.25, 0.5)


def test_new_group_and_ambiguity_fall_back_to_whole_groups():
    # Two changed groups cover age 40: the attacker cannot tell which one holds the person.
    after = [_g(20, 45, FOUR + ["bronchitis"]), _g(35, 63, FOUR + ["leukemia"])]
    ch = atk.Change(7, "insert", {"age": 40}, "bronchitis")
    (r,) = atk.attack([_base(), after], [[ch]], CAT)
    assert r.fallback and r.candidates == 10
    assert r.p_exact == pytest.approx(1 / 10)
    assert r.p_category == pytest.approx(1 / 10)  # bronchitis is the only respiratory value


def test_set_generalizations_and_modification_of_the_sensitive_value():
    box = (("age", (20.0, 23.0)), ("sex", frozenset({"M", "F"})))
    before = [atk.PublishedGroup(box, tuple(FOUR))]
    # SA-only modification: acne -> leukemia, and Alg. 3 adds a forged gastritis.
    after = [atk.PublishedGroup(box, ("anemia", "leukemia", "gastritis", "epilepsy", "gastritis"))]
    ch = atk.Change(1, "modify", {"age": 21, "sex": "F"}, "leukemia")
    (r,) = atk.attack([before, after], [[ch]], CAT)
    assert (r.p_exact, r.p_category) == (0.5, 0.5)
    assert not atk.PublishedGroup(box, ()).covers({"age": 21, "sex": "X"})


def test_version_and_change_counts_must_agree():
    with pytest.raises(DataError, match="versions"):
        atk.attack([_base()], [[]], CAT)


def _publish(state, ages):
    """Each group as published: age range of its real members (forged rows copy a member's
    QIDs) and every SA value, forged included."""
    out = []
    for g in state.groups:
        a = [ages[int(state.row_ids[r])] for r in g.real]
        out.append(_g(min(a), max(a), [CAT.values[int(state.sa[r])] for r in g.rows]))
    return out


def test_drasl_insert_with_link0_forged_row_gives_one_half():
    ages = {i: a for i, a in enumerate([20, 21, 22, 23, 60, 61, 62, 63])}
    schema = fit_schema([QidKind("age", "continuous")], {"age": list(ages.values())})
    enc = encode(schema, {"age": list(ages.values())})
    state = dyn.from_grouping(enc, CAT.codes(FOUR + FOUR), list(ages), [[0, 1, 2, 3], [4, 5, 6, 7]], CAT, k=4)
    lo, hi = schema.ranges["age"]
    row = dyn.EncodedRow(np.array([(61 - lo) / (hi - lo)]), np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0))
    new = dyn.insert(state, dyn.NewRecord(100, row, CAT.code("bronchitis")))
    ages[100] = 61
    (forged,) = new.forged_records()
    assert link(CAT.values[forged.sa], "bronchitis", CAT) == 0
    ch = atk.Change(100, "insert", {"age": 61}, "bronchitis")
    (r,) = atk.attack([_publish(state, ages), _publish(new, ages)], [[ch]], CAT)
    assert (r.p_exact, r.p_category, r.fallback) == (0.5, 0.5, False)
    s = atk.summarize([r])
    assert s["p_category_max"] == 0.5 and s["changes"] == 1
