"""DPP, the microaggregation-based data privacy protection of the DRASL paper's ref. 19, as that
paper describes it: DRASL without the synonymous-linkage parts.

- Clustering criterion, first release and insertion: eq. 9's ``f = -alpha H_hat - beta d``
  (entropy increase and distance), no ``- alpha Pr_SA`` term ("The DPP method fulfills the
  clustering process with the criteria of minimizing an increase in entropy. It does not consider
  the semantic relevance between the sensitive values at all").
- Forged records as in the method of ref. [20] (Situations 1 and 2 of the paper): a group
  without a forged record gets one, a group with one has its SA rewritten, and the forged SA is
  a random value *different* from the new record's, with no catalogue condition (so it may be
  synonymous with it, which is the weakness DRASL's Alg. 3 removes).
- Deletion and modification follow DRASL's Alg. 4-5 with these two rules.

It reuses cluster.py and dynamic.py through their ``linkage`` / ``forge_unlinked`` switches.
"""

from __future__ import annotations

from ppdp.engine.methods.microaggregation import dynamic
from ppdp.engine.methods.microaggregation.algorithms import ALGORITHMS, Drasl, Params
from ppdp.engine.methods.microaggregation.cluster import first_release
from ppdp.engine.methods.microaggregation.dynamic import DynamicState


class Dpp(Drasl):
    """DPP (module docstring): DRASL's operations on a state whose switches drop the linkage term
    and the synonym condition; only the first release differs."""

    name = "dpp"

    def first_release(self, enc, sa_codes, ids, catalogue, params: Params) -> DynamicState:
        grouping = first_release(enc, sa_codes, catalogue, k=params.k, alpha=params.alpha, beta=params.beta,
                                 seed=params.seed, linkage=False)
        return dynamic.from_grouping(enc, sa_codes, ids, grouping.groups, catalogue, k=params.k, alpha=params.alpha,
                                     beta=params.beta, seed=params.seed, linkage=False, forge_unlinked=False)


ALGORITHMS.register("dpp")(Dpp())
