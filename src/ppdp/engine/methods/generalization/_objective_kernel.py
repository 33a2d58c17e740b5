"""The objectives' kernels (objectives.py), each one Numba pass per batch next to its
plain-Python twin (tests/search/test_objectives.py): ``share_sums`` (Loss), ``class_scores``
(AECS, discernibility, from the classes of engine/kernels/classes.py), ``k_anonymous_terms``
(every objective under k-anonymity alone, from the classes) and ``pick_nodes`` (the next nodes
to score, with a bound spread up from scored specializations).

``share_sums(G, kept, shares)[i, d]`` = sum over histogram rows r, in row order, of
kept[i, r] * shares[d, G[i, d], r]. The bounds and the scores of objectives.py both go through
it, so a node with nothing suppressed scores its bound bit for bit.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ppdp.engine.kernels import classes as K
from ppdp.engine.kernels.cache import guard

guard(__file__, depends_on=[K])


@njit(cache=True)
def share_sums(G, kept, shares):  # pragma: no cover - compiled; share_sums_twin is the tested twin
    P, D = G.shape
    R = kept.shape[1]
    out = np.zeros((P, D))
    for i in range(P):
        for d in range(D):
            lv = G[i, d]
            acc = 0.0
            for r in range(R):
                acc += kept[i, r] * shares[d, lv, r]
            out[i, d] = acc
    return out


def share_sums_twin(G: np.ndarray, kept: np.ndarray, shares: np.ndarray) -> np.ndarray:
    """``share_sums`` in plain Python (the same sums in the same order)."""
    P, D = G.shape
    out = np.zeros((P, D))
    for i in range(P):
        for d in range(D):
            acc = 0.0
            for r in range(kept.shape[1]):
                acc += float(kept[i, r]) * float(shares[d, G[i, d], r])
            out[i, d] = acc
    return out


# ``class_scores``' kinds (objectives.py ``_ClassBased``)
AECS = 0
DISCERNIBILITY = 1


@njit(cache=True)
def _class_terms(kind, size, kept, m, n, k):  # pragma: no cover - compiled; class_scores_twin is the tested twin
    """(score, bound for the node's generalizations) of one node from its class sizes ``size``
    and the records each class keeps, ``kept`` (docstring of ``class_scores``)."""
    groups = 0
    kept_total = 0
    sq = 0
    dropped = 0
    large = 0
    small_records = 0
    dm_bound = 0
    for c in range(m):
        s = size[c]
        if s <= 0:
            continue
        e = kept[c]
        kept_total += e
        if e > 0:
            groups += 1
        sq += e * e
        dropped += s - e
        if s >= k:
            large += 1
            dm_bound += s * s
        else:
            small_records += s
            dm_bound += s * k
    suppressed = n - float(kept_total)
    if kind == AECS:
        g = float(groups) + (1.0 if suppressed > 0 else 0.0)
        score = n / g if g > 0 else np.inf
        bound = n / (float(large) + float(small_records // k) + 1.0)
    else:
        score = float(sq) + n * float(dropped)
        bound = float(dm_bound)
    return score, bound


@njit(cache=True)
def class_scores(kind, G, ok, codes, gen, n_gen, counts, retained, ids, slots, n, k):  # pragma: no cover - compiled
    """ARX's AECS or discernibility of each node G[i] with ``ok[i]`` (inf elsewhere), kept
    records ``retained[i]``, and a lower bound on the score of every generalization of G[i]
    under k-anonymity's S*(G) (computed for every row). The classes: ``ids[slots[i]]`` (the
    class ids the evaluation of G[i] left in the roll-up memo) when ``slots[i] >= 0``, else
    engine/kernels/classes.py ``classify``; sizes by its ``class_sizes``.

    The bounds (proofs: docs/design/utility.md, "Optimizing for ARX's metrics"), F = G[i], k the
    largest k (1 when k-anonymity is not alone: then they are ARX's bounds from the classes):
    - AECS: N / (L + floor(S / k) + 1), L the classes of F of >= k records, S the records of the
      others: a kept class of a generalization holds a large class of F or >= k records of
      small ones, and the suppressed records add one group at most.
    - discernibility: sum over F's classes of |e| * max(|e|, k): a record costs N when
      suppressed and the size of its class when kept, which is >= k and >= its class in F.
    """
    P = G.shape[0]
    score = np.full(P, np.inf)
    bound = np.full(P, -np.inf)
    active = counts > 0
    for i in range(P):
        s = slots[i]
        if s >= 0:
            cls = ids[s]
            m = 0
            for h in range(cls.shape[0]):
                if cls[h] + 1 > m:
                    m = cls[h] + 1
        else:
            cls, m = K.classify(G[i], codes, gen, n_gen, active)
        size = K.class_sizes(cls, m, counts)
        kept = K.class_sizes(cls, m, retained[i])
        sc, b = _class_terms(kind, size, kept, m, n, k)
        bound[i] = b
        if ok[i]:
            score[i] = sc
    return score, bound


def class_scores_twin(kind: int, G: np.ndarray, ok: np.ndarray, codes: np.ndarray, gen: np.ndarray,
                      n_gen: np.ndarray, counts: np.ndarray, retained: np.ndarray, n: float,
                      k: int) -> tuple[np.ndarray, np.ndarray]:
    """``class_scores`` in plain Python, each node classified from its generalized codes."""
    P = G.shape[0]
    score = np.full(P, np.inf)
    bound = np.full(P, -np.inf)
    for i in range(P):
        classes: dict[tuple[int, ...], list[int]] = {}
        for h in range(codes.shape[0]):
            if counts[h] <= 0:
                continue
            key = tuple(int(gen[q, G[i, q], codes[h, q]]) for q in range(codes.shape[1]))
            e = classes.setdefault(key, [0, 0])
            e[0] += int(counts[h])
            e[1] += int(retained[i, h])
        sizes = [v[0] for v in classes.values()]
        kept = [v[1] for v in classes.values()]
        suppressed = n - float(sum(kept))
        if kind == AECS:
            groups = float(sum(1 for e in kept if e > 0)) + (1.0 if suppressed > 0 else 0.0)
            sc = n / groups if groups > 0 else math.inf
            large = sum(1 for s in sizes if s >= k)
            small = sum(s for s in sizes if s < k)
            b = n / (float(large) + float(small // k) + 1.0)
        else:
            sc = float(sum(e * e for e in kept)) + n * float(sum(s - e for s, e in zip(sizes, kept, strict=True)))
            b = float(sum(s * max(s, k) for s in sizes))
        bound[i] = b
        if ok[i]:
            score[i] = sc
    return score, bound


LOSS = 2
LEVELS = 3  # an objective of the levels alone: only the records suppressed


@njit(cache=True)
def k_anonymous_terms(kind, G, codes, gen, n_gen, counts, ids, slots, k, n, shares):  # pragma: no cover - compiled
    """Each node G[i] under k-anonymity's S*(G) (the classes of >= k records kept, the others
    suppressed), from its classes alone (no retained matrix): the records suppressed, and

    - AECS / DISCERNIBILITY: the score and the bound for its generalizations (``class_scores``);
    - LOSS: ``sums[i, d]`` = ``share_sums`` of the kept rows (the same sums in the same order);
    - LEVELS: nothing else.

    The classes: ``ids[slots[i]]`` when ``slots[i] >= 0`` (the roll-up memo), else
    engine/kernels/classes.py ``classify``; sizes by its ``class_sizes``."""
    P, D = G.shape
    H = codes.shape[0]
    suppressed = np.zeros(P)
    score = np.full(P, np.inf)
    bound = np.full(P, -np.inf)
    sums = np.zeros((P, D))
    active = counts > 0
    kr = np.zeros(H)  # LOSS: each row's records kept
    for i in range(P):
        s = slots[i]
        if s >= 0:
            cls = ids[s]
            m = 0
            for h in range(H):
                if cls[h] + 1 > m:
                    m = cls[h] + 1
        else:
            cls, m = K.classify(G[i], codes, gen, n_gen, active)
        size = K.class_sizes(cls, m, counts)
        kept = np.zeros(m, dtype=np.int64)
        kept_total = 0
        for c in range(m):
            if size[c] >= k:
                kept[c] = size[c]
                kept_total += size[c]
        suppressed[i] = n - float(kept_total)
        if kind == AECS or kind == DISCERNIBILITY:
            score[i], bound[i] = _class_terms(kind, size, kept, m, n, k)
        elif kind == LOSS:
            for h in range(H):
                c = cls[h]
                kr[h] = float(counts[h]) if c >= 0 and size[c] >= k else 0.0
            for d in range(D):
                lv = G[i, d]
                acc = 0.0
                for h in range(H):
                    acc += kr[h] * shares[d, lv, h]
                sums[i, d] = acc
    return suppressed, score, bound, sums


def k_anonymous_terms_twin(kind: int, G: np.ndarray, codes: np.ndarray, gen: np.ndarray, n_gen: np.ndarray,
                           counts: np.ndarray, k: int, n: float,
                           shares: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``k_anonymous_terms`` in plain Python: S*(G) as retained counts, then ``class_scores_twin``
    and ``share_sums_twin``."""
    P, D = G.shape
    retained = np.zeros((P, codes.shape[0]), dtype=np.int64)
    for i in range(P):
        size: dict[tuple[int, ...], int] = {}
        keys = [tuple(int(gen[q, G[i, q], codes[h, q]]) for q in range(codes.shape[1])) for h in range(codes.shape[0])]
        for h, key in enumerate(keys):
            if counts[h] > 0:
                size[key] = size.get(key, 0) + int(counts[h])
        for h, key in enumerate(keys):
            retained[i, h] = counts[h] if counts[h] > 0 and size[key] >= k else 0
    suppressed = n - retained.sum(axis=1).astype(np.float64)
    score = np.full(P, np.inf)
    bound = np.full(P, -np.inf)
    sums = np.zeros((P, D))
    if kind in (AECS, DISCERNIBILITY):
        score, bound = class_scores_twin(kind, G, np.ones(P, dtype=np.bool_), codes, gen, n_gen, counts, retained, n, k)
    elif kind == LOSS:
        sums = share_sums_twin(G, retained.astype(np.float64), shares)
    return suppressed, score, bound, sums


