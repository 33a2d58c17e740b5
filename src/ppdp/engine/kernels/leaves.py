"""Leaf codes of short text values: the encoding's lookup of each source value among its
hierarchy's leaves (engine/core/encoding.py ``encode_rows``), on the Arrow string buffers as
DuckDB hands them over, for hierarchies whose leaves are all at most ``SHORT`` bytes long (codes,
numbers, small categories: mach2019, fars, cup and creditcard's QIDs).

A text of at most ``SHORT`` bytes is known whole from its *signature*: its length and the bytes
at positions 0, 1, L/2, L-2 and L-1, which cover every byte of such a text. Two short texts are
equal exactly when their signatures are, so a leaf is found by its signature alone: one
open-addressing table (``leaf_table``) of the leaves' signatures, probed from one Fibonacci
multiplication of the signature, and no comparison of bytes, whose data-dependent loop cost more
than Arrow's ``index_in``. A longer value is no leaf of such a hierarchy. Longer leaves keep
``index_in`` (encoding.py).

``add_leaf_codes`` folds each row's leaf code into its mixed-radix key (key = key * radix +
code), the key that kernels/grouping.py groups by. The plain-Python twin is
``tests/support/reference.py::leaf_codes``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ppdp.engine.kernels.cache import guard

guard(__file__)

SHORT = 5  # the longest text (bytes) the signature covers whole
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True, inline="always")
def _signature(data: np.ndarray, start: int, length: int) -> np.uint64:
    """length | byte 0 << 8 | byte L-1 << 16 | byte L/2 << 24 | byte 1 << 32 | byte L-2 << 40
    (0 < length <= SHORT: every byte of the text is one of them; the empty text is 0)."""
    if length == 0:
        return np.uint64(0)
    last = start + length - 1
    return (np.uint64(length) | (np.uint64(data[start]) << np.uint64(8)) | (np.uint64(data[last]) << np.uint64(16))
            | (np.uint64(data[start + (length >> 1)]) << np.uint64(24)) | (np.uint64(data[start + 1 if length > 1 else start]) << np.uint64(32))
            | (np.uint64(data[last - 1 if length > 1 else last]) << np.uint64(40)))


@njit(cache=True)
def leaf_table(leaf_offsets: np.ndarray, leaf_data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(signature, leaf code) per slot of the open-addressing table of the leaves (texts
    ``leaf_data[leaf_offsets[j]:leaf_offsets[j+1]]``, code j, each at most SHORT bytes and
    distinct); code -1 marks an empty slot. At least four slots per leaf."""
    n = leaf_offsets.shape[0] - 1
    bits = 2
    while (1 << bits) < 4 * n:
        bits += 1
    codes = np.full(1 << bits, -1, dtype=np.int32)
    sigs = np.zeros(1 << bits, dtype=np.uint64)
    mask = np.uint64((1 << bits) - 1)
    shift = np.uint64(64 - bits)
    for j in range(n):
        a = leaf_offsets[j]
        sig = _signature(leaf_data, a, leaf_offsets[j + 1] - a)
        s = (sig * _GOLDEN) >> shift
        while codes[s] >= 0:
            s = (s + np.uint64(1)) & mask
        codes[s] = j
        sigs[s] = sig
    return sigs, codes


@njit(cache=True, nogil=True)
def add_leaf_codes(offsets: np.ndarray, data: np.ndarray, sigs: np.ndarray, codes: np.ndarray, radix: int,
                   key: np.ndarray) -> int:
    """key[r] = key[r] * radix + (the leaf code of row r's text ``data[offsets[r]:offsets[r+1]]``)
    for every row (``offsets`` (n + 1,) int64, absolute into ``data``; the table of
    ``leaf_table``). Returns -1, or the first row whose text is no leaf (the keys of the rows from
    it on are then left partly updated)."""
    n = offsets.shape[0] - 1
    size = codes.shape[0]
    bits = 0
    while (1 << bits) < size:
        bits += 1
    mask = np.uint64(size - 1)
    shift = np.uint64(64 - bits)
    for r in range(n):
        a = offsets[r]
        length = offsets[r + 1] - a
        if length > SHORT:
            return r
        sig = _signature(data, a, length)
        s = (sig * _GOLDEN) >> shift
        while True:
            j = codes[s]
            if j < 0:
                return r
            if sigs[s] == sig:
                break
            s = (s + np.uint64(1)) & mask
        key[r] = key[r] * radix + j
    return -1
