"""The DRASL paper's evaluation metrics over a ``DynamicState`` (docs/design/paper_notes.md §6).

- ``total_pr`` (eq. 15): ``Total_Pr = sum over the published groups G_i of Pr_SA(SA_Gi)``, with
  ``Pr_SA`` of eq. 13 (``Tlink / (n (n - 1))``, linkage.py). A group is taken *as published*:
  its forged rows are included, because the attacker cannot tell them from real ones and the
  paper's Fig. 6-8 measure the published data after forged records were added.
- ``information_loss`` (eq. 16): ``IL(G) = (1 / |G|) sum over r_i in G of d(r_i, mu_G)``, with d
  of eq. 6 (distances.py) and mu_G the group's centroid (``distances.encoded_centroid``: mean of
  continuous QIDs, mode of nominal ones, lower median of ordinal ones). Forged rows are members
  of the published group, so they are among the r_i and in mu_G (the state keeps its centroids
  over real + forged rows, dynamic.py).
- ``average_information_loss`` (eq. 17): ``Average_IL = (1 / |T|) sum over G_i of IL(G_i)``,
  exactly as printed: the sum of per-group *averages* divided by |T|, "the total number of
  records in the data table T". We read T as the data table the release stands for, i.e. the
  real records (forged rows are not records of T); at the first release this is also the number
  of published rows. Because each IL(G) is already an average, Average_IL is about
  ``mean IL / K`` (it falls as K grows even at equal per-group loss); ``mean_group_loss`` gives
  the plain mean of IL(G) over the groups for readers who want that instead.
- ``forged_rows``: forged rows currently published (Table 9 counts these per update sweep).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ppdp.engine.methods.microaggregation import _kernels
from ppdp.engine.methods.microaggregation.dynamic import DynamicState
from ppdp.engine.methods.microaggregation.linkage import total_links_of_counts


@dataclass(frozen=True)
class ReleaseMetrics:
    """The paper's metrics of one published version (see the module docstring)."""

    total_pr: float
    average_il: float
    mean_group_loss: float
    groups: int
    real_records: int
    forged_rows: int


def group_probabilities(state: DynamicState) -> np.ndarray:
    """Eq. 13 for every published group (forged rows included), in group order; 0 for n < 2."""
    out = np.zeros(len(state.groups), dtype=np.float64)
    for i in range(len(state.groups)):
        counts = state.counts[i]
        n = int(counts.sum())
        if n >= 2:
            out[i] = total_links_of_counts(counts, state.catalogue) / (n * (n - 1))
    return out


def total_pr(state: DynamicState) -> float:
    """Eq. 15: the sum over the published groups of eq. 13."""
    return float(group_probabilities(state).sum())


def information_loss(state: DynamicState) -> np.ndarray:
    """Eq. 16 for every published group: mean eq. 6 distance of its rows (real and forged) to
    its centroid ``mu_G``."""
    pool = state.pool
    cc, cs, cn, co = state.centroids
    out = np.zeros(len(state.groups), dtype=np.float64)
    for i, g in enumerate(state.groups):
        rows = np.asarray(g.rows, dtype=np.int64)
        d = _kernels.distances_to_rows(cc[i], cs[i], cn[i], co[i], pool.cont, pool.sem, pool.nom, pool.ordn,
                                       pool.sem_table, pool.n_qids, rows)
        out[i] = float(d.mean())
    return out


def average_information_loss(state: DynamicState) -> float:
    """Eq. 17: ``sum IL(G_i) / |T|`` with |T| the real records (see the module docstring)."""
    if state.real_count == 0:
        return 0.0
    return float(information_loss(state).sum() / state.real_count)


def release_metrics(state: DynamicState) -> ReleaseMetrics:
    """Total_Pr, Average_IL, mean IL per group, and the counts, of one published version."""
    il = information_loss(state)
    return ReleaseMetrics(
        total_pr=total_pr(state),
        average_il=float(il.sum() / state.real_count) if state.real_count else 0.0,
        mean_group_loss=float(il.mean()) if il.size else 0.0,
        groups=len(state.groups), real_records=state.real_count, forged_rows=state.forged_count)
