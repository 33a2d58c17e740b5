"""The box branch and bound's loop in Numba: ``lattice._box_search``'s rounds
(pop boxes, split them, bound the halves, push those above the best TD) without Python between
them; plain-Python twin: ``lattice._box_search`` itself, which tests/oracles/test_lattice_bounds.py
runs against this loop (the same leaves in the same batches, boxes bounded, bounds left).

On a 1,000-record creditcard sample with t-closeness (80,000 boxes) the Python loop (heapq,
np.stack, per-box arrays) was a third of the search. Here the heap is a binary heap over
(-bound, push order), the keys heapq compares (push orders are distinct, so the pop order is
the same), with each box's corners and row states in slots of flat arrays. The kernel returns
to Python only to evaluate a round's leaves, to grow the slots, or to stop.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ppdp.engine.kernels import batch, kinds
from ppdp.engine.kernels.cache import guard
from ppdp.engine.methods.generalization.optimizers import bounds
from ppdp.engine.methods.generalization.optimizers.bounds import (
    _row_bounds,
    class_round,
    weighted_sums,
)

# box_rounds compiles in bounds._row_bounds, tops_rounds bounds.class_round and the batch evaluator
guard(__file__, depends_on=[bounds, batch])

# box_rounds' answers
HEAP_EMPTY = 0  # no box left: certified, no bound left
TOP_AT_BEST = 1  # the largest bound left is at most the best TD: certified
CAPPED = 2  # out of budget or boxes: not certified
GROW = 3  # fewer free slots than a round may need: grow them and call again
LEAVES = 4  # a round popped one-node boxes: evaluate them and call again
LOG_FULL = 5  # (tops_rounds) its log of evaluated tops may not hold another round: replay it, call again

@nb.njit(cache=True)
def _bound_batch(L, U, parent, n_tables, codes, weight, counts, shifts, guard_bits,
                 start0, meet0, mult0, need0, packed0, wm0, woff0, bits0, start1, meet1, mult1, need1, packed1, wm1, woff1, bits1):
    """(bounds, states) of the boxes [L[i], U[i]]: ``BoxBound.with_states`` for one or two
    partner tables (per row the smaller table bound, then the count-weighted sum)."""
    per_row, st0 = _row_bounds(L, U, codes, weight, start0, meet0, mult0, need0, packed0, shifts, guard_bits,
                               parent[0], wm0, woff0, bits0)
    states = np.empty((n_tables, L.shape[0], codes.shape[0]), dtype=np.int8)
    states[0] = st0
    if n_tables > 1:
        rows, st1 = _row_bounds(L, U, codes, weight, start1, meet1, mult1, need1, packed1, shifts, guard_bits,
                                parent[1], wm1, woff1, bits1)
        states[1] = st1
        per_row = np.minimum(per_row, rows)
    return weighted_sums(per_row, counts), states


@nb.njit(cache=True)
def _first(key, order, i, j):
    """Whether heap entry i pops before j: heapq's tuple order (-bound, push order)."""
    return key[i] < key[j] or (key[i] == key[j] and order[i] < order[j])


@nb.njit(cache=True)
def _swap(key, order, slot, i, j):
    key[i], key[j] = key[j], key[i]
    order[i], order[j] = order[j], order[i]
    slot[i], slot[j] = slot[j], slot[i]


@nb.njit(cache=True)
def _sift_up(key, order, slot, pos):
    while pos > 0:
        up = (pos - 1) // 2
        if _first(key, order, up, pos):
            break
        _swap(key, order, slot, up, pos)
        pos = up


@nb.njit(cache=True)
def _sift_down(key, order, slot, n):
    pos = 0
    while True:
        child = 2 * pos + 1
        if child >= n:
            break
        right = child + 1
        if right < n and _first(key, order, right, child):
            child = right
        if _first(key, order, pos, child):
            break
        _swap(key, order, slot, child, pos)
        pos = child


@nb.njit(cache=True)
def _pop(key, order, slot, counters):
    """The slot of the heap's first box, taken off the heap (its size in ``counters[0]``)."""
    s = slot[0]
    last = counters[0] - 1
    key[0], order[0], slot[0] = key[last], order[last], slot[last]
    counters[0] = last
    _sift_down(key, order, slot, last)
    return s


