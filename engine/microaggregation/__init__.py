"""Microaggregation releases (DRASL, PAPER_NOTES §6): the pure computational core.

- ``distances``: QID kinds and the distances of eq. 1-6, plus the array encoding.
- ``entropy``: entropy increase (eq. 7-8, base 10) and the metrics f (eq. 9) and f_link (eq. 14).
- ``linkage``: synonymous linkage Tlink and Pr (eq. 10-13) from a sensitive-value catalogue.
- ``cluster``: the first release (Alg. 1); ``dynamic``: insert, delete, modify (Alg. 2-5) with
  forged records, on an in-memory state of groups.
- ``_kernels``: Numba kernels over the encoded arrays (plain-Python twins in ``distances``).

No database and no pipeline here: the release method that uses this lives in engine/methods/.
"""
