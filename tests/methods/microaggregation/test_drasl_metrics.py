"""DRASL evaluation metrics (eq. 15-17): engine/methods/microaggregation/metrics.py.

Expected values are computed by hand from the equations (shown in each test), with the shipped
``diseases32`` catalogue (blood: anemia, leukemia, ...; skin: acne, ...; digestive: gastritis, ...).
"""

from __future__ import annotations

import numpy as np
import pytest

from ppdp.engine.methods.microaggregation import dynamic as dyn
from ppdp.engine.methods.microaggregation import metrics
from ppdp.engine.methods.microaggregation.distances import QidKind, encode, fit_schema
from ppdp.engine.methods.microaggregation.linkage import builtin_catalogue, linkage_probability

CAT = builtin_catalogue("diseases32")


def _state(columns, kinds, diseases, groups, k):
    schema = fit_schema(kinds, columns)
    enc = encode(schema, columns)
    return dyn.from_grouping(enc, CAT.codes(diseases), list(range(len(diseases))), groups, CAT, k=k), schema


def _two_age_groups():
    # age range 20..64 = 44; G1 = {20, 22, 24}, G2 = {60, 62, 64}
    ages = [20, 22, 24, 60, 62, 64]
    diseases = ["anemia", "leukemia", "acne", "acne", "acne", "gastritis"]
    return _state({"age": ages}, [QidKind("age", "continuous")], diseases, [[0, 1, 2], [3, 4, 5]], k=3)


def test_total_pr_is_the_sum_of_eq13_over_groups():
    state, _ = _two_age_groups()
    # G1: Link(anemia, leukemia) = 1 (both blood), the acne pairs 0 -> Tlink 1, Pr = 1 / (3 * 2).
    # G2: Link(acne, acne) = 2, the gastritis pairs 0 -> Tlink 2, Pr = 2 / 6.
    assert metrics.group_probabilities(state) == pytest.approx([1 / 6, 2 / 6])
    assert metrics.total_pr(state) == pytest.approx(0.5)


def test_information_loss_and_average_il_follow_eq16_and_eq17():
    state, _ = _two_age_groups()
    # G1: centroid age 22; d = |20-22|/44, 0, |24-22|/44, divided by |QIA| = 1; IL = (4/44) / 3 = 1/33.
    # G2 is G1 shifted by 40: the same IL.
    assert metrics.information_loss(state) == pytest.approx([1 / 33, 1 / 33])
    # Eq. 17: (IL(G1) + IL(G2)) / |T| with |T| = 6 records.
    assert metrics.average_information_loss(state) == pytest.approx((2 / 33) / 6)
    m = metrics.release_metrics(state)
    assert (m.groups, m.real_records, m.forged_rows) == (2, 6, 0)
    assert m.mean_group_loss == pytest.approx(1 / 33)


def test_information_loss_with_a_non_semantic_nominal_qid():
    # ages 20, 30, 40 (range 20) and sex M, M, F: centroid (30, M); |QIA| = 2.
    # d = (0.5 + 0) / 2, (0 + 0) / 2, (0.5 + 1) / 2 -> IL = (0.25 + 0 + 0.75) / 3 = 1/3.
    state, _ = _state({"age": [20, 30, 40], "sex": ["M", "M", "F"]},
                      [QidKind("age", "continuous"), QidKind("sex", "nominal")],
                      ["anemia", "acne", "gastritis"], [[0, 1, 2]], k=3)
    assert metrics.information_loss(state) == pytest.approx([1 / 3])
    assert metrics.average_information_loss(state) == pytest.approx(1 / 9)
    assert metrics.total_pr(state) == 0.0  # three categories: no linkage


def test_forged_rows_count_in_total_pr_and_il_but_not_in_T():
    state, schema = _two_age_groups()
    lo, hi = schema.ranges["age"]
    empty_i = np.zeros(0, dtype=np.int32)
    row = dyn.EncodedRow(np.array([(62 - lo) / (hi - lo)]), empty_i, empty_i, np.zeros(0))
    new = dyn.insert(state, dyn.NewRecord(99, row, CAT.code("bronchitis")))
    assert new.forged_count == 1
    # Published groups as lists of values, forged included, then eq. 13 by the plain-Python path.
    published = [[CAT.values[int(new.sa[r])] for r in g.rows] for g in new.groups]
    assert sum(len(p) for p in published) == 8  # 6 + the new record + 1 forged row
    assert metrics.total_pr(new) == pytest.approx(sum(linkage_probability(p, CAT) for p in published))
    m = metrics.release_metrics(new)
    assert (m.real_records, m.forged_rows) == (7, 1)
    # |T| is the 7 real records, not the 8 published rows.
    assert m.average_il == pytest.approx(metrics.information_loss(new).sum() / 7)
    # The forged row copies a member's QIDs (age 62 = the centroid-nearest member of G2), so
    # G2 = {60, 62, 64, 62, 62}: centroid 62, IL = (2 + 0 + 2 + 0 + 0) / 44 / 5.
    i = new.group_of(99)
    assert metrics.information_loss(new)[i] == pytest.approx(4 / 44 / 5)
