"""The audit of DRASL against eq. 7-17 (docs/design/drasl_audit.md): the properties the audit's
verdicts rest on.

- eq. 14 as implemented is eq. 9 minus alpha Pr_SA(G'), in the first release and in the
  dynamic best-group search alike;
- with beta = 0 the criterion (eq. 9 or eq. 14) never looks at the QIDs: the groups do not
  change when the QIDs do;
- every Alg. 1-style algorithm forms floor(|T| / K) groups at the first release, so eq. 17's
  1 / |T| sum of per-group means cannot favour one of them by group count;
- eq. 17 as printed is (groups / |T|) x mean IL(G), the identity the decomposition uses.
"""

from __future__ import annotations

import numpy as np
import pytest

from ppdp.engine.methods.microaggregation import cluster, metrics
from ppdp.engine.methods.microaggregation import dynamic as dyn
from ppdp.engine.methods.microaggregation.algorithms import ALGORITHMS, Params
from ppdp.engine.methods.microaggregation.distances import encode, fit_schema
from ppdp.engine.methods.microaggregation.linkage import builtin_catalogue, probability_after_adding
from tests.methods.microaggregation.test_drasl_core import _random_table

CAT = builtin_catalogue("diseases32")


def _table(seed, n):
    rng = np.random.default_rng(seed)
    kinds, cols = _random_table(rng, n)
    enc = encode(fit_schema(kinds, cols), cols)
    sa = CAT.codes(rng.choice(CAT.values, n).tolist())
    return enc, sa


@pytest.mark.parametrize("seed", [1, 2])
def test_eq14_is_eq9_minus_alpha_pr_in_the_first_release(seed):
    enc, sa = _table(seed, 60)
    members = [3, 17, 41]
    counts = np.bincount(sa[members], minlength=len(CAT.values))
    rows = np.array([r for r in range(60) if r not in members], dtype=np.int64)
    codes = np.arange(len(CAT.values))
    args = (enc, members, counts, rows, sa, CAT, codes, 0.6, 0.4)
    with_link = cluster._scores(*args, linkage=True)
    without = cluster._scores(*args, linkage=False)
    pr = probability_after_adding(counts, codes, CAT)[sa[rows]]
    np.testing.assert_allclose(with_link, without - 0.6 * pr, rtol=0, atol=1e-12)
    assert pr.max() > 0  # the term is exercised


def test_eq14_is_eq9_minus_alpha_pr_when_a_record_joins_a_group():
    enc, sa = _table(3, 48)
    groups = [list(range(i, i + 8)) for i in range(0, 48, 8)]
    drasl = dyn.from_grouping(enc, sa, list(range(48)), groups, CAT, k=8)
    dpp = dyn.from_grouping(enc, sa, list(range(48)), groups, CAT, k=8, linkage=False, forge_unlinked=False)
    new = dyn.EncodedRow.of(enc, 5)
    for s in (0, 9, int(sa[5])):
        pr = np.array([probability_after_adding(drasl.counts[i], np.array([s]), CAT)[0] for i in range(6)])
        np.testing.assert_allclose(dyn.group_scores(drasl, new, s), dyn.group_scores(dpp, new, s) - 0.6 * pr,
                                   rtol=0, atol=1e-12)


@pytest.mark.parametrize("method", ["drasl", "dpp"])
def test_beta_zero_makes_the_criterion_blind_to_the_qids(method):
    enc, sa = _table(4, 64)
    other, _ = _table(5, 64)  # other QIDs, the same SA values
    ids = list(range(64))
    algo = ALGORITHMS.get(method)
    blind = [algo.first_release(e, sa, ids, CAT, Params(k=8, alpha=0.6, beta=0.0)) for e in (enc, other)]
    assert [g.real for g in blind[0].groups] == [g.real for g in blind[1].groups]
    seeing = [algo.first_release(e, sa, ids, CAT, Params(k=8, alpha=0.6, beta=0.4)) for e in (enc, other)]
    assert [g.real for g in seeing[0].groups] != [g.real for g in seeing[1].groups]


@pytest.mark.parametrize(("n", "k"), [(67, 4), (64, 8), (70, 8)])
def test_alg1_style_algorithms_form_the_same_number_of_groups(n, k):
    enc, sa = _table(6, n)
    for method in ("drasl", "dpp", "mdav", "ika", "oka"):
        state = ALGORITHMS.get(method).first_release(enc, sa, list(range(n)), CAT, Params(k=k))
        sizes = [g.size for g in state.groups]
        assert len(sizes) == n // k, method
        assert min(sizes) >= k and sum(sizes) == n, method


def test_eq17_is_group_share_times_mean_group_loss():
    enc, sa = _table(7, 70)
    state = ALGORITHMS.get("drasl").first_release(enc, sa, list(range(70)), CAT, Params(k=8))
    il = metrics.information_loss(state)
    assert metrics.average_information_loss(state) == pytest.approx(len(state.groups) / 70 * il.mean(), rel=1e-12)
    # so at a fixed number of groups, Average_IL ranks releases exactly as the mean IL(G) does
    assert metrics.release_metrics(state).mean_group_loss == pytest.approx(il.mean(), rel=1e-12)
