"""ARX's cross-validation folds, record for record: ``java.util.Random`` and
``Collections.shuffle`` reproduced, so that ppdp and ARX's StatisticsClassification train and
test on the same records (docs/concepts/utility.md).

ARX shuffles the indices of all records with ``new Random(seed)`` (seed ``Integer.MAX_VALUE`` by
default), keeps the first ``max_records`` (100,000) and cuts them into ``k`` consecutive folds of
``n // k`` records, the last fold taking the rest (``StatisticsClassification.getFolds``).
"""

from __future__ import annotations

import numpy as np

ARX_SEED = 2**31 - 1  # ARXClassificationConfiguration's default seed, Integer.MAX_VALUE
ARX_MAX_RECORDS = 100_000
ARX_FOLDS = 10

_MULT = 0x5DEECE66D
_MASK = (1 << 48) - 1


class JavaRandom:
    """``java.util.Random``: the 48-bit linear congruential generator of its documentation."""

    def __init__(self, seed: int) -> None:
        self._seed = (seed ^ _MULT) & _MASK

    def next(self, bits: int) -> int:
        self._seed = (self._seed * _MULT + 0xB) & _MASK
        r = self._seed >> (48 - bits)
        return r - (1 << 32) if r >= 1 << 31 else r  # Java's (int) cast of the 48-bit state

    def next_int(self, bound: int | None = None) -> int:
        if bound is None:
            return self.next(32)
        if bound <= 0:
            raise ValueError("bound must be positive")
        if bound & -bound == bound:  # a power of two
            return (bound * self.next(31)) >> 31
        while True:
            bits = self.next(31)
            val = bits % bound
            if bits - val + (bound - 1) < 2**31:  # no int overflow in Java
                return val


def java_shuffle(n: int, seed: int) -> np.ndarray:
    """``Collections.shuffle(list(range(n)), new Random(seed))`` (the Numba kernel
    kernels/shuffle.py; its twin is ``java_shuffle_python``)."""
    from ppdp.engine.kernels.shuffle import java_shuffle as kernel

    return kernel(n, (seed ^ _MULT) & _MASK)


def java_shuffle_python(n: int, seed: int) -> np.ndarray:
    """``Collections.shuffle(list(range(n)), new Random(seed))``: for i from n-1 down to 1, swap
    i with ``nextInt(i + 1)`` (a list of any size is shuffled this way since Java 1.2's
    RandomAccess branch)."""
    rows = np.arange(n, dtype=np.int64)
    rnd = JavaRandom(seed)
    for i in range(n - 1, 0, -1):
        j = rnd.next_int(i + 1)
        rows[i], rows[j] = rows[j], rows[i]
    return rows


def arx_folds(n: int, *, k: int = ARX_FOLDS, max_records: int = ARX_MAX_RECORDS, seed: int = ARX_SEED) -> list[np.ndarray]:
    """The record indices (0-based, in the source's key order) of each fold, as ARX cuts them."""
    if n <= 0:
        raise ValueError("no records to classify")
    samples = min(n, max_records) if max_records > 0 else n
    k = min(k, samples)
    rows = java_shuffle(n, seed)[:samples]
    size = max(samples // k, 1)
    return [rows[i * size: (samples if i == k - 1 else (i + 1) * size)] for i in range(k)]
