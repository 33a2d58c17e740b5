"""The second count per class: persons of the population in each class of a release (ARX's
``pcount``, the secondary counter of DPresence and KMap).

A class of G is a combination of generalized codes. Population rows are generalized with the
same lookup tables as the release's rows and matched on that combination; a class's count is
the number of persons whose generalized QIDs equal the class's. Population classes that hold no
retained record are counted apart (``unmatched``): delta-presence fails on them when
delta_min > 0 (Nergiz et al. 2007: a person of the public table whose class has no released
record is known to be absent, with probability 0 of presence). NumPy only (a sort per call);
the plain-Python twin is in tests/oracles/test_population_models.py.
"""

from __future__ import annotations

import numpy as np


def _generalized(g: np.ndarray, codes: np.ndarray, gen: np.ndarray) -> np.ndarray:
    """(rows, nQ) generalized codes of ``codes`` at levels ``g``."""
    out = np.empty(codes.shape, dtype=np.int64)
    for q in range(codes.shape[1]):
        out[:, q] = gen[q, g[q], codes[:, q]]
    return out


def _keys(rows: np.ndarray, radices: np.ndarray) -> np.ndarray | None:
    """One int64 per row (mixed radix), or None when the radices could overflow."""
    total = 1
    for r in radices.tolist():
        total *= max(int(r), 1)
    if total > 2**62:
        return None
    key = np.zeros(rows.shape[0], dtype=np.int64)
    for q in range(rows.shape[1]):
        key = key * int(radices[q]) + rows[:, q]
    return key


def class_population(g: np.ndarray, codes: np.ndarray, retained: np.ndarray, cls: np.ndarray, n_classes: int,
                     pop_codes: np.ndarray, pop_counts: np.ndarray, gen: np.ndarray,
                     n_gen: np.ndarray) -> tuple[np.ndarray, int]:
    """(population per class, population classes without a retained record) for one G.

    ``cls`` is the class id of each histogram row (rows with ``retained > 0`` only; the others
    are ignored), as ``_kernels.classify`` numbers them; the result is aligned with those ids.
    """
    g = np.asarray(g, dtype=np.int64)
    live = np.flatnonzero(retained > 0)
    research = _generalized(g, codes[live], gen)
    population = _generalized(g, pop_codes, gen)
    radices = n_gen[np.arange(codes.shape[1]), g]
    both = np.concatenate([population, research], axis=0)
    keys = _keys(both, radices)
    if keys is None:
        _, inverse = np.unique(both, axis=0, return_inverse=True)
    else:
        _, inverse = np.unique(keys, return_inverse=True)
    inverse = inverse.reshape(-1)
    n_keys = int(inverse.max()) + 1 if inverse.size else 0
    per_key = np.bincount(inverse[: len(pop_counts)], weights=pop_counts, minlength=n_keys).astype(np.int64)
    research_keys = inverse[len(pop_counts):]
    out = np.zeros(n_classes, dtype=np.int64)
    out[cls[live]] = per_key[research_keys]
    has_research = np.zeros(n_keys, dtype=np.bool_)
    has_research[research_keys] = True
    unmatched = int(np.count_nonzero((per_key > 0) & ~has_research))
    return out, unmatched
