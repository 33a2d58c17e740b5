"""Plain-Python twin of ``_neighbors_kernels.py``: the whole distance row, then a stable sort."""

from __future__ import annotations

import numpy as np


def nearest(num, cat, num_range, m, out):
    """out[i] = the m tuples nearest to i (i excluded), nearest first, ties by lower index."""
    n = num.shape[0]
    inv = np.where(num_range > 0, 1.0 / np.where(num_range > 0, num_range, 1.0), 0.0)
    for i in range(n):
        dist = []
        for t in range(n):
            if t == i:
                continue
            d = 0.0
            for j in range(num.shape[1]):
                d += abs(num[i, j] - num[t, j]) * inv[j]
            for j in range(cat.shape[1]):
                if cat[i, j] != cat[t, j]:
                    d += 1.0
            dist.append((d, t))
        dist.sort()
        out[i, :] = [t for _, t in dist[:m]]
