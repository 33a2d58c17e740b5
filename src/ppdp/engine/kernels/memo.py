"""Numba kernels of the class memo (class_memo.py): which remembered node each node of a batch
rolls its classes up from, and which slot its own classes go to.

The lattice search evaluates a batch of up to 64 nodes per call; finding each node's
predecessor in the memo and claiming its slot was Python per node (a dict keyed by the node's
bytes, one lookup per QID one level below, ``np.flatnonzero``, copies): about as long as the
fused evaluation of the node itself on a 1,000-record table (creditcard-1000 t-closeness + k=2:
19,271 nodes). Here the whole batch is planned in one call, over plain arrays:

- ``nodes`` (capacity, nQ) int64, the node of each slot; ``levels`` (capacity,) its level sum,
  -1 for an empty slot;
- ``table``: an int32 open-addressing hash table (linear probing, a power-of-two size at least twice
  the capacity) of slot + 1 per entry, 0 = empty, keyed by the hash of the slot's node (the
  node itself is compared on a hit, so no key can collide); an evicted node is removed by the
  backward shift of linear probing (no tombstones, so probes stay short however many nodes
  pass through the ring);
- ``state``: [next slot of the ring, slots filled so far, nodes remembered].

The plain-Python twin is ``class_memo.DictClassMemo`` (a dict of node bytes -> slot, the memo
as it was): tests/oracles/test_memo_kernels.py checks that both return the same slots for
random sequences of claims and lookups, evictions included.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ppdp.engine.kernels.cache import guard

guard(__file__)

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
NEXT, FILLED, COUNT = 0, 1, 2  # the entries of ``state``


def table_size(capacity: int) -> int:
    """Entries of the hash table for ``capacity`` slots: a power of two >= 2 x capacity."""
    size = 2
    while size < 2 * max(int(capacity), 1):
        size *= 2
    return size


@njit(cache=True)
def _home(g, mask):
    h = np.uint64(g.shape[0] + 1)
    for x in g:
        h = (h ^ np.uint64(x)) * _GOLDEN
    h ^= h >> np.uint64(31)
    return np.int64(h & mask)


@njit(cache=True)
def _same(a, b):
    for i in range(a.shape[0]):
        if a[i] != b[i]:
            return False
    return True


@njit(cache=True)
def lookup(g, nodes, table):
    """The slot holding node g, or -1."""
    mask = np.uint64(table.shape[0] - 1)
    i = _home(g, mask)
    while True:
        e = table[i]
        if e == 0:
            return -1
        if _same(nodes[e - 1], g):
            return np.int64(e - 1)
        i = (i + 1) & np.int64(mask)


@njit(cache=True)
def _insert(g, slot, table):
    mask = np.uint64(table.shape[0] - 1)
    i = _home(g, mask)
    while table[i] != 0:
        i = (i + 1) & np.int64(mask)
    table[i] = slot + 1


@njit(cache=True)
def _remove(slot, nodes, table):
    """Drop the entry of ``slot`` (its node still in ``nodes[slot]``): backward shift, so that
    every entry after it stays reachable from its home without a tombstone."""
    size = table.shape[0]
    mask = np.uint64(size - 1)
    i = _home(nodes[slot], mask)
    while table[i] != slot + 1:
        i = (i + 1) & (size - 1)
    j = i
    while True:
        j = (j + 1) & (size - 1)
        e = table[j]
        if e == 0:
            break
        k = _home(nodes[e - 1], mask)
        # The entry at j may move to the hole at i unless its home lies cyclically in (i, j].
        stays = (i < k <= j) if i <= j else (k > i or k <= j)
        if not stays:
            table[i] = e
            i = j
    table[i] = 0


@njit(cache=True)
def predecessor(g, nodes, levels, table, state, below):
    """The slot of a remembered node below g (or g itself), the highest such node (the fewest
    classes to roll up), or -1 when none is remembered. ``below``: scratch of nQ.

    Which of the highest nodes is returned changes no result (a roll-up gives the class ids of
    ``classify`` from any node below); the order (g itself, then one level below in each QID in
    QID order, then the first slot of the highest level) is the twin's all the same."""
    hit = lookup(g, nodes, table)
    if hit >= 0:
        return hit
    filled = state[FILLED]
    if filled == 0:
        return -1
    nq = g.shape[0]
    for q in range(nq):
        below[q] = g[q]
    # A node one level below g in one QID is as high as a node below g can be: the lattice
    # searches evaluate those first, so a few lookups usually spare the scan of the ring.
    for q in range(nq):
        if g[q] > 0:
            below[q] -= 1
            hit = lookup(below, nodes, table)
            below[q] += 1
            if hit >= 0:
                return hit
    return highest_below(g, nodes, levels, filled)


@njit(cache=True)
def highest_below(g, nodes, levels, filled):
    """The first of the slots 0 .. filled-1 holding a node below g (or g) at the highest level
    sum, or -1: the scan of the ring behind ``predecessor`` and Flash's kernel memo."""
    nq = g.shape[0]
    best = -1
    best_level = -1
    for s in range(filled):
        lv = levels[s]
        if lv <= best_level:  # empty (-1), or no higher than the best so far
            continue
        ok = True
        for q in range(nq):
            if nodes[s, q] > g[q]:
                ok = False
                break
        if ok:
            best = s
            best_level = lv
    return best


@njit(cache=True)
def claim(g, nodes, levels, table, state):
    """A slot for node g (its own when remembered, else the oldest one of the ring), marked as
    g's; the caller writes g's class ids into that slot."""
    hit = lookup(g, nodes, table)
    if hit >= 0:
        return hit
    capacity = nodes.shape[0]
    s = state[NEXT]
    state[NEXT] = (s + 1) % capacity
    if levels[s] >= 0:
        _remove(s, nodes, table)
        state[COUNT] -= 1
    level = 0
    for q in range(g.shape[0]):
        nodes[s, q] = g[q]
        level += g[q]
    levels[s] = level
    state[FILLED] = max(state[FILLED], s + 1)
    _insert(g, s, table)
    state[COUNT] += 1
    return s


@njit(cache=True)
def plan(G, nodes, levels, table, state, parent_slot, out_slot):
    """For each row p of G in order: ``parent_slot[p]`` = ``predecessor(G[p])`` (-1: classify
    from scratch), then ``out_slot[p]`` = ``claim(G[p])``. A later row may so roll up from an
    earlier row of the batch (its slot is written before the later row reads it, as the batch
    kernels run the rows in order); a row's claim never takes the slot of an earlier row's
    parent before that row has read it, as long as the batch is no longer than the ring."""
    below = np.empty(G.shape[1], dtype=np.int64)
    for p in range(G.shape[0]):
        parent_slot[p] = predecessor(G[p], nodes, levels, table, state, below)
        out_slot[p] = claim(G[p], nodes, levels, table, state)