@nb.njit(cache=True)
def _push(key, order, slot, counters, value, push_order, s):
    """Box slot ``s`` onto the heap with bound ``value`` and FIFO rank ``push_order``."""
    pos = counters[0]
    key[pos] = -value
    order[pos] = push_order
    slot[pos] = s
    counters[0] += 1
    _sift_up(key, order, slot, pos)


@nb.njit(cache=True)
def _widest(L, U):
    """(the first QID with the widest range in [L, U], that width): the QID a box splits."""
    q = 0
    widest = U[0] - L[0]
    for j in range(1, L.shape[0]):
        if U[j] - L[j] > widest:
            widest = U[j] - L[j]
            q = j
    return q, widest


@nb.njit(cache=True)
def _halves_into(L, U, q, lows, highs, i):
    """Box [L, U] split at the middle of QID ``q``'s range into rows ``i`` (lower half) and
    ``i + 1`` (upper half) of ``lows`` / ``highs``."""
    mid = (L[q] + U[q]) // 2
    lows[i] = L
    highs[i] = U
    highs[i, q] = mid
    lows[i + 1] = L
    lows[i + 1, q] = mid + 1
    highs[i + 1] = U


@nb.njit(cache=True)
def box_rounds(key, order, slot, slot_L, slot_U, slot_states, free, counters, best_td, batch, remaining,
               max_boxes, leaves, n_tables, codes, weight, counts, shifts, guard_bits,
               start0, meet0, mult0, need0, packed0, wm0, woff0, bits0, start1, meet1, mult1, need1, packed1, wm1, woff1, bits1):
    """Rounds of ``lattice._box_search`` until one has leaves or the search stops; returns
    (answer, leaves popped into ``leaves``). The heap: ``key`` (-bound), ``order`` (push order),
    ``slot`` (where the box's L, U and row states are), ``counters`` = [heap size, free slots,
    boxes bounded, next push order]; ``free[:counters[1]]`` the free slots."""
    nq = slot_L.shape[1]
    n_rows = codes.shape[0]
    while True:
        n_heap = counters[0]
        if n_heap == 0:
            return HEAP_EMPTY, 0
        if -key[0] <= best_td:
            return TOP_AT_BEST, 0
        if remaining <= 0 or counters[2] >= max_boxes:
            return CAPPED, 0
        if counters[1] < 2 * batch:
            return GROW, 0
        limit = min(batch, remaining)
        n_leaves = 0
        n_low = 0
        lows = np.empty((2 * batch, nq), dtype=np.int64)
        highs = np.empty((2 * batch, nq), dtype=np.int64)
        parent = np.empty((n_tables, 2 * batch, n_rows), dtype=np.int8)
        popped = np.empty(batch, dtype=np.int64)
        n_popped = 0
        while counters[0] > 0 and -key[0] > best_td and n_leaves < limit and n_low < 2 * batch:
            s = _pop(key, order, slot, counters)
            L = slot_L[s]
            U = slot_U[s]
            q, widest = _widest(L, U)
            if widest == 0:  # one node
                leaves[n_leaves] = L
                n_leaves += 1
                free[counters[1]] = s
                counters[1] += 1
                continue
            _halves_into(L, U, q, lows, highs, n_low)
            for t in range(n_tables):
                parent[t, n_low] = slot_states[s, t]
                parent[t, n_low + 1] = slot_states[s, t]
            n_low += 2
            popped[n_popped] = s
            n_popped += 1
        if n_low > 0:
            values, states = _bound_batch(lows[:n_low], highs[:n_low], parent[:, :n_low], n_tables, codes, weight,
                                          counts, shifts, guard_bits, start0, meet0, mult0, need0, packed0, wm0, woff0, bits0,
                                          start1, meet1, mult1, need1, packed1, wm1, woff1, bits1)
            counters[2] += n_low
            for x in range(n_popped):  # the halves hold their parents' states now
                free[counters[1]] = popped[x]
                counters[1] += 1
            for i in range(n_low):
                if values[i] > best_td:  # a box at or below the best TD cannot improve it
                    counters[1] -= 1
                    s = free[counters[1]]
                    slot_L[s] = lows[i]
                    slot_U[s] = highs[i]
                    for t in range(n_tables):
                        slot_states[s, t] = states[t, i]
                    _push(key, order, slot, counters, values[i], counters[3], s)
                    counters[3] += 1
        if n_leaves > 0:
            return LEAVES, n_leaves


