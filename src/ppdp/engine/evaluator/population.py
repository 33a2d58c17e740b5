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

from ppdp.engine.evaluator import _kernels as K


def class_population(g: np.ndarray, cls: np.ndarray, n_classes: int, retained: np.ndarray, row_combo: np.ndarray,
                     combo_codes: np.ndarray, combo_persons: np.ndarray, gen: np.ndarray,
                     n_gen: np.ndarray) -> tuple[np.ndarray, int]:
    """(persons per class, population classes without a retained record) for one G.

    ``cls`` is the class id of each histogram row with ``retained > 0`` (as ``_kernels.classify``
    numbers them, ``n_classes`` of them; other rows are ignored); the result is aligned with those ids.
    """
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
