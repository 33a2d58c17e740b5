"""Codes of the AD computations built into the fused Numba kernels (``kinds`` arrays of
``_batch.evaluate_batch`` and ``_kernels.evaluate_optimal_batch``).

A model that one of these computes names its code in ``kernel_kind``; the kernels know
computations, not models. Empty-release conventions follow PAPER_NOTES §2.
"""

SMALLEST_CLASS = 0  # smallest class size; inf when nothing is kept
LARGEST_EUCLIDEAN_DISTANCE = 1  # largest ||S - Q||_2 over classes (HAEF eq. 2-4); 0 when empty
FEWEST_DISTINCT = 2  # fewest distinct sensitive values in a class; inf when empty
SMALLEST_EXP_ENTROPY = 3  # smallest exp(entropy) of a class's sensitive values; inf when empty
