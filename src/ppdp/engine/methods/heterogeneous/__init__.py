"""Heterogeneous k-anonymity: the pure computational core, no database.

graph.py        the k-regular bipartite graph (cover[t, s], self edge in slot 0) and validation
metrics.py      NCP/GCP (eq. 1-4) and SIL (eq. 5-7), full NumPy recomputation
incremental.py  §5's incremental structures: O(d) evaluation of a 2-opt move, Numba kernels
                (_incremental_kernels.py) with a plain-Python twin (_incremental_py.py)
initial.py      initial graphs: k-member, l-greedy, Doka's Hungarian, §5.5 cluster conversion
ils.py          the iterated local search of Alg. 1-2 (anytime, seeded, objective over time)
repair.py       later versions: the previous graph repaired locally after deletes and inserts
The release method is engine/methods/heterogeneous/method.py.
"""
