"""Microaggregation algorithms, registered by name: DRASL and the baselines it is compared with.

Every algorithm works on the same in-memory state (``dynamic.DynamicState``: groups of real
records plus forged records) so that the release method (engine/methods/microaggregation/method.py) and
the benchmark (benchmarks/drasl.py) drive them all the same way:

- ``first_release`` clusters an encoded table into groups of at least K;
- ``insert``, ``delete``, ``modify`` apply one change of the source to a state. A *dynamic*
  algorithm adjusts the stored groups (DRASL Alg. 2-5, DPP, m-invariance); a static one (MDAV,
  OKA, IKA, entropy l-diversity and t-closeness clustering) re-clusters the changed table, as the
  DRASL paper does for its static baselines ("performing corresponding number of record
  insertion, deletion, and modification on the static dataset").

Adding an algorithm is one new module that calls ``ALGORITHMS.register``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ppdp.engine.methods.microaggregation import dynamic
from ppdp.engine.methods.microaggregation.cluster import first_release as drasl_first_release
from ppdp.engine.methods.microaggregation.distances import EncodedQids
from ppdp.engine.methods.microaggregation.dynamic import DynamicState, Modification, NewRecord
from ppdp.engine.methods.microaggregation.linkage import SensitiveCatalogue
from ppdp.registry import Registry


@dataclass(frozen=True)
class Params:
    """What every algorithm is given: K, the eq. 9/14 weights and the seed of its random draws."""

    k: int
    alpha: float = 0.6
    beta: float = 0.4
    seed: int = 0


class MicroAlgorithm(Protocol):
    name: str
    forges: bool  # may add forged (counterfeit) records
    dynamic: bool  # updates stored groups; False: re-clusters the changed table on every change

    def first_release(self, enc: EncodedQids, sa_codes: np.ndarray, ids: Sequence[int],
                      catalogue: SensitiveCatalogue, params: Params) -> DynamicState:
        """Groups of at least K over the records ``ids`` (one per row of ``enc``)."""
        ...

    def insert(self, state: DynamicState, record: NewRecord) -> DynamicState:
        ...

    def delete(self, state: DynamicState, record_id: int) -> DynamicState:
        ...

    def modify(self, state: DynamicState, record_id: int, new_values: Modification) -> DynamicState:
        ...


# The baselines register themselves in their own modules, imported on the first lookup (the
# package imports none of them: no import cycle through it).
ALGORITHMS: Registry[MicroAlgorithm] = Registry("microaggregation algorithm", builtins=tuple(
    f"ppdp.engine.methods.microaggregation.{m}" for m in ("dpp", "entropy_l", "ika", "m_invariance", "mdav", "oka", "t_closeness")))


class Drasl:
    """DRASL: Alg. 1 (cluster.py) and Alg. 2-5 with forged records (dynamic.py)."""

    name = "drasl"
    forges = True
    dynamic = True

    def first_release(self, enc, sa_codes, ids, catalogue, params: Params) -> DynamicState:
        grouping = drasl_first_release(enc, sa_codes, catalogue, k=params.k, alpha=params.alpha, beta=params.beta,
                                       seed=params.seed)
        return dynamic.from_grouping(enc, sa_codes, ids, grouping.groups, catalogue, k=params.k, alpha=params.alpha,
                                     beta=params.beta, seed=params.seed)

    def insert(self, state, record):
        return dynamic.insert(state, record)

    def delete(self, state, record_id):
        return dynamic.delete(state, record_id)

    def modify(self, state, record_id, new_values):
        return dynamic.modify(state, record_id, new_values)


ALGORITHMS.register("drasl")(Drasl())
