"""The k-regular bipartite graph of heterogeneous k-anonymity (docs/design/paper_notes.md §7).

Interpretation kept everywhere in ``engine/methods/heterogeneous``:

* There are ``n`` original tuples q_0..q_{n-1} and ``n`` anonymized tuples q'_0..q'_{n-1}.
* Anonymized tuple q'_t publishes original t's sensitive and other released columns, and for
  every QID the generalization (range or set) of the ``k`` originals it *covers*.
* The graph is stored from the anonymized side as ``cover``, an ``(n, k)`` int64 array:
  ``cover[t, s]`` is the s-th original covered by q'_t. An edge is (original, anonymized) =
  ``(cover[t, s], t)``.
* Slot 0 is the self edge: ``cover[t, 0] == t`` always. q'_t carries t's own columns, so it must
  cover t (Doka et al.'s first perfect matching is the identity); moves only exchange slots >= 1,
  so no move can ever remove a self edge.
* k-regular: every row holds k distinct originals (out-degree k of q'_t) and every original
  occurs in exactly k rows (it is matched to k anonymized tuples).

A 2-opt move of the paper (replace edges (a, b') and (c, d') by (a, d') and (c, b')) is, in this
layout, the exchange of ``cover[b, s1]`` and ``cover[d, s2]``: both degrees are preserved by
construction, and the move is valid when neither row would then hold a duplicate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ppdp.errors import DataError

_HINT = "hint: build the graph with KRegularGraph.from_edges or circulant_graph"


@dataclass(frozen=True, eq=False)
class KRegularGraph:
    """A validated k-regular bipartite graph; ``cover[t, s]`` = s-th original covered by q'_t.

    The array is copied and made read-only; optimizers work on their own mutable copy
    (``engine.methods.heterogeneous.incremental.IncrementalState``) and snapshot back with ``graph()``.
    """

    cover: np.ndarray

    def __post_init__(self) -> None:
        cover = np.array(self.cover, dtype=np.int64, copy=True)
        validate_cover(cover)
        cover.setflags(write=False)
        object.__setattr__(self, "cover", cover)

    @property
    def n(self) -> int:
        """Number of original (and of anonymized) tuples."""
        return int(self.cover.shape[0])

    @property
    def k(self) -> int:
        """Degree of every node."""
        return int(self.cover.shape[1])

    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        """The edges as two int64 arrays ``(original, anonymized)`` of length n*k."""
        anonymized = np.repeat(np.arange(self.n, dtype=np.int64), self.k)
        return self.cover.reshape(-1).copy(), anonymized

    def covered_by(self) -> np.ndarray:
        """``(n, k)`` array: row i lists the anonymized tuples that cover original i (sorted)."""
        original, anonymized = self.edges()
        order = np.lexsort((anonymized, original))
        return anonymized[order].reshape(self.n, self.k)

    @classmethod
    def from_edges(cls, original, anonymized, *, n: int, k: int) -> KRegularGraph:
        """Build from an edge list (any order); the self edge of each row goes to slot 0.

        Raises DataError naming the first anonymized tuple or original whose degree is not k,
        or the first anonymized tuple that does not cover its own original.
        """
        original = np.asarray(original, dtype=np.int64).reshape(-1)
        anonymized = np.asarray(anonymized, dtype=np.int64).reshape(-1)
        if original.shape != anonymized.shape:
            raise DataError(
                f"edge list has {original.size} originals but {anonymized.size} anonymized "
                f"tuples; {_HINT}"
            )
        _check_nk(n, k)
        for name, ids in (("original", original), ("anonymized", anonymized)):
            if ids.size and (ids.min() < 0 or ids.max() >= n):
                bad = int(ids[(ids < 0) | (ids >= n)][0])
                raise DataError(f"edge names {name} tuple {bad}, outside 0..{n - 1}; {_HINT}")
        out_degree = np.bincount(anonymized, minlength=n)
        wrong = np.flatnonzero(out_degree != k)
        if wrong.size:
            t = int(wrong[0])
            raise DataError(
                f"anonymized tuple {t} has {int(out_degree[t])} edges, not k={k} "
                f"(the graph must be exactly k-regular); {_HINT}"
            )
        # Sort by (anonymized, self edge first, original) so each row starts with its self edge.
        not_self = (original != anonymized).astype(np.int64)
        order = np.lexsort((original, not_self, anonymized))
        cover = original[order].reshape(n, k)
        return cls(cover)


def circulant_graph(n: int, k: int) -> KRegularGraph:
    """The circulant graph ``cover[t, s] = (t + s) mod n``: a valid starting point (k <= n)."""
    _check_nk(n, k)
    cover = (np.arange(n, dtype=np.int64)[:, None] + np.arange(k, dtype=np.int64)[None, :]) % n
    return KRegularGraph(cover)


def clique_graph(groups) -> KRegularGraph:
    """The homogeneous special case: each group of exactly k originals covers itself (a clique).

    ``groups`` is a sequence of equal-size sequences of original ids that partition 0..n-1.
    """
    groups = [np.asarray(g, dtype=np.int64) for g in groups]
    if not groups:
        raise DataError(f"clique_graph needs at least one group; {_HINT}")
    k = groups[0].size
    if any(g.size != k for g in groups):
        raise DataError(f"clique_graph needs groups of equal size k={k}; {_HINT}")
    n = k * len(groups)
    original = np.concatenate([np.tile(g, k) for g in groups])
    anonymized = np.concatenate([np.repeat(g, k) for g in groups])
    return KRegularGraph.from_edges(original, anonymized, n=n, k=k)


def _check_nk(n: int, k: int) -> None:
    if not (1 <= k <= n):
        raise DataError(f"k={k} must be between 1 and the number of tuples n={n}; {_HINT}")


def validate_cover(cover: np.ndarray) -> None:
    """Raise DataError unless ``cover`` is an exactly k-regular graph with self edges in slot 0."""
    if cover.ndim != 2:
        raise DataError(f"cover must be a 2-D (n, k) array, got {cover.ndim}-D; {_HINT}")
    n, k = cover.shape
    _check_nk(n, k)
    if cover.min() < 0 or cover.max() >= n:
        bad = np.argwhere((cover < 0) | (cover >= n))[0]
        raise DataError(
            f"anonymized tuple {int(bad[0])} covers original {int(cover[tuple(bad)])}, outside "
            f"0..{n - 1}; {_HINT}"
        )
    no_self = np.flatnonzero(cover[:, 0] != np.arange(n))
    if no_self.size:
        t = int(no_self[0])
        raise DataError(
            f"anonymized tuple {t} does not cover its own original {t} in slot 0 (the self edge "
            f"must always be present); {_HINT}"
        )
    ordered = np.sort(cover, axis=1)
    dup_rows = np.flatnonzero((ordered[:, 1:] == ordered[:, :-1]).any(axis=1))
    if dup_rows.size:
        t = int(dup_rows[0])
        row = ordered[t]
        twice = int(row[1:][row[1:] == row[:-1]][0])
        raise DataError(f"anonymized tuple {t} covers original {twice} twice; {_HINT}")
    in_degree = np.bincount(cover.reshape(-1), minlength=n)
    wrong = np.flatnonzero(in_degree != k)
    if wrong.size:
        i = int(wrong[0])
        raise DataError(
            f"original {i} is covered by {int(in_degree[i])} anonymized tuples, not k={k} "
            f"(the graph must be exactly k-regular); {_HINT}"
        )