@nb.njit(cache=True)
def tops_split(key, order, slot, slot_L, slot_U, slot_row, counters, best_td, batch, row_free, row_count,
               lows, highs, src, act, axis, popped):
    """The popping half of a round of ``lattice._tops_round`` (its twin): pop up to ``batch``
    boxes above ``best_td`` in heap order (``box_rounds``' heap, ``counters`` = [heap size,
    free slots, next push order]) and split each along its first widest QID into [L, U1]
    (``lows``/``highs`` row 2j) and [L2, U] (row 2j + 1), with their rows of class ids
    (``bounds.ClassMasks``): [L2, U] takes over its parent's row, [L, U1] takes a free one
    (``row_free[:row_count[0]]``), rolled up from the parent's (``act``), both new and
    classified over every row at the root (parent row -1). Returns the boxes popped, whose
    slots go to ``popped``."""
    n_pop = 0
    while counters[0] > 0 and -key[0] > best_td and n_pop < batch:
        s = _pop(key, order, slot, counters)
        L = slot_L[s]
        U = slot_U[s]
        q, _ = _widest(L, U)
        i = 2 * n_pop
        _halves_into(L, U, q, lows, highs, i)
        r = slot_row[s]
        row_count[0] -= 1
        src[i] = row_free[row_count[0]]
        act[i] = r
        if r < 0:
            row_count[0] -= 1
            src[i + 1] = row_free[row_count[0]]
            act[i + 1] = -1
        else:
            src[i + 1] = r
            act[i + 1] = -2
        axis[i] = q
        axis[i + 1] = q
        popped[n_pop] = s
        n_pop += 1
    return n_pop


@nb.njit(cache=True)
def tops_push(key, order, slot, slot_L, slot_U, slot_row, free, counters, lows, highs, src, values, n_halves,
              alive, keep, best_td, popped, n_pop, row_free, row_count):
    """The pushing half of the round: push the halves ``alive[j]`` with ``keep[j]`` (their top
    within the limit), a bound above ``best_td`` and more than one node, in order (the next push
    orders); the rows of the other halves and the popped boxes' slots are free again."""
    nq = slot_L.shape[1]
    held = np.zeros(n_halves, dtype=np.bool_)
    for j in range(alive.shape[0]):
        i = alive[j]
        if not keep[j] or not values[i] > best_td:
            continue
        wide = False
        for x in range(nq):
            if lows[i, x] != highs[i, x]:
                wide = True
                break
        if not wide:
            continue
        counters[1] -= 1
        s = free[counters[1]]
        slot_L[s] = lows[i]
        slot_U[s] = highs[i]
        slot_row[s] = src[i]
        _push(key, order, slot, counters, values[i], counters[2], s)
        counters[2] += 1
        held[i] = True
    for i in range(n_halves):
        if not held[i]:
            row_free[row_count[0]] = src[i]
            row_count[0] += 1
    for x in range(n_pop):
        free[counters[1]] = popped[x]
        counters[1] += 1


@nb.njit(cache=True)
def _feasible(ad, ops, at):
    """Every model's ``feasible(ad[j])``, from its ``kernel_feasibility`` (ops[j], at[j])."""
    for j in range(ad.shape[0]):
        if ops[j] == kinds.AT_LEAST:
            if not ad[j] >= at[j]:
                return False
        elif not ad[j] <= at[j]:
            return False
    return True


