"""Microaggregation releases (DRASL, docs/design/paper_notes.md §6): the pure computational core.

- ``distances``: QID kinds and the distances of eq. 1-6, plus the array encoding.
- ``entropy``: entropy increase (eq. 7-8, base 10) and the metrics f (eq. 9) and f_link (eq. 14).
- ``linkage``: synonymous linkage Tlink and Pr (eq. 10-13) from a sensitive-value catalogue.
- ``cluster``: the first release (Alg. 1); ``dynamic``: insert, delete, modify (Alg. 2-5) with
  forged records, on an in-memory state of groups.
- ``_kernels``: Numba kernels over the encoded arrays (plain-Python twins in ``distances``).
- ``algorithms``: the registry of algorithms on one interface: DRASL and the baselines it is compared with,
  one module each (``dpp``, ``mdav``, ``oka``, ``ika``, ``entropy_l``, ``t_closeness``,
  ``m_invariance``); ``static`` holds what the static ones share (re-clustering on change).

No database and no pipeline here: the release method that uses this is ``method.py``. The
algorithms' modules are imported by the registry's first lookup (``algorithms.ALGORITHMS``).
"""
