"""Class ids of recently evaluated nodes, for the roll-up of a node's classes.

Classes only merge up the lattice: every class of G is a union of classes of any node below G,
so G's classes can be built from a remembered node below it by classifying one row per class
of that node (``_kernels._rollup_into``) instead of every histogram row, as ARX and Flash share
work between neighbouring transformations. The memo is a ring of ``capacity`` slots: one
(capacity, rows) int32 array, which the kernels read and write in place, plus the node of each
slot; a new node takes the oldest slot.

``ClassMemo`` keeps its index in arrays that the Numba kernels of ``_memo_kernels.py`` search
and update, a whole batch per call (``plan``; the per-node Python of the dict-based
memo cost about as much as the evaluation of a node on a 1,000-record table). ``DictClassMemo``
is its plain-Python twin, the memo as it was (tests/oracles/test_memo_kernels.py: the same
slots for the same calls).
"""

from __future__ import annotations

import numpy as np

from ppdp.engine.kernels import memo as MK


class ClassMemo:
    """A ring of class-id arrays (one per remembered node) and their nodes."""

    def __init__(self, n_rows: int, n_qids: int, capacity: int) -> None:
        self.capacity = max(int(capacity), 1)
        self.ids = np.empty((self.capacity, max(n_rows, 1)), dtype=np.int32)
        self.nodes = np.zeros((self.capacity, n_qids), dtype=np.int64)
        self.levels = np.full(self.capacity, -1, dtype=np.int64)  # level sum; -1 = empty slot
        # slot + 1 per entry, 0 = empty (zeros: pages the ring never reaches stay untouched)
        self._table = np.zeros(MK.table_size(self.capacity), dtype=np.int32)
        self._state = np.zeros(3, dtype=np.int64)  # next slot, slots filled, nodes remembered
        self._below = np.empty(n_qids, dtype=np.int64)  # predecessor's scratch

    def __len__(self) -> int:
        return int(self._state[MK.COUNT])

    @staticmethod
    def _node(g: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(g, dtype=np.int64)

    def slot(self, g: np.ndarray) -> int:
        """The slot holding node g, or -1."""
        return int(MK.lookup(self._node(g), self.nodes, self._table))

    def predecessor(self, g: np.ndarray) -> int:
        """The slot of a remembered node below g (or g itself), the highest such node (the
        fewest classes to roll up), or -1 when none is remembered."""
        return int(MK.predecessor(self._node(g), self.nodes, self.levels, self._table, self._state, self._below))

    def claim(self, g: np.ndarray) -> int:
        """A slot for node g (its own when remembered, else the oldest one), marked as g's; the
        caller writes g's class ids into ``ids[slot]``."""
        return int(MK.claim(self._node(g), self.nodes, self.levels, self._table, self._state))

    def plan(self, G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(parent slot, own slot) of each row of a batch, in order: ``predecessor`` then
        ``claim`` per row (``_memo_kernels.plan``); the batch must not exceed the capacity."""
        G = np.ascontiguousarray(G, dtype=np.int64)
        parent_slot = np.empty(G.shape[0], dtype=np.int64)
        out_slot = np.empty(G.shape[0], dtype=np.int64)
        MK.plan(G, self.nodes, self.levels, self._table, self._state, parent_slot, out_slot)
        return parent_slot, out_slot


class DictClassMemo:
    """The plain-Python twin of ``ClassMemo``'s index (no class ids): a dict of node bytes ->
    slot and a scan of the ring, the same slots for the same calls."""

    def __init__(self, n_qids: int, capacity: int) -> None:
        self.capacity = max(int(capacity), 1)
        self.nodes = np.zeros((self.capacity, n_qids), dtype=np.int64)
        self.levels = np.full(self.capacity, -1, dtype=np.int64)
        self._slot_of: dict[bytes, int] = {}
        self._next = 0
        self._filled = 0  # slots 0 .. _filled - 1 can hold a node (filled in order until the ring wraps)

    def __len__(self) -> int:
        return len(self._slot_of)

    def slot(self, g: np.ndarray) -> int:
        return self._slot_of.get(np.asarray(g, dtype=np.int64).tobytes(), -1)

    def predecessor(self, g: np.ndarray) -> int:
        g = np.array(g, dtype=np.int64)  # a copy: the loop below edits it in place
        hit = self._slot_of.get(g.tobytes())
        if hit is not None:
            return hit
        n = self._filled
        if n == 0:
            return -1
        for q in np.flatnonzero(g > 0).tolist():
            g[q] -= 1
            hit = self._slot_of.get(g.tobytes())
            g[q] += 1
            if hit is not None:
                return hit
        below = np.all(self.nodes[:n] <= g, axis=1) & (self.levels[:n] >= 0)
        if not below.any():
            return -1
        return int(np.argmax(np.where(below, self.levels[:n], -1)))

    def claim(self, g: np.ndarray) -> int:
        g = np.asarray(g, dtype=np.int64)
        key = g.tobytes()
        hit = self._slot_of.get(key)
        if hit is not None:
            return hit
        s = self._next
        self._next = (s + 1) % self.capacity
        if self.levels[s] >= 0:
            del self._slot_of[self.nodes[s].tobytes()]
        self.nodes[s] = g
        self.levels[s] = int(g.sum())
        self._filled = max(self._filled, s + 1)
        self._slot_of[key] = s
        return s

    def plan(self, G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        parent_slot = np.empty(len(G), dtype=np.int64)
        out_slot = np.empty(len(G), dtype=np.int64)
        for p, g in enumerate(G):
            parent_slot[p] = self.predecessor(g)
            out_slot[p] = self.claim(g)
        return parent_slot, out_slot
