"""ID-DGA generations for k-anonymity as a single Numba call per epoch (``IDDGAIsland.generation`` is
the plain-Python reference; tests/oracles/test_id_dga_kernel.py runs both and compares every
population, evaluation and result).

Why: an island of 10-20 individuals on a 400-record instance spends more time in the Python
around a generation (pairing, one crossover and mutation call per child, two evaluation calls,
the improvement step, the selection loop: a fixed cost per generation) than in
the evaluations themselves. That fixed cost does not halve when the population is split over
islands, so it caps the island speedup (benchmarks/islands.py, "split ceiling"); here it is
one call.

Same draws, same numbers: the kernel takes the island's ``np.random.Generator`` (Numba draws
from the same bit generator with NumPy's algorithms for ``random``, ``integers`` and
``permutation``) and draws in the reference's order: the permutation of the pairing (§4.2),
then per pair the crossover mask (§4.3) and the mutation draws (§4.4). Evaluation, improvement
(§4.5) and selection (§4.6) are those of the reference, through the evaluator's own kernels.

Numba's on-disk cache of this module does not notice a change of engine/kernels/batch.py
(or of the _kernels.py it composes), whose kernels are compiled into this one; ``guard``
(engine/kernels/cache.py) removes this module's cache files when those sources differ from
the ones they were compiled against.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ppdp.engine.kernels import batch as B
from ppdp.engine.kernels.cache import guard

guard(__file__, depends_on=[B])


@njit(cache=True)
def _beats(fa, va, ta, fb, vb, tb):
    """Two-dimension rule (ID-DGA §4.6), as ``evolutionary.island._beats``."""
    if fa:
        return (not fb) or ta > tb
    return (not fb) and va < vb


@njit(cache=True)
def _feasibility(ad_col, k, feas, viol, start):
    """k-anonymity's ``feasible`` / ``violation`` (engine/privacy/k_anonymity.py) of rows start.."""
    for i in range(ad_col.shape[0]):
        a = ad_col[i]
        if a >= k:
            feas[start + i] = True
            viol[start + i] = 0.0
        else:
            feas[start + i] = False
            viol[start + i] = 0.0 + (k - a) / k  # finish(): 0.0 plus each model's violation


@njit(cache=True)
def _generation(rng, G, S, feas, viol, td, ad, sup, heights, cr, mr, k, remaining, improvement,
                codes, gen, n_gen, weight, sa, n_sa, q, kinds, n_records, offsets, row_of_record,
                EG, ER, EA, ET, ES, EF, EV, E, prep):
    """One generation of ``IDDGAIsland.generation`` (info-driven mutation, one improvement
    round, no oracle, a single k-anonymity model); the population arrays change in place.
    Its evaluations (children, then improved children) are written to rows E.. of EG (G),
    ER (retained), EA (AD), ET (TD), ES (suppressed), EF (feasible), EV (violation), at most
    ``remaining`` of them; returns the next free row. ``prep``: ``B.prepare_rows(codes, gen)``."""
    P = G.shape[0]
    nq = G.shape[1]
    nr = S.shape[1]
    perm = rng.permutation(P)  # operators.pair_up
    C = P // 2
    CG = np.empty((C, nq), dtype=np.int64)
    CS = np.empty((C, nr), dtype=np.bool_)
    for j in range(C):
        a = perm[2 * j]
        b = perm[2 * j + 1]
        take2 = rng.random(nq)  # operators.cx_info_driven: gene from the second parent when < cr
        for x in range(nq):
            CG[j, x] = G[b, x] if take2[x] < cr else G[a, x]
        for r in range(nr):
            CS[j, r] = S[a, r] or S[b, r]
        if rng.random() < mr:  # operators.mut_info_driven (one G gene, one S gene)
            x = rng.integers(0, nq)
            CG[j, x] = rng.integers(0, heights[x] + 1)
        if rng.random() < mr and nr > 0:
            CS[j, rng.integers(0, nr)] = True
    m = min(C, remaining)
    if m == 0:
        return E
    # Evaluate the children (Island.evaluate).
    ret = B.retained_batch(CS[:m], offsets)
    # The children's class size per histogram row too: the improvement below needs them for the
    # infeasible ones, which it would otherwise classify a second time (same numbers, tested).
    row_size = np.empty((m, offsets.shape[0] - 1), dtype=np.int64) if improvement else np.empty((0, 0), dtype=np.int64)
    cols, n_leaves, rows_sorted, slot = prep
    no_params = np.zeros((kinds.shape[0], 0))
    a1, t1, s1 = B.evaluate_prepared_into(CG[:m], ret, codes, cols, n_leaves, rows_sorted, slot, gen, n_gen, weight,
                                          sa, n_sa, q, kinds, no_params, n_records, row_size)
    _feasibility(a1[:, 0], k, EF, EV, E)
    for j in range(m):
        EG[E + j] = CG[j]
        ER[E + j] = ret[j]
        EA[E + j, 0] = a1[j, 0]
        ET[E + j] = t1[j]
        ES[E + j] = s1[j]
    cur = np.arange(E, E + m)  # each child's latest evaluation (row of E*)
    cur_s = CS[:m].copy()
    first = E
    E += m
    # Improvement (§4.5) of the infeasible children, one round (id_dga.record_disclosure with
    # k-anonymity: a record's AD is its class size; imp_info_driven suppresses the smallest).
    if improvement and remaining > m:
        changed = np.empty(m, dtype=np.int64)
        NS = np.empty((m, nr), dtype=np.bool_)
        nc = 0
        for j in range(m):
            if EF[first + j]:
                continue
            s = cur_s[j]
            any_kept = False
            for r in range(nr):
                if s[r]:
                    any_kept = True
                    break
            if not any_kept:
                continue  # nothing to suppress: unchanged
            # record_class_sizes at a kept record = its row's class size (its row has ret > 0)
            sizes = row_size[j]
            worst = np.inf
            for r in range(nr):
                if s[r]:
                    v = float(sizes[row_of_record[r]])
                    if v < worst:
                        worst = v
            for r in range(nr):
                v = float(sizes[row_of_record[r]]) if s[r] else 0.0
                NS[nc, r] = s[r] and not (v == worst)
            changed[nc] = j
            nc += 1
        m2 = min(nc, remaining - m)
        if m2 > 0:
            ret2 = B.retained_batch(NS[:m2], offsets)
            a2, t2, s2 = B.evaluate_prepared_into(CG[changed[:m2]], ret2, codes, cols, n_leaves, rows_sorted, slot,
                                                  gen, n_gen, weight, sa, n_sa, q, kinds, no_params, n_records,
                                                  np.empty((0, 0), dtype=np.int64))
            _feasibility(a2[:, 0], k, EF, EV, E)
            for i in range(m2):
                j = changed[i]
                EG[E] = CG[j]
                ER[E] = ret2[i]
                EA[E, 0] = a2[i, 0]
                ET[E] = t2[i]
                ES[E] = s2[i]
                cur[j] = E
                cur_s[j] = NS[i]
                E += 1
    # Selection (§4.6): the child replaces the worse parent of its pair if it beats it.
    for j in range(m):
        a = perm[2 * j]
        b = perm[2 * j + 1]
        worse = a if _beats(feas[b], viol[b], td[b], feas[a], viol[a], td[a]) else b
        e = cur[j]
        if _beats(EF[e], EV[e], ET[e], feas[worse], viol[worse], td[worse]):
            G[worse] = CG[j]
            S[worse] = cur_s[j]
            feas[worse] = EF[e]
            viol[worse] = EV[e]
            td[worse] = ET[e]
            ad[worse, 0] = EA[e, 0]
            sup[worse] = ES[e]
    return E


