"""Rows grouped by their keys: the encoding's sort of every source row's key and its run-length
pass (engine/core/encoding.py ``encode_rows``), for keys whose codes sit in fields of whole bits.

``sort_keys`` is a least-significant-digit radix sort over the key's used bits only (11-bit
digits: three passes for adult's and mach2019's 8 QIDs), stable, so the sorted keys are what
``np.sort`` gives. ``group_sorted`` then makes the histogram in one pass: each distinct key's
codes (decoded by shifts and masks, or by division for mixed-radix keys; row-major as
EncodedTable.codes holds them), its joint SA
code and its count. Their plain twin is ``np.sort`` and ``np.unique(key, return_index=True,
return_counts=True)`` with the fields read at each group's first row, which
tests/oracles/test_encode_rows.py compares them with.
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit

from ppdp.engine.kernels.cache import guard

guard(__file__)

DIGIT_BITS = 11
_JIT_STARTED = [False]


def jit_started() -> bool:
    """Whether a kernel of ppdp.engine.kernels is loaded in this process (compiled or read from
    Numba's cache), so Numba's JIT has started: the first kernel a process loads pays that start
    (the set-up of its code generator); later ones only their own cache read."""
    if _JIT_STARTED[0]:
        return True
    from numba.core.dispatcher import Dispatcher

    for name, module in list(sys.modules.items()):
        if name.startswith("ppdp.engine.kernels.") and module is not None:
            if any(isinstance(v, Dispatcher) and v.signatures for v in vars(module).values()):
                _JIT_STARTED[0] = True
                return True
    return False


@njit(cache=True, nogil=True)
def sort_keys(key: np.ndarray, bits: int) -> np.ndarray:
    """``key`` (int64, each in [0, 2**bits)) sorted ascending, as a new array (``key`` is used as
    the scratch buffer and left permuted)."""
    n = key.shape[0]
    src = key
    dst = np.empty(n, dtype=np.int64)
    radix = 1 << DIGIT_BITS
    mask = radix - 1
    count = np.empty(radix, dtype=np.int64)
    shift = 0
    while shift < bits:
        count[:] = 0
        for i in range(n):
            count[(src[i] >> shift) & mask] += 1
        total = 0
        for d in range(radix):
            c = count[d]
            count[d] = total
            total += c
        for i in range(n):
            d = (src[i] >> shift) & mask
            dst[count[d]] = src[i]
            count[d] += 1
        src, dst = dst, src
        shift += DIGIT_BITS
    if src is key:  # an even number of passes (or none): the result is in the caller's array
        out = np.empty(n, dtype=np.int64)
        out[:] = key
        return out
    return src


@njit(cache=True, nogil=True)
def _split(v: int, radix: int, bits: int) -> tuple[int, int]:
    """(v's higher fields, its lowest field) for a field of ``bits`` whole bits (shift and mask),
    or, when ``bits`` is -1, of mixed radix ``radix`` (division)."""
    if bits >= 0:
        return v >> bits, v & ((1 << bits) - 1)
    higher = v // radix
    return higher, v - higher * radix


@njit(cache=True, nogil=True)
def group_sorted(key: np.ndarray, radices: np.ndarray, field_bits: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(codes (groups, k - 1) int32, last field (groups,) int32, rows per group int64) of sorted
    ``key``: one group per distinct key, in key order; a key's fields, first most significant,
    the last one the joint SA code, are ``field_bits`` whole bits wide, or in mixed radix
    ``radices`` where ``field_bits`` is -1 (whole-bit fields would not fit 62 bits)."""
    n = key.shape[0]
    k = radices.shape[0]
    groups = 0
    for i in range(n):
        if i == 0 or key[i] != key[i - 1]:
            groups += 1
    codes = np.empty((groups, k - 1), dtype=np.int32)
    last = np.empty(groups, dtype=np.int32)
    counts = np.zeros(groups, dtype=np.int64)
    g = -1
    for i in range(n):
        if i == 0 or key[i] != key[i - 1]:
            g += 1
            v, field = _split(key[i], radices[k - 1], field_bits[k - 1])
            last[g] = field
            for j in range(k - 2, -1, -1):
                v, field = _split(v, radices[j], field_bits[j])
                codes[g, j] = field
        counts[g] += 1
    return codes, last, counts
