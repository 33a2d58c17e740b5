"""Evolutionary operators pinned on the papers' worked examples (engine/methods/generalization/optimizers/operators.py).

ID-DGA Fig. 1, 3, 4, 5 (papers/id-dga_k-anonymity_distributed-ga.txt §4.2-4.6); HAEF eq. 9-21
(papers/haef_t-closeness_ga-de.txt §4) with the fixes of docs/design/paper_notes.md §5.
"""

from __future__ import annotations

import numpy as np
import pytest

from ppdp.engine.methods.generalization.optimizers.operators import (
    DE_NAMES,
    DE_STRATEGIES,
    bound_g,
    bound_s,
    cx_binomial,
    cx_info_driven,
    cx_uniform,
    de_best_1,
    de_best_2,
    de_current_to_best_1,
    de_current_to_rand_1,
    de_indices,
    de_rand_1,
    de_rand_2,
    diversity_g,
    diversity_g_many,
    diversity_s,
    diversity_s_from_counts,
    imp_info_driven,
    mut_info_driven,
    mut_reset_flip,
    p_de_strategies,
    p_ga_de,
    pair_up,
    sel_two_dimension,
)


class ScriptedRng:
    """Stands in for np.random.Generator and returns scripted draws, to replay a figure."""

    def __init__(self, randoms=(), integers=()):
        self._r = list(randoms)
        self._i = list(integers)

    def random(self, size=None):
        if size is None:
            return self._r.pop(0)
        out = np.array(self._r[:size], dtype=float)
        del self._r[:size]
        return out

    def integers(self, low, high=None, size=None):
        return self._i.pop(0)


# -- ID-DGA Fig. 1 individual: G = (2, 1, 3); Fig. 4 mutates its third bit 3 -> 2 ------------
G1 = np.array([2, 1, 3])
HEIGHTS = np.array([4, 4, 4])


def test_fig3_crossover_g_from_random_parents_s_or():
    # Fig. 3: bit 1 comes from G1 (2, not G2's 1), bit 2 from G1, bit 3 from G2; S = S1 OR S2
    # gives (1, 1, 1, 0): "the fourth bit ... is zero, since both values in S1 and S2 are zero".
    g2 = np.array([1, 3, 0])
    s1 = np.array([1, 0, 1, 0], dtype=bool)
    s2 = np.array([0, 1, 1, 0], dtype=bool)
    rng = ScriptedRng(randoms=[0.9, 0.7, 0.2])  # >= 0.5 keeps parent 1, < 0.5 takes parent 2
    g, s = cx_info_driven(G1, s1, g2, s2, rng=rng)
    assert g.tolist() == [2, 1, 0]
    assert s.tolist() == [True, True, True, False]


def test_crossover_g_genes_always_come_from_a_parent_and_both_parents_are_used():
    rng = np.random.default_rng(0)
    g1, g2 = np.zeros(200, dtype=int), np.ones(200, dtype=int)
    s1 = rng.random(50) < 0.5
    s2 = rng.random(50) < 0.5
    g, s = cx_info_driven(g1, s1, g2, s2, rng=rng)
    assert set(np.unique(g)) == {0, 1} and 60 < g.sum() < 140
    assert np.array_equal(s, s1 | s2)


def test_fig4_mutation_one_g_gene_redrawn_one_s_gene_set_to_one():
    s1 = np.array([1, 0, 1, 0], dtype=bool)
    # G: draw < MR -> pick bit 3 (index 2) -> new level 2; S: draw < MR -> pick bit 4 -> 1.
    rng = ScriptedRng(randoms=[0.05, 0.05], integers=[2, 2, 3])
    g, s = mut_info_driven(G1, s1, HEIGHTS, mr=0.1, rng=rng)
    assert g.tolist() == [2, 1, 2]
    assert s.tolist() == [True, False, True, True]
    assert G1.tolist() == [2, 1, 3] and s1.tolist() == [True, False, True, False]  # inputs untouched


def test_mutation_skipped_above_rate_and_never_suppresses():
    s1 = np.array([1, 0, 1, 0], dtype=bool)
    g, s = mut_info_driven(G1, s1, HEIGHTS, mr=0.1, rng=ScriptedRng(randoms=[0.5, 0.5]))
    assert g.tolist() == G1.tolist() and s.tolist() == s1.tolist()
    rng = np.random.default_rng(1)
    for _ in range(200):
        g, s = mut_info_driven(G1, s1, HEIGHTS, mr=1.0, rng=rng)
        assert (s >= s1).all() and s.sum() <= s1.sum() + 1  # S only gains one released record
        assert ((g != G1).sum() <= 1) and (0 <= g).all() and (g <= HEIGHTS).all()
    g, s = mut_info_driven(np.zeros(400, dtype=int), np.zeros(400, dtype=bool), np.full(400, 3), mr=0.1,
                           rng=np.random.default_rng(2), per_gene=True)
    assert 10 < s.sum() < 80 and 5 < (g > 0).sum() < 70  # option: every gene with probability MR


