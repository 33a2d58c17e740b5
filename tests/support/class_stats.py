"""ClassStats of a release written as {class: {sensitive code: records}}: the input the model
tests hand to ``class_ad``/``ad`` (one builder for the model contract, distribution and
delta-disclosure tests)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ppdp.engine.privacy import ClassStats


def class_stats(classes: dict[int, dict[int, int]], q: Sequence[float] | np.ndarray) -> ClassStats:
    """Class sizes and (class, value, count) pairs of ``classes`` (classes numbered 0..n-1), with
    the source distribution ``q``."""
    pc, ps, pn = [], [], []
    for c, counts in classes.items():
        for v, n in counts.items():
            pc.append(c)
            ps.append(v)
            pn.append(n)
    size = np.array([sum(classes[c].values()) for c in range(len(classes))], dtype=np.int64)
    return ClassStats(size, np.array(pc, dtype=np.int32), np.array(ps, dtype=np.int32), np.array(pn, dtype=np.int64),
                      np.asarray(q, dtype=np.float64))