@njit(cache=True)
def pick_nodes(order, pos, want, bounds, best, tags, up_out, use_up, nodes, strides):  # pragma: no cover - compiled
    """The next nodes to score, from ``order[pos:]`` (objectives.search): stops before the first
    node whose bound is >= ``best`` (then ``stopped``), or at ``want`` nodes; skips the nodes
    tagged not anonymous (``tags`` 2) and, with ``use_up``, those whose bound from scored
    specializations is >= ``best``. That bound, ``up_out``, is spread one step up at a time:
    a node's incoming bound is the largest ``up_out`` of its immediate predecessors (node
    minus one level in one QID, ``strides`` in lattice order), written to ``up_out`` here and
    raised with its own bound once scored (the nodes come in level-sum order, so the
    predecessors of a node come before it). Returns (picked, new pos, stopped)."""
    picked = np.empty(want, dtype=np.int64)
    n = 0
    stopped = False
    D = nodes.shape[1]
    while pos < order.shape[0] and n < want:
        i = order[pos]
        if best <= bounds[i]:
            stopped = True
            break
        skip = tags[i] == 2
        if use_up:
            up_in = -np.inf
            for d in range(D):
                if nodes[i, d] > 0:
                    v = up_out[i - strides[d]]
                    if v > up_in:
                        up_in = v
            if up_in > up_out[i]:
                up_out[i] = up_in
            if up_out[i] >= best:
                skip = True
        if not skip:
            picked[n] = i
            n += 1
        pos += 1
    return picked[:n], pos, stopped


