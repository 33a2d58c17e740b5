"""Numba kernel of ``utility.folds.java_shuffle``: ``Collections.shuffle`` of 0..n-1 with
``java.util.Random(seed)``, as ARX's StatisticsClassification draws its folds. The plain twin is
``folds.java_shuffle_python`` (one ``JavaRandom.next_int`` per swap); tests/utility/test_classify.py
compares both, and both with a JDK when one is installed.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ppdp.engine.kernels.cache import guard

guard(__file__)

_MULT = 0x5DEECE66D
_MASK = (1 << 48) - 1


@njit(cache=True)
def java_shuffle(n, scrambled):
    """The permutation (int64) for the generator state ``scrambled`` = (seed ^ 0x5DEECE66D) mod
    2**48: for i = n-1 down to 1 swap i with nextInt(i + 1) (java.util.Random's documented
    algorithm: next(31), the power-of-two shortcut, rejection of the last partial range)."""
    rows = np.arange(n)
    state = np.uint64(scrambled)
    mult, add, mask = np.uint64(_MULT), np.uint64(0xB), np.uint64(_MASK)
    for i in range(n - 1, 0, -1):
        bound = i + 1
        while True:
            state = (state * mult + add) & mask
            bits = np.int64(state >> np.uint64(17))  # next(31): the top 31 of 48 bits
            if bound & -bound == bound:
                j = (bound * bits) >> 31
                break
            j = bits % bound
            if bits - j + (bound - 1) < 2**31:
                break
        t = rows[i]
        rows[i] = rows[j]
        rows[j] = t
    return rows