def test_improvement_suppresses_all_records_of_lowest_ad():
    # k = 2, Fig. 1-like table of 4 records: class sizes (1, 2, 2, 1) -> R1 and R4 removed.
    s = np.array([1, 1, 1, 1], dtype=bool)
    out = imp_info_driven(s, np.array([1, 2, 2, 1]))
    assert out.tolist() == [False, True, True, False]
    # Suppressed records (AD 0) are ignored: the lowest AD among retained ones is 2 here.
    out = imp_info_driven(np.array([0, 1, 1, 1], dtype=bool), np.array([0, 2, 2, 3]))
    assert out.tolist() == [False, False, False, True]
    # t-closeness: lower AD is safer, so the records of the farthest class go.
    out = imp_info_driven(s, np.array([0.1, 0.4, 0.4, 0.2]), higher_is_safer=False)
    assert out.tolist() == [True, False, False, True]


def test_fig5_two_dimension_selection():
    # k = 2; violation = (k - AD) / k as in engine/privacy/k_anonymity.py.
    # Pair 1: both infeasible, higher AD (1.5 vs 1, i.e. lower violation) wins.
    assert sel_two_dimension(False, 0.25, 900.0, False, 0.5, 1000.0)
    assert not sel_two_dimension(False, 0.5, 1000.0, False, 0.25, 900.0)
    # Pair 2: the feasible one wins whatever its TD.
    assert sel_two_dimension(True, 0.0, 10.0, False, 0.1, 1000.0)
    assert not sel_two_dimension(False, 0.1, 1000.0, True, 0.0, 10.0)
    # Pair 3: both feasible, higher TD wins; ties keep the incumbent.
    assert sel_two_dimension(True, 0.0, 20.0, True, 0.0, 10.0)
    assert not sel_two_dimension(True, 0.0, 10.0, True, 0.0, 10.0)
    got = sel_two_dimension(np.array([True, False]), np.array([0.0, 0.2]), np.array([5.0, 9.0]),
                            np.array([True, False]), np.array([0.0, 0.3]), np.array([6.0, 1.0]))
    assert got.tolist() == [False, True]


def test_uniform_crossover_and_reset_flip_mutation():
    rng = np.random.default_rng(3)
    g1, g2 = np.zeros(1000, dtype=int), np.full(1000, 2)
    s1, s2 = np.zeros(1000, dtype=bool), np.ones(1000, dtype=bool)
    g, s = cx_uniform(g1, s1, g2, s2, cr=0.5, rng=rng)
    assert 400 < (g == 2).sum() < 600 and 400 < s.sum() < 600
    g, s = cx_uniform(g1, s1, g2, s2, cr=0.0, rng=rng)
    assert (g == 0).all() and not s.any()
    g, s = mut_reset_flip(g1, s2, np.full(1000, 4), mr=0.2, rng=rng)
    assert 120 < (~s).sum() < 280  # bits flipped with rate 0.2
    assert (g <= 4).all() and 100 < (g > 0).sum() < 220  # redrawn with rate 0.2 (4/5 land above 0)


def test_batch_crossover_and_mutation_act_row_by_row():
    # The GA generation makes all children at once: row j depends on parents' row j only.
    rng = np.random.default_rng(5)
    m, n = 400, 50
    g1, g2 = np.zeros((m, 3), dtype=int), np.full((m, 3), 2)
    s1, s2 = np.zeros((m, n), dtype=bool), np.ones((m, n), dtype=bool)
    g, s = cx_uniform(g1, s1, g2, s2, cr=0.3, rng=rng)
    assert g.shape == (m, 3) and s.shape == (m, n) and set(np.unique(g)) <= {0, 2}
    assert 0.25 < s.mean() < 0.35 and 0.2 < (g == 2).mean() < 0.4
    heights = np.array([0, 1, 4])
    g, s = mut_reset_flip(np.zeros((m, 3), dtype=int), s1, heights, mr=0.5, rng=rng)
    assert (g <= heights).all() and (g[:, 0] == 0).all() and (g[:, 2] > 0).any()
    assert 0.45 < s.mean() < 0.55


def test_pair_up_is_a_random_disjoint_pairing():
    pairs = pair_up(7, rng=np.random.default_rng(0))
    assert pairs.shape == (3, 2) and len(set(pairs.ravel())) == 6


# -- HAEF DE --------------------------------------------------------------------------------
X = np.array([[0.0, 0.0], [1.0, 2.0], [3.0, 1.0], [2.0, 2.0], [4.0, 0.0], [1.0, 1.0], [0.0, 3.0]])


