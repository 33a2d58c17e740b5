"""Nodes of the generalization lattice: its size, its nodes, the suppression limit in records
and the evaluation of nodes with S = S*(G) (docs/design/paper_notes.md §3).

The lattice searches (``lattice``, ``descent``, ``flash``) and the Ray workers that evaluate
node batches (``ray_executor``) all use these; they live apart from ``lattice.py`` so that
``lattice`` can use ``descent`` (its greedy incumbent) without ``descent`` importing it back.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ppdp.engine.methods.generalization.evaluators import Evaluation
from ppdp.engine.methods.generalization.problem import Problem
from ppdp.errors import SpecError


def lattice_size(heights: np.ndarray) -> int:
    return int(np.prod(np.asarray(heights, dtype=object) + 1))


def all_nodes(heights: np.ndarray) -> np.ndarray:
    """Every node of the lattice, (n, nQ)."""
    grids = np.meshgrid(*[np.arange(h + 1) for h in heights], indexing="ij")
    return np.stack([g.ravel() for g in grids], axis=1).astype(np.int64)


def check_suppression_limit(limit: Any, optimizer: str) -> None:
    """SpecError unless ``limit`` is ARX's suppression limit, a fraction of nR in [0, 1]."""
    if isinstance(limit, bool) or not isinstance(limit, int | float) or not 0.0 <= float(limit) <= 1.0:
        raise SpecError(f"{optimizer} optimizer: suppression_limit must be a fraction in [0, 1], got {limit!r}. "
                        "Hint: 0.05 for 5%, 1 for no limit.")


def max_suppressed_records(problem: Problem, limit: Any, optimizer: str) -> int:
    """Records a node may suppress under ARX's suppression limit (a fraction of nR in [0, 1])."""
    check_suppression_limit(limit, optimizer)
    return math.floor(float(limit) * problem.n_records + 1e-9)


def evaluate_nodes(problem: Problem, G: np.ndarray, max_suppressed: int) -> tuple[np.ndarray, Evaluation]:
    """(retained, evaluation) of (G, S*(G)) for each node of G; a node whose S*(G) suppresses
    more than ``max_suppressed`` records is evaluated with nothing suppressed (infeasible). The
    in-process searches and the Ray workers (ray_executor.py) all call this."""
    G = np.asarray(G, dtype=np.int64)
    if max_suppressed == 0:  # no S*(G) needed: with nothing suppressed a node is feasible or not
        retained = np.tile(problem.table.counts, (len(G), 1))
        return retained, problem.evaluate(G, retained=retained)
    if max_suppressed >= problem.n_records:  # no limit: S*(G) and its evaluation in one pass
        return problem.evaluate_optimal(G)
    # S*(G) of the batch in one pass (the fused kernel where it applies); only the nodes over
    # the limit are evaluated again, with nothing suppressed.
    retained, ev = problem.evaluate_optimal(G)
    over = problem.n_records - retained.sum(axis=1) > max_suppressed
    if not over.any():
        return retained, ev
    retained[over] = problem.table.counts  # evaluate_optimal's own array (it remembers copies)
    idx = np.flatnonzero(over)
    redo = problem.evaluate(G[idx], retained=retained[idx])
    fields = ("ad", "td", "feasible", "violation", "suppressed")
    merged = {f: np.array(getattr(ev, f), copy=True) for f in fields}
    for f in fields:
        merged[f][idx] = getattr(redo, f)
    return retained, type(ev)(**merged)
