"""Class ids of recently evaluated nodes, for the roll-up of a node's classes (issue #18).

Classes only merge up the lattice: every class of G is a union of classes of any node below G,
so G's classes can be built from a remembered node below it by classifying one row per class
of that node (``_kernels._rollup_into``) instead of every histogram row, as ARX and Flash share
work between neighbouring transformations. The memo is a ring of ``capacity`` slots: one
(capacity, rows) int32 array, which the kernels read and write in place, plus the node of each
slot; a new node takes the oldest slot.
"""

from __future__ import annotations

import numpy as np


class ClassMemo:
    """A ring of class-id arrays (one per remembered node) and their nodes."""

    def __init__(self, n_rows: int, n_qids: int, capacity: int) -> None:
        self.capacity = max(int(capacity), 1)
        self.ids = np.empty((self.capacity, max(n_rows, 1)), dtype=np.int32)
        self.nodes = np.zeros((self.capacity, n_qids), dtype=np.int64)
        self.levels = np.full(self.capacity, -1, dtype=np.int64)  # level sum; -1 = empty slot
        self._slot_of: dict[bytes, int] = {}
        self._next = 0
        # Slots are filled in order 0, 1, ... until the ring wraps: only the first ``_filled``
        # can hold a node. ``predecessor`` scans those alone, which changes nothing (an empty
        # slot is never below anything) but saves a scan of the whole ring per node: on a
        # 1,000-record table the ring has ~18,000 slots and the scan was 5 ms of Flash's
        # 6 ms per node (issue #25).
        self._filled = 0

    def __len__(self) -> int:
        return len(self._slot_of)

    def slot(self, g: np.ndarray) -> int:
        """The slot holding node g, or -1."""
        return self._slot_of.get(np.asarray(g, dtype=np.int64).tobytes(), -1)

    def predecessor(self, g: np.ndarray) -> int:
        """The slot of a remembered node below g (or g itself), the highest such node (the
        fewest classes to roll up), or -1 when none is remembered."""
        g = np.array(g, dtype=np.int64)  # a copy: the loop below edits it in place
        hit = self._slot_of.get(g.tobytes())
        if hit is not None:
            return hit
        n = self._filled
        if n == 0:
            return -1
        # A node one level below g in one QID is as high as a node below g can be: the lattice
        # searches evaluate those first, so a few lookups usually spare the scan of the ring.
        # (Which of the highest nodes is returned changes no result: a roll-up gives the class
        # ids of ``classify`` from any node below.)
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
        """A slot for node g (its own when remembered, else the oldest one), marked as g's; the
        caller writes g's class ids into ``ids[slot]``."""
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