def test_de_strategies_eq14_to_19():
    f = 0.5
    r = np.array([1, 2, 3, 4, 5])
    i, best = 0, 6
    assert np.allclose(de_rand_1(X, i, best, r, f=f), X[1] + f * (X[2] - X[3]))
    assert np.allclose(de_best_1(X, i, best, r, f=f), X[6] + f * (X[1] - X[2]))
    assert np.allclose(de_rand_2(X, i, best, r, f=f), X[1] + f * (X[2] - X[3]) + f * (X[4] - X[5]))
    assert np.allclose(de_best_2(X, i, best, r, f=f), X[6] + f * (X[1] - X[2]) + f * (X[3] - X[4]))
    assert np.allclose(de_current_to_rand_1(X, i, best, r, f=f), X[0] + f * (X[1] - X[0]) + f * (X[2] - X[3]))
    assert np.allclose(de_current_to_best_1(X, i, best, r, f=f), X[0] + f * (X[6] - X[0]) + f * (X[1] - X[2]))
    # Batch form: one row per target.
    idx = np.array([0, 3])
    R = np.array([[1, 2, 3, 4, 5], [2, 4, 6, 0, 1]])
    batch = de_rand_2(X, idx, best, R, f=f)
    assert np.allclose(batch[1], de_rand_2(X, 3, best, R[1], f=f))
    assert DE_NAMES == ("rand/1", "best/1", "rand/2", "best/2", "current-to-rand/1", "current-to-best/1")
    assert [k for _, k in DE_STRATEGIES.values()] == [3, 2, 5, 4, 3, 2]


def test_de_indices_distinct_and_not_the_target():
    rng = np.random.default_rng(0)
    for i in range(7):
        r = de_indices(7, i, 5, rng=rng)
        assert len(set(r.tolist())) == 5 and i not in r and r.max() < 7
    with pytest.raises(ValueError):
        de_indices(5, 0, 5, rng=rng)
    # One draw per target in a batch; every (target, index) combination occurs.
    targets = np.arange(6).repeat(200)
    r = de_indices(6, targets, 5, rng=rng)
    assert r.shape == (1200, 5) and (r != targets[:, None]).all() and (r < 6).all()
    assert all(len(set(row)) == 5 for row in r.tolist())
    assert len({(t, x) for t, row in zip(targets.tolist(), r.tolist(), strict=True) for x in row}) == 6 * 5


def test_boundary_rule_g():
    # HAEF §4.3.2 / docs/design/paper_notes.md §5: v < 0 -> 0; v > up -> random integer in (0, up]; else round.
    rng = np.random.default_rng(0)
    up = np.array([3, 3, 3, 3, 3, 0])
    out = bound_g(np.array([-0.5, 1.4, 1.5, 2.6, 3.0, 0.3]), up, rng=rng)
    assert out.tolist() == [0, 1, 2, 3, 3, 0]
    over = np.array([bound_g(np.array([7.2]), np.array([3]), rng=rng)[0] for _ in range(300)])
    assert set(over.tolist()) == {1, 2, 3}  # never 0, every level of (0, up] reachable
    assert bound_g(np.array([5.0]), np.array([0]), rng=rng).tolist() == [0]  # empty (0, 0]
    batch = bound_g(np.array([[-1.0, 9.0], [0.6, 1.6]]), np.array([2, 2]), rng=rng)
    assert batch[0, 0] == 0 and batch[0, 1] in (1, 2) and batch[1].tolist() == [1, 2]


def test_boundary_rule_s():
    # v < 0 -> random 0/1; v > 1 -> 1; 0 <= v <= 1 -> 1 with probability v.
    rng = np.random.default_rng(0)
    n = 20000
    neg = bound_s(np.full(n, -0.7), rng=rng)
    assert 0.47 < neg.mean() < 0.53
    assert bound_s(np.full(100, 1.8), rng=rng).all()
    assert 0.28 < bound_s(np.full(n, 0.3), rng=rng).mean() < 0.32
    assert not bound_s(np.zeros(100), rng=rng).any() and bound_s(np.ones(100), rng=rng).all()


def test_binomial_crossover_jrand_guarantees_one_mutant_gene():
    # Eq. 20 with j_rand over the vector's length (docs/design/paper_notes.md §5): with CR = 0 exactly one gene.
    rng = np.random.default_rng(0)
    x, v = np.zeros(9), np.ones(9)
    seen = set()
    for _ in range(200):
        u = cx_binomial(x, v, cr=0.0, rng=rng)
        assert u.sum() == 1
        seen.add(int(np.argmax(u)))
    assert seen == set(range(9))  # j_rand ranges over all n positions, not [1, NP]
    U = cx_binomial(np.zeros((50, 400)), np.ones((50, 400)), cr=0.0, rng=rng)
    assert (U.sum(1) == 1).all()  # one j_rand per row of a batch
    assert 0.25 < cx_binomial(np.zeros(4000), np.ones(4000), cr=0.3, rng=rng).mean() < 0.35
    assert cx_binomial(np.zeros(5), np.ones(5), cr=1.0, rng=rng).all()