@njit(cache=True)
def _new_best_rows(EF, EV, ET, E, has_best, best_feasible, best_second):
    """Rows whose fitness key beats every earlier one and the island's logged best
    (``problem.fitness_key``: feasible first, then TD, or closeness to feasibility)."""
    out = np.empty(E, dtype=np.int64)
    n = 0
    for i in range(E):
        f = EF[i]
        second = ET[i] if f else -EV[i]
        if (not has_best) or (f and not best_feasible) or (f == best_feasible and second > best_second):
            has_best = True
            best_feasible = f
            best_second = second
            out[n] = i
            n += 1
    return out[:n]


@njit(cache=True)
def epoch_k_anonymity(rng, generations, G, S, feas, viol, td, ad, sup, heights, cr, mr, k, remaining, improvement,
                      codes, gen, n_gen, weight, sa, n_sa, q, kinds, n_records, offsets, row_of_record,
                      has_best, best_feasible, best_second):
    """Up to ``generations`` generations (fewer when the budget ``remaining`` runs out), as
    ``Island.run`` calls ``generation``; one call, because handing a Generator to Numba costs
    more than a small generation. Returns the generations done, every evaluation in order: G (E, nQ),
    retained (E, H), AD (E, 1), TD, suppressed, feasible, violation, and the rows that are new
    local bests after the island's logged best (``has_best``, ``best_feasible``, ``best_second``)."""
    C = G.shape[0] // 2
    cap = min(remaining, generations * 2 * C)
    EG = np.empty((cap, G.shape[1]), dtype=np.int64)
    ER = np.empty((cap, offsets.shape[0] - 1), dtype=np.int64)
    EA = np.empty((cap, 1))
    ET = np.empty(cap)
    ES = np.empty(cap, dtype=np.int64)
    EF = np.empty(cap, dtype=np.bool_)
    EV = np.empty(cap)
    E = 0
    done = 0
    prep = B.prepare_rows(codes, gen)  # once for every generation's evaluations
    while done < generations and E < remaining:
        E = _generation(rng, G, S, feas, viol, td, ad, sup, heights, cr, mr, k, remaining - E, improvement,
                        codes, gen, n_gen, weight, sa, n_sa, q, kinds, n_records, offsets, row_of_record,
                        EG, ER, EA, ET, ES, EF, EV, E, prep)
        done += 1
    best_rows = _new_best_rows(EF, EV, ET, E, has_best, best_feasible, best_second)
    return done, EG[:E], ER[:E], EA[:E], ET[:E], ES[:E], EF[:E], EV[:E], best_rows
