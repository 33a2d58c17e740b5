"""Codes of the AD computations built into the fused Numba kernels (``kinds`` arrays of
``batch.evaluate_prepared_into`` and ``_kernels.evaluate_optimal_batch``).

A model that one of these computes names its code in ``kernel_kind``; the kernels know
computations, not models. Empty-release conventions follow docs/design/paper_notes.md §2.
"""

SMALLEST_CLASS = 0  # smallest class size; inf when nothing is kept
LARGEST_EUCLIDEAN_DISTANCE = 1  # largest ||S - Q||_2 over classes (HAEF eq. 2-4); 0 when empty
FEWEST_DISTINCT = 2  # fewest distinct sensitive values in a class; inf when empty
SMALLEST_EXP_ENTROPY = 3  # smallest exp(entropy) of a class's sensitive values; inf when empty
# The sensitive-distribution models, with parameters (``PrivacyModel.kernel_params``; layouts in
# kernels/distributions.py). 0 when empty, beta-likeness -inf.
RECURSIVE_RATIO = 4  # largest r_1 / (r_l + ... + r_m) of a class (recursive (c, l)-diversity)
EQUAL_EMD = 5  # largest equal-distance EMD of a class to Q
ORDERED_EMD = 6  # largest ordered-distance EMD of a class to Q
HIERARCHICAL_EMD = 7  # largest hierarchical-distance EMD of a class to Q
LIKENESS_EXCESS = 8  # largest relative gain over its bound of a class's value (beta-likeness)

# How a fused kernel tests a model's feasibility from its AD (``PrivacyModel.kernel_feasibility``:
# a code and a threshold), where it decides within a kernel what ``feasible`` decides in Python.
AT_LEAST = 0  # feasible when AD >= threshold
AT_MOST = 1  # feasible when AD <= threshold
