"""Entropy l-diversity clustering (the DRASL paper's ref. 10 baseline), greedy as the paper
describes it: "each equivalent group begins with a randomly selected record and continuously
select the most appropriate record to join the group ... For the Entropy l-diversity method ...
the criteria is to minimize the increase in entropy".

Our reading: "increase in entropy" is eq. 7's ``H_hat(G, G + r) = H(G) - H(G + r)`` (the sign
DRASL's metric uses, negative when r makes G more diverse), so minimizing it means taking the
record that makes the group's SA entropy highest; that is the l-diversity goal, ``H(G) >= log l``
(Machanavajjhala et al.'s entropy l-diversity; base 10 as entropy.py, the base does not change
the condition). Among the records of the best SA value the one nearest to the group's centroid
joins (eq. 6), so the QIDs count only as a tie-break. A group stops at K records once it is
entropy l-diverse, and grows past K while it is not and some unassigned record still raises its
entropy (``static.greedy_sa_groups``).

l defaults to K: the largest l a group of exactly K records can meet (K distinct values), so
groups stay at K records whenever the data allow and grow only where diversity is scarce.
Static: updates re-cluster the changed table.
"""

from __future__ import annotations

import math

import numpy as np

from ppdp.engine.methods.microaggregation.algorithms import ALGORITHMS
from ppdp.engine.methods.microaggregation.entropy import entropy_after_adding, entropy_of_counts
from ppdp.engine.methods.microaggregation.static import StaticAlgorithm, greedy_sa_groups
from ppdp.errors import SpecError


class EntropyLDiversity(StaticAlgorithm):
    """Greedy entropy l-diversity clustering (module docstring); ``l=None`` means l = K."""

    name = "entropy-l"

    def __init__(self, l: float | None = None):  # noqa: E741 (the model's own name for it)
        if l is not None and not (math.isfinite(l) and l >= 1):
            raise SpecError(f"Entropy l-diversity needs l >= 1, got {l!r}. Hint: l = 2 or more, at most K.")
        self.l = l

    def groups(self, enc, sa_codes, catalogue, params):
        l_value = params.k if self.l is None else self.l
        n_values = len(catalogue.values)
        all_codes = np.arange(n_values)
        return greedy_sa_groups(enc, sa_codes, n_values, params.k, params.seed,
                                cost_after=lambda counts: -entropy_after_adding(counts, all_codes),
                                cost_now=lambda counts: -entropy_of_counts(counts),
                                target=-math.log10(l_value))


ALGORITHMS.register("entropy-l")(EntropyLDiversity())