def pick_nodes_twin(order: np.ndarray, pos: int, want: int, bounds: np.ndarray, best: float, tags: np.ndarray,
                    up_out: np.ndarray, use_up: bool, nodes: np.ndarray,
                    strides: np.ndarray) -> tuple[np.ndarray, int, bool]:
    """``pick_nodes`` in plain Python."""
    picked: list[int] = []
    while pos < len(order) and len(picked) < want:
        i = int(order[pos])
        if best <= bounds[i]:
            return np.array(picked, dtype=np.int64), pos, True
        skip = bool(tags[i] == 2)
        if use_up:
            preds = [up_out[i - int(strides[d])] for d in range(nodes.shape[1]) if nodes[i, d] > 0]
            up_out[i] = max([up_out[i], *preds])
            skip = skip or up_out[i] >= best
        if not skip:
            picked.append(i)
        pos += 1
    return np.array(picked, dtype=np.int64), pos, False


@njit(cache=True)
def upward_closure(seed, nodes, strides):  # pragma: no cover - compiled; upward_closure_twin is the tested twin
    """flags[j]: some node i <= nodes[j] (componentwise) has ``seed[i]``. One pass in the
    lattice's order (last QID fastest): a node's immediate predecessors come before it."""
    L, D = nodes.shape
    flags = seed.copy()
    for j in range(L):
        if flags[j]:
            continue
        for d in range(D):
            if nodes[j, d] > 0 and flags[j - strides[d]]:
                flags[j] = True
                break
    return flags


def upward_closure_twin(seed: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """``upward_closure`` by brute force over every pair of nodes."""
    flags = np.zeros(len(nodes), dtype=np.bool_)
    for g in nodes[seed]:
        flags |= np.all(nodes >= g[None, :], axis=1)
    return flags
