"""Evolutionary operators as small free functions on NumPy genomes (docs/design/style.md, DEAP/pymoo).

A solution is a pair of vectors (docs/design/paper_notes.md §1): ``g`` (nQ,) int levels in [0, heights] and
``s`` (nR,) bool keep flags (True = the papers' S = 1, the record is released). Every function
takes an explicit ``np.random.Generator`` as the keyword ``rng`` and never changes its inputs.

Naming: ``cx_*`` crossover, ``mut_*`` mutation, ``imp_*`` improvement, ``de_*`` DE mutant
vectors, ``bound_*`` DE boundary rules, ``sel_*`` selection, ``p_*`` adaptive probabilities.

* ID-DGA (papers/id-dga_k-anonymity_distributed-ga.txt): ``cx_info_driven`` (§4.3, Fig. 3),
  ``mut_info_driven`` (§4.4, Fig. 4), ``imp_info_driven`` (§4.5), ``sel_two_dimension`` (§4.6).
* Plain GA (ID-DGA Table 2 baseline, HAEF Algorithm 2): ``cx_uniform``, ``mut_reset_flip``.
* HAEF (papers/haef_t-closeness_ga-de.txt): the six DE strategies eq. 14-19, the boundary rules
  of §4.3.2 as fixed by docs/design/paper_notes.md §5 (``bound_g``, ``bound_s``), binomial crossover eq. 20
  (``cx_binomial``, j_rand over the vector length, docs/design/paper_notes.md §5), the two adaptive hierarchies
  eq. 9-10 (``p_ga_de``, typo of eq. 9 fixed) and eq. 11-13 (``p_de_strategies``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

# ---------------------------------------------------------------------------------------
# ID-DGA operators (§4.3-4.6)
# ---------------------------------------------------------------------------------------


def cx_info_driven(g1: np.ndarray, s1: np.ndarray, g2: np.ndarray, s2: np.ndarray, *,
                   rng: np.random.Generator, cr: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """Information-driven crossover (ID-DGA §4.3, Fig. 3): one child from two parents.

    Each G gene is taken from a parent chosen at random (from ``g2`` with probability ``cr``,
    0.5 = the paper's fair choice); S is the OR of the parents' S (a record released by either
    parent is released by the child).
    """
    take2 = rng.random(len(g1)) < cr
    return np.where(take2, g2, g1), np.logical_or(s1, s2)


def mut_info_driven(g: np.ndarray, s: np.ndarray, heights: np.ndarray, *, mr: float,
                    rng: np.random.Generator, per_gene: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Information-driven mutation (ID-DGA §4.4, Fig. 4).

    With probability ``mr`` one random G gene is redrawn uniformly in [0, height]; independently,
    with probability ``mr`` one random S gene is set to 1 (its record is released). docs/design/paper_notes.md §4:
    Fig. 4 shows one gene per vector; ``per_gene=True`` is the documented option where every
    gene mutates with probability ``mr`` (G redraw, S set to 1).
    """
    g = np.array(g, copy=True)
    s = np.array(s, copy=True)
    heights = np.asarray(heights)
    if per_gene:
        gm = rng.random(len(g)) < mr
        g[gm] = rng.integers(0, heights[gm] + 1)
        s[rng.random(len(s)) < mr] = True
        return g, s
    if rng.random() < mr:
        q = rng.integers(len(g))
        g[q] = rng.integers(0, heights[q] + 1)
    if rng.random() < mr and len(s):
        s[rng.integers(len(s))] = True
    return g, s


def imp_info_driven(s: np.ndarray, record_ad: np.ndarray, *, higher_is_safer: bool = True) -> np.ndarray:
    """Information-driven improvement (ID-DGA §4.5): suppress the least safe retained records.

    ``record_ad`` is each record's AD (the AD of its equivalence class, e.g. its class size
    for k-anonymity, ``Problem.record_class_sizes``); suppressed records are ignored. All
    retained records with the lowest AD (the highest when ``higher_is_safer`` is False, e.g.
    a t-closeness distance or a violation) get S = 0. Applied once (docs/design/paper_notes.md §4).
    """
    s = np.array(s, dtype=bool, copy=True)
    if not s.any():
        return s
    ad = np.asarray(record_ad, dtype=np.float64)
    worst = ad[s].min() if higher_is_safer else ad[s].max()
    s[s & (ad == worst)] = False
    return s


def sel_two_dimension(feasible_a, violation_a, td_a, feasible_b, violation_b, td_b):
    """Two-dimension selection (ID-DGA §4.6, HAEF eq. 21): does ``a`` beat ``b``? (strictly)

    (1) both infeasible: the one closer to feasibility wins (smaller normalized violation, i.e.
    higher AD for k-anonymity, lower AD for t-closeness, docs/design/paper_notes.md §2); (2) only one feasible:
    it wins; (3) both feasible: higher TD wins. Ties keep ``b``. Works on scalars or arrays.
    """
    fa = np.asarray(feasible_a, dtype=bool)
    fb = np.asarray(feasible_b, dtype=bool)
    return (fa & ~fb) | (fa & fb & (np.asarray(td_a) > np.asarray(td_b))) | (
        ~fa & ~fb & (np.asarray(violation_a) < np.asarray(violation_b)))


# ---------------------------------------------------------------------------------------
# Plain GA (ID-DGA baseline "GA", HAEF Algorithm 2)
# ---------------------------------------------------------------------------------------


def cx_uniform(g1: np.ndarray, s1: np.ndarray, g2: np.ndarray, s2: np.ndarray, *, cr: float,
               rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Uniform crossover: every gene of the child comes from parent 2 with probability ``cr``
    (CR_ga, HAEF §6.1.1), from parent 1 otherwise; G and S alike. Vectors are the last axis:
    (m, n) parents make m children at once."""
    mg = rng.random(np.shape(g1)) < cr
    ms = rng.random(np.shape(s1)) < cr
    return np.where(mg, g2, g1), np.where(ms, s2, s1)


def mut_reset_flip(g: np.ndarray, s: np.ndarray, heights: np.ndarray, *, mr: float,
                   rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Per-gene mutation with rate ``mr`` (MR_ga): G gene redrawn uniformly in [0, height]
    (random reset), S bit flipped (docs/design/paper_notes.md §4-5). Vectors are the last axis (one or a batch)."""
    g = np.array(g, copy=True)
    s = np.array(s, copy=True)
    up = np.broadcast_to(np.asarray(heights), g.shape)
    gm = rng.random(g.shape) < mr
    g[gm] = rng.integers(0, up[gm] + 1)
    sm = rng.random(s.shape) < mr
    s[sm] = ~s[sm]
    return g, s


def pair_up(n: int, *, rng: np.random.Generator) -> np.ndarray:
    """Random disjoint parent pairs (ID-DGA Algorithm 1 line 16, HAEF Algorithm 2 line 2):
    (n // 2, 2) indices; with an odd ``n`` one individual sits out."""
    perm = rng.permutation(n)
    return perm[: 2 * (n // 2)].reshape(-1, 2)


# ---------------------------------------------------------------------------------------
# DE: the six mutation strategies (HAEF eq. 14-19), boundary rules, binomial crossover
#
# A strategy maps the population matrix ``x`` (NP, n) to mutant vectors. ``i`` is the target's
# index, ``best`` the best individual's index and ``r`` the random indices r1, r2, ... (last
# axis). With an int ``i`` and ``r`` of shape (k,) it returns one mutant (n,); with ``i`` of
# shape (m,) and ``r`` of shape (m, k) a batch (m, n). The arithmetic is in reals; the
# boundary rules then bring G back to levels and S to bits (docs/design/paper_notes.md §5).
# ---------------------------------------------------------------------------------------


def de_rand_1(x: np.ndarray, i: int, best: int, r: np.ndarray, *, f: float) -> np.ndarray:
    """DE/rand/1, eq. 14: V = X_r1 + F (X_r2 - X_r3)."""
    return x[r[..., 0]] + f * (x[r[..., 1]] - x[r[..., 2]])


def de_best_1(x: np.ndarray, i: int, best: int, r: np.ndarray, *, f: float) -> np.ndarray:
    """DE/best/1, eq. 15: V = X_best + F (X_r1 - X_r2)."""
    return x[best] + f * (x[r[..., 0]] - x[r[..., 1]])


def de_rand_2(x: np.ndarray, i: int, best: int, r: np.ndarray, *, f: float) -> np.ndarray:
    """DE/rand/2, eq. 16: V = X_r1 + F (X_r2 - X_r3) + F (X_r4 - X_r5)."""
    return x[r[..., 0]] + f * (x[r[..., 1]] - x[r[..., 2]]) + f * (x[r[..., 3]] - x[r[..., 4]])


def de_best_2(x: np.ndarray, i: int, best: int, r: np.ndarray, *, f: float) -> np.ndarray:
    """DE/best/2, eq. 17: V = X_best + F (X_r1 - X_r2) + F (X_r3 - X_r4)."""
    return x[best] + f * (x[r[..., 0]] - x[r[..., 1]]) + f * (x[r[..., 2]] - x[r[..., 3]])


def de_current_to_rand_1(x: np.ndarray, i: int, best: int, r: np.ndarray, *, f: float) -> np.ndarray:
    """DE/current-to-rand/1, eq. 18: V = X_i + F (X_r1 - X_i) + F (X_r2 - X_r3)."""
    return x[i] + f * (x[r[..., 0]] - x[i]) + f * (x[r[..., 1]] - x[r[..., 2]])


def de_current_to_best_1(x: np.ndarray, i: int, best: int, r: np.ndarray, *, f: float) -> np.ndarray:
    """DE/current-to-best/1, eq. 19: V = X_i + F (X_best - X_i) + F (X_r1 - X_r2)."""
    return x[i] + f * (x[best] - x[i]) + f * (x[r[..., 0]] - x[r[..., 1]])


DeStrategy = Callable[..., np.ndarray]

# delta = 1..6 of eq. 11-13, in the paper's order; value: (function, random indices it needs).
DE_STRATEGIES: dict[str, tuple[DeStrategy, int]] = {
    "rand/1": (de_rand_1, 3),
    "best/1": (de_best_1, 2),
    "rand/2": (de_rand_2, 5),
    "best/2": (de_best_2, 4),
    "current-to-rand/1": (de_current_to_rand_1, 3),
    "current-to-best/1": (de_current_to_best_1, 2),
}
DE_NAMES: tuple[str, ...] = tuple(DE_STRATEGIES)
# eq. 12 applies to the random-based strategies (delta = 1, 3, 5), eq. 13 to the best-based.
DE_RANDOM_BASED = np.array([True, False, True, False, True, False])


def de_indices(n: int, i: int | np.ndarray, k: int, *, rng: np.random.Generator) -> np.ndarray:
    """``k`` mutually different random indices in [0, n), all different from ``i`` (eq. 14-19).

    ``i`` one target -> (k,); ``i`` of shape (m,) -> (m, k), one draw per target (a random
    permutation of the n - 1 others, cut to k)."""
    if n - 1 < k:
        raise ValueError(f"DE needs {k} individuals besides the target, the population has {n}")
    i = np.asarray(i)
    r = np.argsort(rng.random((*i.shape, n - 1)), axis=-1)[..., :k]
    return r + (r >= i[..., None])


def bound_g(v: np.ndarray, up: np.ndarray, *, rng: np.random.Generator) -> np.ndarray:
    """Boundary rule for G (HAEF §4.3.2, docs/design/paper_notes.md §5): v < 0 -> 0; v > up -> a random
    integer in (0, up]; otherwise the nearest integer (halves round up)."""
    v = np.asarray(v, dtype=np.float64)
    up = np.broadcast_to(np.asarray(up, dtype=np.int64), v.shape)
    out = np.floor(v + 0.5).astype(np.int64)
    out[v < 0] = 0
    over = v > up
    if over.any():
        # (0, up] is empty for a QID of height 0: keep 0 then.
        out[over] = rng.integers(np.minimum(1, up[over]), up[over] + 1)
    return np.clip(out, 0, up)


def bound_s(v: np.ndarray, *, rng: np.random.Generator) -> np.ndarray:
    """Boundary rule for S (HAEF §4.3.2, docs/design/paper_notes.md §5): v < 0 -> random 0/1; v > 1 -> 1;
    0 <= v <= 1 -> 1 with probability v."""
    v = np.asarray(v, dtype=np.float64)
    u = rng.random(v.shape)
    return np.where(v < 0, u < 0.5, np.where(v > 1, True, u < v))


def cx_binomial(x: np.ndarray, v: np.ndarray, *, cr: float, rng: np.random.Generator) -> np.ndarray:
    """Binomial crossover, HAEF eq. 20: u_j = v_j if rand_j <= CR or j = j_rand, else x_j.

    j_rand is drawn over the vector's own length (docs/design/paper_notes.md §5 fixes the printed [1, NP]),
    so the trial always takes at least one gene from the mutant. Vectors are the last axis:
    ``x`` and ``v`` of shape (m, n) cross m pairs, each with its own j_rand.
    """
    v = np.asarray(v)
    x = np.broadcast_to(np.asarray(x), v.shape)
    n = v.shape[-1]
    take = rng.random(v.shape) <= cr
    if v.ndim == 1:
        take[rng.integers(n)] = True
    else:
        flat = take.reshape(-1, n)
        flat[np.arange(flat.shape[0]), rng.integers(n, size=flat.shape[0])] = True
    return np.where(take, v, x)


# ---------------------------------------------------------------------------------------
# HAEF adaptive hierarchies
# ---------------------------------------------------------------------------------------


def p_ga_de(ns_ga: int, nf_ga: int, ns_de: int, nf_de: int, progress: float, *,
            priority: bool = True) -> tuple[float, float]:
    """GA-DE adaptation hierarchy, HAEF eq. 9-10 -> (p_ga, p_de).

    a = ns_de (ns_ga + nf_ga) (eq. 9 with the typo ``ns`` -> ``ns_ga`` fixed, docs/design/paper_notes.md §5),
    b = ns_ga (ns_de + nf_de); p_de = (a / (a + b) + g/gamma) / 2, p_ga = (b / (a + b) + 1 -
    g/gamma) / 2, so p_ga + p_de = 1. ``progress`` is g/gamma. When a + b = 0 (no success
    counted for one of them) only the time term is used: p_de = g/gamma. ``priority=False``
    (ablation "without priority strategy") drops the g/gamma terms: p_de = a / (a + b), and
    1/2 each when a + b = 0.
    """
    a = ns_de * (ns_ga + nf_ga)
    b = ns_ga * (ns_de + nf_de)
    progress = min(max(float(progress), 0.0), 1.0)
    if a + b == 0:
        p_de = progress if priority else 0.5
    elif priority:
        p_de = 0.5 * (a / (a + b) + progress)
    else:
        p_de = a / (a + b)
    return 1.0 - p_de, p_de


def p_de_strategies(ns: np.ndarray, nf: np.ndarray, progress: float, *, priority: bool = True,
                    eps: float = 1e-6) -> np.ndarray:
    """DEs adaptation hierarchy, HAEF eq. 11-13 -> probabilities of the six strategies.

    sm_d = ns_d / (ns_d + nf_d + eps) + eps (eq. 11); random-based d = 1, 3, 5:
    p_d = (sm_d / sum sm + 1 - g/gamma) / 4 (eq. 12); best-based d = 2, 4, 6:
    p_d = (sm_d / sum sm + g/gamma) / 4 (eq. 13). They sum to 1 (docs/design/paper_notes.md §5).
    ``priority=False`` drops the g/gamma terms: p_d = sm_d / sum sm.
    """
    ns = np.asarray(ns, dtype=np.float64)
    nf = np.asarray(nf, dtype=np.float64)
    sm = ns / (ns + nf + eps) + eps
    share = sm / sm.sum()
    if not priority:
        return share
    progress = min(max(float(progress), 0.0), 1.0)
    return 0.25 * (share + np.where(DE_RANDOM_BASED, 1.0 - progress, progress))


# ---------------------------------------------------------------------------------------
# Population diversity (HAEF §6.1.4, Fig. 9)
# ---------------------------------------------------------------------------------------


def _exact_gram(G: np.ndarray) -> bool:
    """Integer G whose squared norms and dot products are exact in float64 (below 2^52)."""
    if not np.issubdtype(G.dtype, np.integer) or not G.size:
        return False
    top = int(np.abs(G.astype(np.int64)).max())
    return top * top * G.shape[-1] < 2**52


def diversity_g(G: np.ndarray) -> float:
    """Sum over pairs of individuals of the Euclidean distance of their G vectors.

    Integer G (levels): the squared distances |a|^2 + |b|^2 - 2 a.b are exact integers (in
    float64 below 2^53), so each distance, and the sum over the same matrix, is bit-identical
    to the direct (P, P, nQ) difference form used for real-valued G, at a fraction of its cost.
    """
    G = np.asarray(G)
    if _exact_gram(G):
        F = G.astype(np.float64)
        sq = (F * F).sum(1)
        d2 = sq[:, None] + sq[None, :] - 2.0 * (F @ F.T)
        d = np.sqrt(np.maximum(d2, 0.0))
    else:
        G = G.astype(np.float64)
        d = np.sqrt(((G[:, None, :] - G[None, :, :]) ** 2).sum(-1))
    return float(np.triu(d, 1).sum())


def diversity_g_many(G: np.ndarray) -> np.ndarray:
    """``diversity_g`` of each of D populations of the same size at once: G (D, P, nQ) integer
    levels -> (D,) floats, bit-identical to ``diversity_g(G[k])`` (the same exact squared
    distances, and the same sum over each population's own (P, P) matrix)."""
    G = np.asarray(G)
    if G.ndim != 3 or not _exact_gram(G):
        return np.array([diversity_g(g) for g in G], dtype=np.float64)
    F = G.astype(np.float64)
    sq = (F * F).sum(2)
    d = np.matmul(F, F.transpose(0, 2, 1))  # exact: sums of products of small integers
    d *= -2.0
    d += sq[:, :, None]
    d += sq[:, None, :]
    np.maximum(d, 0.0, out=d)
    np.sqrt(d, out=d)
    d *= np.triu(np.ones(d.shape[1:], dtype=bool), 1)  # = np.triu(d[k], 1), zeros below the diagonal
    return np.array([float(x.sum()) for x in d], dtype=np.float64)


def diversity_s_from_counts(ones: np.ndarray, n: int) -> float:
    """Sum over pairs of the Hamming distance of their S vectors, from the per-record count of
    ones over the ``n`` individuals: sum_j ones_j (n - ones_j)."""
    ones = np.asarray(ones, dtype=np.int64)
    return float((ones * (n - ones)).sum())


def diversity_s(S: np.ndarray) -> float:
    """Sum over pairs of individuals of the Hamming distance of their S vectors."""
    S = np.asarray(S, dtype=bool)
    return diversity_s_from_counts(S.sum(0), S.shape[0])
