"""The objectives other than TD (engine/methods/generalization/objectives.py): each chosen node
is the minimum over every node, found by brute force on small instances."""

from __future__ import annotations

import numpy as np


def test_share_sums_kernel_equals_its_twin():
    from ppdp.engine.methods.generalization import _objective_kernel as OK
    rng = np.random.default_rng(3)
    shares = rng.random((3, 4, 50))
    G = rng.integers(0, 4, size=(6, 3))
    kept = rng.integers(0, 5, size=(6, 50)).astype(np.float64)
    assert np.array_equal(OK.share_sums(G, kept, shares), OK.share_sums_twin(G, kept, shares))

