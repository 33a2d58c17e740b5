"""Numba kernels shared by the privacy models, the generalization evaluators and optimizers:
class classification and AD (classes.py), fused batch evaluation (batch.py),
sensitive distributions (distributions.py), the class memo (memo.py), population counts
(population.py), their codes (kinds.py), and the on-disk cache guard
(cache.py). Their plain-Python twins live in tests/support/.

This package's ``__init__`` imports nothing, so that ``worker_entry`` can point Numba at a cache
directory before any kernel module is loaded."""