@nb.njit(cache=True)
def tops_rounds(key, order, slot, slot_L, slot_U, slot_row, free, counters, ids, n_ids, small, row_free, row_count,
                lows, highs, src, act, axis, popped, batch_size, max_boxes, budget, state_f, state_i, bound_args, work,
                eval_args, ops, at, log_G, log_ad, log_td, log_sup, log_ok):
    """``lattice._tops_loop``'s rounds under a zero suppression limit with the tops evaluated
    here too (``batch.evaluate_prepared_into`` with nothing suppressed, feasibility by
    ``_feasible``): pop and split (``tops_split``), bound the halves (``bounds.class_round``,
    ``max_small`` 0), evaluate the new tops of the halves left, push the halves kept
    (``tops_push``). The same boxes in the same order as ``_tops_loop`` (its twin), so the same
    tops in the same order: each goes to the log (levels, AD per model, TD, suppressed,
    feasible), which Python replays to the tracker when this returns.

    Which tops are new: a half [L2, U] has its parent's top, evaluated and within the limit (a
    box is pushed only so; the root's top, the lattice's, is checked before the loop); a half
    [L, U1] has a top no box held before, because the boxes ever pushed are nested or disjoint:
    an ancestor's top is above U1 in the QID split, a disjoint box does not contain U1.

    ``state_f`` = [best TD, best TD among the tops], ``state_i`` = [boxes bounded, evaluations
    so far (the tracker's), tops logged], both updated in place. ``bound_args``, ``work``:
    class_round's arguments after ``small`` (``BoxBound.round_args``) and its scratch; ``eval_args``: evaluate_prepared_into's after (G, retained).
    Returns HEAP_EMPTY, TOP_AT_BEST or CAPPED as ``_tops_loop`` ends, GROW when the slots or
    the rows of ``ids`` may not hold a round (grow them, call again) or LOG_FULL."""
    codes, codes_t, gen, n_gen, records, kmin, weight, counts, row_w, w_off = bound_args
    nq = slot_L.shape[1]
    n_rows = records.shape[0]
    alive = np.empty(2 * batch_size, dtype=np.int64)
    keep = np.empty(2 * batch_size, dtype=np.bool_)
    new = np.empty(batch_size, dtype=np.int64)
    # a round's tops keep every record: rows of ``records``, as many as a round has needed so far
    retained_all = np.empty((0, n_rows), dtype=np.int64)
    while True:
        best_td = state_f[0]
        if counters[0] == 0:
            return HEAP_EMPTY
        if -key[0] <= best_td:
            return TOP_AT_BEST
        if state_i[1] >= budget or state_i[0] >= max_boxes:
            return CAPPED
        if counters[1] < 2 * batch_size or row_count[0] < 2 * min(batch_size, counters[0]):
            return GROW
        if state_i[2] + batch_size > log_G.shape[0]:
            return LOG_FULL
        n_pop = tops_split(key, order, slot, slot_L, slot_U, slot_row, counters, best_td, batch_size, row_free,
                           row_count, lows, highs, src, act, axis, popped)
        m = 2 * n_pop
        b = class_round(lows[:m], highs[:m], src[:m], act[:m], axis[:m], ids, n_ids, small, codes, codes_t, gen,
                        n_gen, records, kmin, weight, counts, row_w, w_off, 0, work)
        state_i[0] += m
        n_alive = 0
        n_new = 0
        for i in range(m):
            if b[i] > best_td and small[src[i]] <= 0:
                alive[n_alive] = i
                keep[n_alive] = True  # a half [L2, U]: its parent's top
                if i % 2 == 0:
                    new[n_new] = n_alive
                    n_new += 1
                n_alive += 1
        if n_new > 0:
            if retained_all.shape[0] < n_new:
                retained_all = np.empty((n_new, n_rows), dtype=np.int64)
                for p in range(n_new):
                    retained_all[p] = records
            G = np.empty((n_new, nq), dtype=np.int64)
            for p in range(n_new):
                G[p] = highs[alive[new[p]]]
            ad, td, sup = batch.evaluate_prepared_into(G, retained_all[:n_new], *eval_args)
            tops_best = state_f[1]
            base = state_i[2]
            for p in range(n_new):
                ok = _feasible(ad[p], ops, at)
                keep[new[p]] = ok
                log_G[base + p] = G[p]
                log_ad[base + p] = ad[p]
                log_td[base + p] = td[p]
                log_sup[base + p] = sup[p]
                log_ok[base + p] = ok
                if ok and td[p] > tops_best:
                    tops_best = td[p]
            state_f[1] = tops_best
            state_i[1] += n_new
            state_i[2] += n_new
            if tops_best > best_td:
                best_td = tops_best
                state_f[0] = best_td
        tops_push(key, order, slot, slot_L, slot_U, slot_row, free, counters, lows, highs, src, b, m, alive[:n_alive],
                  keep[:n_alive], best_td, popped, n_pop, row_free, row_count)
