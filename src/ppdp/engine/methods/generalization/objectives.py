"""What the optimizer minimizes besides TD: ARX's information-loss metrics, scored on a node
(G, S*(G)) of the encoded table (``objective`` of the spec's [utility] section).

- ``td``: -TD (paper_notes §1), ppdp's default; the optimizers' own bounds are for it.
- ``loss``: ARX's Loss metric (metric/v2/MetricMDNMLoss, gs-factor 0.5, geometric mean, ARX's
  default ``Metric.createLossMetric()``): per QID d, the sum over kept records of the domain
  share of their value at level G_d (leaves under the value / leaves of the hierarchy, ARX's
  DomainShareMaterialized) plus 1 per suppressed record, normalized between N/|domain_d| and N
  and floored to ARX's 1e-10 grid; the QIDs aggregated as prod(1 + l_d)^(1/D) - 1.

``search`` runs an objective other than TD on the lattice: it scores every node (exhaustive,
in batches of ``Problem.evaluate_optimal``) and keeps the smallest. Exhaustive is what makes the
result certified for an objective the box bounds are not proved for: certified when every node
was scored within the budget and the oracle is exact, ``not_certified_because`` otherwise.
Ties keep the first node in the lattice's order (levels as an odometer, last QID fastest).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable

import numpy as np

from ppdp.engine.core.encoding import EncodedTable
from ppdp.engine.core.spec import OBJECTIVE_OPTIMIZERS, OBJECTIVES  # noqa: F401  (what the spec reader accepts)
from ppdp.engine.methods.generalization.optimizers import OptimizerResult, ProgressFn
from ppdp.engine.methods.generalization.problem import Problem

# ARX's Metric.round: information loss floored to 10 decimal digits (Metric.DIGITS).
_ARX_FACTOR = 10.0**10
_BATCH = 256


def _shares(table: EncodedTable) -> list[np.ndarray]:
    """Per QID a (levels, histogram rows) array: the domain share of each row's value per level."""
    out = []
    for q, h in enumerate(table.hierarchies):
        n = float(len(h.rows))
        codes = table.codes[:, q]
        out.append(np.stack([h.leaf_counts[lv][h.level_codes[lv][codes]] / n for lv in range(h.height + 1)]))
    return out


def loss_scorer(table: EncodedTable) -> Callable[[np.ndarray, np.ndarray], float]:
    """ARX's Loss of (g, retained) on ``table`` (module docstring)."""
    shares = _shares(table)
    domains = [float(len(h.rows)) for h in table.hierarchies]
    n = float(table.n_records)

    def score(g: np.ndarray, retained: np.ndarray) -> float:
        kept = retained.astype(np.float64)
        suppressed = n - float(kept.sum())
        result = 1.0
        dims = len(shares)
        for d in range(dims):
            agg = float(np.dot(kept, shares[d][int(g[d])])) + suppressed
            lo = n / domains[d]
            v = (agg - lo) / (n - lo) if n > lo else 0.0
            v = math.floor(max(v, 0.0) * _ARX_FACTOR) / _ARX_FACTOR
            result *= (v + 1.0) ** (1.0 / dims)
        return result - 1.0

    return score


def scorer(objective: str, table: EncodedTable) -> Callable[[np.ndarray, np.ndarray], float]:
    """The objective's score of (g, retained), lower is better."""
    if objective == "loss":
        return loss_scorer(table)
    raise ValueError(f"no scorer for objective {objective!r}")


def search(problem: Problem, objective: str, *, budget: int, optimizer: str, params: dict | None = None,
           progress: ProgressFn | None = None) -> OptimizerResult:
    """The feasible node with the smallest ``objective`` over the whole lattice (module docstring);
    ``params["suppression_limit"]`` (ARX's semantics, as the lattice's): a node whose S*(G)
    suppresses more than floor(limit x nR) records is infeasible."""
    t0 = time.perf_counter()
    limit = float((params or {}).get("suppression_limit", 1.0))
    max_suppressed = math.floor(limit * problem.table.n_records)
    score = scorer(objective, problem.table)
    heights = [int(h) for h in problem.heights]
    nodes = itertools.product(*(range(h + 1) for h in heights))
    lattice = math.prod(h + 1 for h in heights)
    best: tuple[float, np.ndarray, np.ndarray, int] | None = None
    best_ad = best_sup = None
    evaluated = 0
    history = []
    while evaluated < budget:
        batch = list(itertools.islice(nodes, min(_BATCH, budget - evaluated)))
        if not batch:
            break
        G = np.array(batch, dtype=np.int64)
        retained, ev = problem.evaluate_optimal(G)
        for i in range(len(batch)):
            if not ev.feasible[i] or int(ev.suppressed[i]) > max_suppressed:
                continue
            s = score(G[i], retained[i])
            if best is None or s < best[0]:
                best = (s, G[i].copy(), retained[i].copy(), evaluated + i)
                best_ad, best_sup = ev.ad[i].copy(), int(ev.suppressed[i])
        evaluated += len(batch)
        history.append((evaluated, -best[0] if best else np.nan, 1.0 if best else 0.0))
        if progress is not None:
            progress(evaluated, -best[0] if best else float("nan"), best is not None)
    complete = evaluated >= lattice
    why: list[str] = []
    if not complete:
        why.append(f"the lattice has {lattice:,} nodes and the budget scored {evaluated:,}: objective {objective!r} "
                   "is certified only by scoring every node")
    if not problem.oracle_exact:
        why.append("the suppression oracle is not exact for these models")
    info = {"mode": "exhaustive", "objective": objective, "lattice_size": lattice, "nodes_evaluated": evaluated,
            "suppression_limit": limit}
    if best is None:
        g = np.array(heights, dtype=np.int64)
        kept = np.zeros_like(problem.table.counts)
        ev = problem.evaluate(g[None, :], retained=kept[None, :])
        return OptimizerResult(optimizer, g, kept, float(ev.td[0]), False, ev.ad[0], int(problem.table.n_records), evaluated,
                               time.perf_counter() - t0, np.array(history or [(0, np.nan, 0.0)]), False, info, tuple(why))
    s, g, kept, _ = best
    td = float(problem.evaluate(g[None, :], retained=kept[None, :]).td[0])
    info["objective_value"] = s
    return OptimizerResult(optimizer, g, kept, td, True, best_ad, best_sup, evaluated, time.perf_counter() - t0,
                           np.array(history), complete and not why, info, tuple(why))