# -- HAEF adaptive hierarchies ----------------------------------------------------------------


def test_eq9_10_ga_de_probabilities():
    # No success counted yet: the time term alone, p_ga = 1 at the start (§4.2.1).
    assert p_ga_de(0, 0, 0, 0, 0.0) == (1.0, 0.0)
    assert p_ga_de(3, 7, 0, 0, 0.4) == pytest.approx((0.6, 0.4))
    # Eq. 9 with ns -> ns_ga fixed: a = ns_de (ns_ga + nf_ga) = 3 * 10, b = ns_ga (ns_de + nf_de) = 2 * 6.
    p_ga, p_de = p_ga_de(2, 8, 3, 3, 0.25)
    assert p_de == pytest.approx(0.5 * (30 / 42 + 0.25))
    assert p_ga == pytest.approx(0.5 * (12 / 42 + 0.75))
    rng = np.random.default_rng(0)
    for _ in range(200):
        ns_ga, nf_ga, ns_de, nf_de = rng.integers(0, 20, size=4)
        g = rng.random()
        for priority in (True, False):
            p_ga, p_de = p_ga_de(ns_ga, nf_ga, ns_de, nf_de, g, priority=priority)
            assert p_ga + p_de == pytest.approx(1.0) and 0 <= p_de <= 1
    # Without priority: success shares only (1/2 each when nothing is known).
    assert p_ga_de(2, 8, 3, 3, 0.9, priority=False)[1] == pytest.approx(30 / 42)
    assert p_ga_de(0, 0, 0, 0, 0.9, priority=False) == (0.5, 0.5)


def test_eq11_13_de_strategy_probabilities():
    ns = np.array([5, 0, 2, 1, 0, 3])
    nf = np.array([5, 4, 2, 3, 0, 1])
    for g in (0.0, 0.3, 1.0):
        p = p_de_strategies(ns, nf, g)
        assert p.sum() == pytest.approx(1.0) and (p > 0).all()
    eps = 1e-6
    sm = ns / (ns + nf + eps) + eps
    p = p_de_strategies(ns, nf, 0.3)
    assert p[0] == pytest.approx(0.25 * (sm[0] / sm.sum() + 0.7))  # eq. 12, random-based
    assert p[1] == pytest.approx(0.25 * (sm[1] / sm.sum() + 0.3))  # eq. 13, best-based
    # Early: random-based strategies favoured; late: best-based (random-prioritized adaptation).
    flat = p_de_strategies(np.zeros(6), np.zeros(6), 0.0)
    assert flat[[0, 2, 4]].sum() == pytest.approx(0.875) and flat[[1, 3, 5]].sum() == pytest.approx(0.125)
    assert p_de_strategies(np.zeros(6), np.zeros(6), 1.0)[[1, 3, 5]].sum() == pytest.approx(0.875)
    assert p_de_strategies(ns, nf, 0.5, priority=False) == pytest.approx(sm / sm.sum())


# -- diversity (HAEF Fig. 9) -------------------------------------------------------------------


def test_diversity_sums_over_pairs():
    G = np.array([[0, 0], [3, 4], [0, 4]])
    assert diversity_g(G) == pytest.approx(5 + 4 + 3)
    S = np.array([[1, 0, 1], [1, 1, 1], [0, 0, 0]], dtype=bool)
    brute = sum((S[i] != S[j]).sum() for i in range(3) for j in range(i + 1, 3))
    assert diversity_s(S) == brute == 1 + 2 + 3
    assert diversity_s_from_counts(S.sum(0), 3) == brute


def test_diversity_of_integer_levels_is_the_direct_sum_bit_for_bit():
    """The Gram-matrix form used for integer G (and for many populations at once) gives
    exactly the numbers of the direct pairwise-difference form (squared distances are exact)."""
    def direct(G):
        F = np.asarray(G, dtype=np.float64)
        return float(np.triu(np.sqrt(((F[:, None, :] - F[None, :, :]) ** 2).sum(-1)), 1).sum())

    rng = np.random.default_rng(4)
    for _ in range(300):
        D, P, q, h = (int(x) for x in rng.integers([1, 1, 1, 1], [6, 45, 16, 12]))
        G = rng.integers(0, h + 1, size=(D, P, q))
        many = diversity_g_many(G.astype(np.uint8))
        for k in range(D):
            assert diversity_g(G[k]) == direct(G[k]) == many[k]
    assert diversity_g(np.array([[0.5, 0.0], [0.0, 0.0]])) == 0.5  # real-valued G: the direct form
