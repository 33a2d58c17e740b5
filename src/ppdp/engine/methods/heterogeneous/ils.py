"""Iterated local search for heterogeneous k-anonymity (Alg. 1-2 of the paper, docs/design/paper_notes.md §7).

Alg. 1 (ILS): start from an initial k-regular graph; repeat { local search to a local optimum;
acceptance; perturbation } until the time limit or the evaluation budget. Our readings of the
pseudocode (the figures are missing from our text copy):

* Local search (Alg. 2): a candidate list of anonymized nodes, initially all of them. A node b
  is drawn uniformly at random from the list and removed; its non-self edges (a, b') are
  scanned, each against every other anonymized node's non-self edges (c, d') (starting at a
  random node, wrapping around), and the first *valid* (tuple-disjoint) 2-opt move with a
  negative delta is applied (first improvement). Both b and d go (back) on the list: their
  generalizations changed, so they may improve again. A node whose scan finds no improving move
  stays off. The list empty = a local optimum (no improving move from any node).
* Acceptance: the new local optimum replaces the best solution if strictly better; otherwise
  the search goes back to the best solution (a "better" acceptance criterion).
* Perturbation: ``perturbation_swaps`` (default n, the paper's "n random swaps") random valid
  moves applied whatever their delta; then the list is refilled with every node.
* Counting: an *evaluation* is one delta computation of a valid move (invalid draws and the
  perturbation's moves are not counted), as in benchmarks/hetero_moves.py. The budget is exact:
  the search stops after exactly ``max_evaluations`` when it reaches it.
* Anytime: the best objective seen (the best local optimum, or the current solution when it is
  better) is recorded as ``(seconds, evaluations, objective)`` whenever it improves, plus the
  start and the end; the returned graph is that best solution.
* Reproducible: for a given seed and evaluation budget the result does not depend on timing
  (the Numba kernel yields to Python to check the clock only between nodes, at evaluation
  counts that do not depend on time).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from numba import njit

from ppdp.engine.kernels.cache import guard
from ppdp.engine.methods.heterogeneous import _incremental_kernels as K
from ppdp.engine.methods.heterogeneous.graph import KRegularGraph
from ppdp.engine.methods.heterogeneous.incremental import (
    IncrementalState,
    Objective,
    objective_code,
)
from ppdp.engine.methods.heterogeneous.metrics import QidTable
from ppdp.engine.methods.heterogeneous.neighbors import nearest_neighbors
from ppdp.errors import SpecError

guard(__file__, depends_on=[K])  # _explore, _run_chunk compile in _incremental_kernels

_EPS = 1e-12
_CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
# Control words of the kernel's persistent state (ctl array).
_EVALS, _CAND_LEN, _OPTIMA, _APPLIED, _FULL = 0, 1, 2, 3, 4


@dataclass(frozen=True)
class IlsResult:
    """Outcome of one ILS run.

    graph:            the best k-regular graph found (never worse than the initial one)
    objective:        its objective (GCP or SIL), from the incremental totals
    initial_objective the objective of the initial graph
    history:          ((seconds, evaluations, best objective), ...), non-increasing objective
    evaluations:      valid move evaluations performed (<= the budget)
    seconds:          wall time of the search
    local_optima:     local searches completed (Alg. 1 iterations)
    applied_moves:    improving moves applied (perturbation moves not included)
    """

    graph: KRegularGraph
    objective: float
    initial_objective: float
    history: tuple[tuple[float, int, float], ...]
    evaluations: int
    seconds: float
    local_optima: int
    applied_moves: int


@njit(cache=True)
def _seed(seed):
    np.random.seed(seed)


@njit(cache=True)
def _explore(code, b, eval_limit, ctl, cand, in_cand, near, cover, num, cat, cat_off, num_range,
             cat_domain, num_sigma, cat_sigma, mn, mn2, mx, mx2, num_sum, cat_count, cat_hist,
             cat_max, cat_distinct, t_ncp, t_sil, totals):
    """First-improvement scan of node b; 1 = improved, 0 = none, -1 = budget hit mid-scan.

    ``near`` (n, m): with m = 0 every other node is a partner (Alg. 2); otherwise only the
    nodes of a's and b's m nearest tuples, a = the original moved out of b (engine/methods/heterogeneous/neighbors.py)."""
    n, k = cover.shape
    m = near.shape[1]
    partners = n if m == 0 else 2 * m
    s_start = np.random.randint(1, k)
    t_start = np.random.randint(partners)
    for si in range(k - 1):
        s1 = 1 + (s_start - 1 + si) % (k - 1)
        a = cover[b, s1]
        for ti in range(partners):
            p = (t_start + ti) % partners
            if m == 0:
                t2 = p
            elif p < m:
                t2 = near[a, p]
            else:
                t2 = near[b, p - m]
            if t2 == b:
                continue
            for s2 in range(1, k):
                if not K.swap_is_valid(cover, b, s1, t2, s2):
                    continue
                if ctl[_EVALS] >= eval_limit:
                    return -1
                ctl[_EVALS] += 1
                delta = K.swap_delta(code, cover, num, cat, cat_off, num_range, cat_domain,
                                     num_sigma, cat_sigma, mn, mn2, mx, mx2, num_sum, cat_count,
                                     cat_hist, cat_max, cat_distinct, t_ncp, t_sil, totals,
                                     b, s1, t2, s2)
                if delta < -_EPS:
                    K.apply_swap(cover, num, cat, cat_off, num_range, cat_domain, num_sigma,
                                 cat_sigma, mn, mn2, mx, mx2, num_sum, cat_count, cat_hist,
                                 cat_max, cat_distinct, t_ncp, t_sil, totals, b, s1, t2, s2)
                    ctl[_APPLIED] += 1
                    for node in (b, t2):
                        if not in_cand[node]:
                            in_cand[node] = True
                            cand[ctl[_CAND_LEN]] = node
                            ctl[_CAND_LEN] += 1
                    return 1
    return 0


@njit(cache=True)
def _run_chunk(code, chunk_end, eval_limit, swaps, ctl, cand, in_cand, near, best_cover, best_total,
               cover, num, cat, cat_off, num_range, cat_domain, num_sigma, cat_sigma, mn, mn2,
               mx, mx2, num_sum, cat_count, cat_hist, cat_max, cat_distinct, t_ncp, t_sil,
               totals):
    """Run ILS until ctl[evals] >= chunk_end (checked between nodes) or == eval_limit."""
    n, k = cover.shape
    every = near[:, :0]  # no lists: every node is a partner (Alg. 2)
    while ctl[_EVALS] < chunk_end and ctl[_EVALS] < eval_limit:
        if ctl[_CAND_LEN] == 0 and near.shape[1] > 0 and ctl[_FULL] == 0 and k > 1:
            # A local optimum of the candidate-list neighbourhood: descend on in the paper's full
            # neighbourhood before accepting (variable neighbourhood descent; ours).
            ctl[_FULL] = 1
            for t in range(n):
                cand[t] = t
                in_cand[t] = True
            ctl[_CAND_LEN] = n
            continue
        if ctl[_CAND_LEN] == 0:
            # A local optimum: acceptance, then perturbation (Alg. 1).
            ctl[_FULL] = 0
            ctl[_OPTIMA] += 1
            if totals[code] < best_total[0] - _EPS:
                best_cover[:, :] = cover
                best_total[0] = totals[code]
            else:
                cover[:, :] = best_cover
                K.build(cover, num, cat, cat_off, num_range, cat_domain, num_sigma, cat_sigma,
                        mn, mn2, mx, mx2, num_sum, cat_count, cat_hist, cat_max, cat_distinct,
                        t_ncp, t_sil, totals)
            done = 0
            tries = 0
            while done < swaps and tries < 100 * swaps + 1000 and k > 1:
                tries += 1
                t1 = np.random.randint(n)
                t2 = np.random.randint(n)
                s1 = np.random.randint(1, k)
                s2 = np.random.randint(1, k)
                if K.swap_is_valid(cover, t1, s1, t2, s2):
                    K.apply_swap(cover, num, cat, cat_off, num_range, cat_domain, num_sigma,
                                 cat_sigma, mn, mn2, mx, mx2, num_sum, cat_count, cat_hist,
                                 cat_max, cat_distinct, t_ncp, t_sil, totals, t1, s1, t2, s2)
                    done += 1
            for t in range(n):
                cand[t] = t
                in_cand[t] = True
            ctl[_CAND_LEN] = n
            if k == 1:  # no move exists: nothing to search
                return
            continue
        pick = np.random.randint(ctl[_CAND_LEN])
        b = cand[pick]
        ctl[_CAND_LEN] -= 1
        cand[pick] = cand[ctl[_CAND_LEN]]
        in_cand[b] = False
        scan = every if ctl[_FULL] == 1 else near
        status = _explore(code, b, eval_limit, ctl, cand, in_cand, scan, cover, num, cat, cat_off,
                          num_range, cat_domain, num_sigma, cat_sigma, mn, mn2, mx, mx2,
                          num_sum, cat_count, cat_hist, cat_max, cat_distinct, t_ncp, t_sil,
                          totals)
        if status < 0 and not in_cand[b]:  # interrupted by the budget: b is still a candidate
            in_cand[b] = True
            cand[ctl[_CAND_LEN]] = b
            ctl[_CAND_LEN] += 1


def iterated_local_search(table: QidTable, initial: KRegularGraph, *, objective: Objective = "gcp",
                          seconds: float = 10.0, max_evaluations: int | None = None,
                          seed: int = 0, perturbation_swaps: int | None = None,
                          chunk_evaluations: int = 100_000, neighbors: int = 0,
                          clock: str = "wall") -> IlsResult:
    """Improve ``initial`` by ILS (Alg. 1-2) for ``seconds`` or ``max_evaluations``, seeded.

    Stops at whichever limit comes first; ``max_evaluations=None`` means time only. Returns the
    best graph found with the objective-over-time record (see the module docstring).
    ``neighbors`` = m > 0 scans, for a node b and its edge (a, b'), only the partner nodes of the
    m tuples nearest to a and to b (engine/methods/heterogeneous/neighbors.py; ours), and at a local optimum of
    that neighbourhood goes on in the full one before acceptance and perturbation (variable
    neighbourhood descent: a local optimum is then one of Alg. 2); 0 scans every node, as
    Alg. 2. The lists are computed inside the time limit.
    ``clock``: "wall" (elapsed time, the default) or "cpu" (this process's CPU time: a benchmark
    on a shared machine gives every run the same work time whatever else runs).
    """
    if clock not in _CLOCKS:
        raise SpecError(f"unknown clock {clock!r}; hint: \"wall\" or \"cpu\"")
    now = _CLOCKS[clock]
    code = objective_code(objective)
    if seconds <= 0 and max_evaluations is None:
        raise SpecError("the search needs a positive time limit or an evaluation budget; hint: "
                        "pass seconds > 0 or max_evaluations")
    if max_evaluations is not None and max_evaluations < 0:
        raise SpecError(f"max_evaluations={max_evaluations} is negative; hint: pass 0 or more")
    if chunk_evaluations < 1:
        raise SpecError(f"chunk_evaluations={chunk_evaluations} must be positive; hint: 100000")
    start = now()
    near = nearest_neighbors(table, neighbors)
    state = IncrementalState(table, initial)
    n = state.n
    swaps = n if perturbation_swaps is None else int(perturbation_swaps)
    norm = float(table.d * n)
    ctl = np.zeros(5, dtype=np.int64)
    cand = np.arange(n, dtype=np.int64)
    in_cand = np.ones(n, dtype=np.bool_)
    ctl[_CAND_LEN] = n
    cover = state.arrays[0]
    totals = state.arrays[19]
    best_cover = cover.copy()
    best_total = np.array([totals[code]])
    initial_value = float(totals[code]) / norm
    limit = np.iinfo(np.int64).max if max_evaluations is None else int(max_evaluations)
    history = [(0.0, 0, initial_value)]
    _seed(int(seed))
    best_seen = initial_value
    while True:
        elapsed = now() - start
        if ctl[_EVALS] >= limit or (seconds > 0 and elapsed >= seconds):
            break
        if state.k == 1:
            break
        chunk_end = int(ctl[_EVALS]) + chunk_evaluations
        _run_chunk(code, chunk_end, limit, swaps, ctl, cand, in_cand, near, best_cover, best_total,
                   *state.arrays)
        current = min(float(best_total[0]), float(totals[code])) / norm
        if current < best_seen - _EPS:
            best_seen = current
            history.append((now() - start, int(ctl[_EVALS]), current))
    if totals[code] < best_total[0] - _EPS:  # the current solution beats the last optimum
        best_cover[:, :] = cover
        best_total[0] = totals[code]
    elapsed = now() - start
    final = float(best_total[0]) / norm
    history.append((elapsed, int(ctl[_EVALS]), final))
    return IlsResult(
        graph=KRegularGraph(best_cover), objective=final, initial_objective=initial_value,
        history=tuple(history), evaluations=int(ctl[_EVALS]), seconds=elapsed,
        local_optima=int(ctl[_OPTIMA]), applied_moves=int(ctl[_APPLIED]),
    )
