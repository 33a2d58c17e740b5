"""The second count per class: persons of the population in each class of a release (ARX's
``pcount``, the secondary counter of DPresence and KMap).

A class of G is a combination of generalized codes. The population and the table's rows share
one list of leaf combinations (``PopulationHistogram``); classifying those combinations under G
(``_kernels.classify``, the kernel every path uses) puts a population's persons and a table row
in the same class exactly when their generalized QIDs are equal. Population classes holding no
retained record are counted apart (``unmatched``): delta-presence fails on them when dmin > 0
(Nergiz et al. 2007: a person of the public table whose class has no released record is known
to be absent). The plain-Python twin is in tests/oracles/test_population_models.py.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ppdp.engine.kernels import classes as K
from ppdp.engine.kernels.cache import guard

# the kernels are cached beside those of _kernels, whose classification they consume: one stamp
guard(__file__, depends_on=[K])

# Class ids of the combinations kept for roll-ups (CombinationClasses), at most this many bytes.
COMBINATION_MEMO_BYTES = 64 << 20


class CombinationClasses:
    """The combinations' classes under G, rolled up from those of a node one level below G in
    one QID when that node was classified recently (the lattice search evaluates a node's
    predecessors before it), else classified from scratch: ``_kernels._rollup_into`` gives
    ``classify``'s ids exactly, classifying one combination per class of the node below."""

    def __init__(self, combo_codes: np.ndarray, gen: np.ndarray, n_gen: np.ndarray) -> None:
        self.codes, self.gen, self.n_gen = combo_codes, gen, n_gen
        n = combo_codes.shape[0]
        self.max_entries = max(1, COMBINATION_MEMO_BYTES // max(4 * n, 1))
        self.ids: dict[bytes, np.ndarray] = {}
        self.keys = np.empty(n, dtype=np.int64)
        self.cls = np.empty(n, dtype=np.int32)
        self.rep = np.empty(2 * n, dtype=np.int32)
        self.ones = np.ones(n, dtype=np.bool_)
        size = K._table_size(n)
        self.slot_key = np.empty(size, dtype=np.int64)
        self.slot_id = np.empty(size, dtype=np.int32)

    def classify(self, g: np.ndarray) -> tuple[np.ndarray, int]:
        """(class id per combination, classes) under ``g`` (int64, contiguous); the ids are
        remembered for the nodes above g."""
        key = g.tobytes()
        hit = self.ids.get(key)
        if hit is not None:
            return hit, int(hit.max()) + 1 if hit.shape[0] else 0
        parent = None
        below = g.copy()
        for q in range(g.shape[0]):
            if g[q] > 0:
                below[q] -= 1
                parent = self.ids.get(below.tobytes())
                below[q] += 1
                if parent is not None:
                    break
        if parent is not None:
            m = K._rollup_into(g, self.codes, self.gen, self.n_gen, parent, self.keys, self.cls, self.rep, self.ones,
                               self.slot_key, self.slot_id)
            ccls = self.cls.copy()
        else:
            ccls, m = K.classify(g, self.codes, self.gen, self.n_gen, self.ones)
        if len(self.ids) >= self.max_entries:
            self.ids.pop(next(iter(self.ids)))  # the oldest entry
        self.ids[key] = ccls
        return ccls, int(m)


def classes_with_population(g: np.ndarray, retained: np.ndarray, row_combo: np.ndarray, combo_codes: np.ndarray,
                            combo_persons: np.ndarray, gen: np.ndarray, n_gen: np.ndarray,
                            memo: CombinationClasses | None = None) -> tuple[np.ndarray, int, np.ndarray, int]:
    """(class id per histogram row, classes, persons per class, population classes without a
    retained record) for one G from ONE classification, of the combinations.

    Every histogram row is one of the combinations (``row_combo``), so its class is its
    combination's class, renumbered in first-seen order over the rows with ``retained > 0``:
    exactly the ids ``_kernels.classify`` gives the rows (-1 for the others), without
    classifying them a second time.
    """
    g = np.ascontiguousarray(g, dtype=np.int64)
    if memo is not None:
        ccls, m = memo.classify(g)
    else:
        ccls, m = K.classify(g, combo_codes, gen, n_gen, np.ones(combo_codes.shape[0], dtype=np.bool_))
    return _rows_and_counts(ccls, m, np.ascontiguousarray(retained, dtype=np.int64), row_combo, combo_persons)


@njit(cache=True)
def _rows_and_counts(ccls, m, retained, row_combo, combo_persons):
    """Rows' class ids (first-seen order of their combination classes) and the counts of
    ``_counts_by_class``."""
    renumber = np.full(m, -1, dtype=np.int32)
    cls = np.empty(retained.shape[0], dtype=np.int32)
    n_classes = 0
    for h in range(retained.shape[0]):
        if retained[h] > 0:
            c = ccls[row_combo[h]]
            if renumber[c] < 0:
                renumber[c] = n_classes
                n_classes += 1
            cls[h] = renumber[c]
        else:
            cls[h] = -1
    out, unmatched = _counts_by_class(ccls, m, cls, n_classes, retained, row_combo, combo_persons)
    return cls, n_classes, out, unmatched


def class_population(g: np.ndarray, cls: np.ndarray, n_classes: int, retained: np.ndarray, row_combo: np.ndarray,
                     combo_codes: np.ndarray, combo_persons: np.ndarray, gen: np.ndarray,
                     n_gen: np.ndarray) -> tuple[np.ndarray, int]:
    """(persons per class, population classes without a retained record) for one G.

    ``cls`` is the class id of each histogram row with ``retained > 0`` (as ``_kernels.classify``
    numbers them, ``n_classes`` of them; other rows are ignored); the result is aligned with those ids.
    The counting after the classification is one kernel (``_counts_by_class``): its NumPy form,
    ``class_population_numpy``, took as long as the classification itself on every node.
    """
    ccls, m = K.classify(np.ascontiguousarray(g, dtype=np.int64), combo_codes, gen, n_gen,
                         np.ones(combo_codes.shape[0], dtype=np.bool_))
    return _counts_by_class(ccls, m, cls, n_classes, np.ascontiguousarray(retained, dtype=np.int64), row_combo,
                            combo_persons)


@njit(cache=True)
def _counts_by_class(ccls, m, cls, n_classes, retained, row_combo, combo_persons):
    """Persons per combination class, then per retained row's class; and the combination classes
    with persons but no retained row (exact integer sums, as the twin's)."""
    per_cclass = np.zeros(m, dtype=np.int64)
    for i in range(ccls.shape[0]):
        per_cclass[ccls[i]] += combo_persons[i]
    has_research = np.zeros(m, dtype=np.bool_)
    out = np.zeros(n_classes, dtype=np.int64)
    for h in range(retained.shape[0]):
        if retained[h] > 0:
            c = ccls[row_combo[h]]
            out[cls[h]] = per_cclass[c]
            has_research[c] = True
    unmatched = 0
    for c in range(m):
        if per_cclass[c] > 0 and not has_research[c]:
            unmatched += 1
    return out, unmatched


def class_population_numpy(g: np.ndarray, cls: np.ndarray, n_classes: int, retained: np.ndarray, row_combo: np.ndarray,
                           combo_codes: np.ndarray, combo_persons: np.ndarray, gen: np.ndarray,
                           n_gen: np.ndarray) -> tuple[np.ndarray, int]:
    """``class_population`` in NumPy after the same classification: the twin the tests hold the
    kernel to."""
    ccls, m = K.classify(np.ascontiguousarray(g, dtype=np.int64), combo_codes, gen, n_gen,
                         np.ones(combo_codes.shape[0], dtype=np.bool_))
    per_cclass = np.bincount(ccls, weights=combo_persons, minlength=m).astype(np.int64)
    live = np.flatnonzero(retained > 0)
    mine = ccls[row_combo[live]]
    out = np.zeros(n_classes, dtype=np.int64)
    out[cls[live]] = per_cclass[mine]
    has_research = np.zeros(m, dtype=np.bool_)
    has_research[mine] = True
    return out, int(np.count_nonzero((per_cclass > 0) & ~has_research))
