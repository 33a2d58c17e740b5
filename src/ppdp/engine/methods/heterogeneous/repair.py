"""Local repair of a k-regular graph after the source changed (docs/design/paper_notes.md §7).

A later version of a heterogeneous release starts from the previous version's graph instead of
starting over, so that most published tuples keep their edges (and their generalizations move
only where the data moved), then the iterated local search runs for the budget from there.

* Modified tuples keep their edges; their new QID values change the generalizations of the
  anonymized tuples covering them (recomputed from the cover and the current values).
* Deleted tuples: their node pair (i, i') goes. Every anonymized tuple that covered a deleted
  original lost a slot, and every original covered by a deleted anonymized tuple lost a cover;
  the two deficits are equal in total (each is k per deleted pair minus the edges among deleted
  pairs). They are re-paired directly (a needy row takes the nearest needy original it does not
  hold yet) and, when only duplicates are left, by a swap with an existing edge (below).
* Inserted tuples: the self edge (i, i'), then k-1 swaps with existing edges (o, c') (o != c):
  (o, c') becomes (o, i') and (i, c'), 2-opt style. Each swap gives row i' one more original
  and original i one more cover and leaves every other degree as it was.

The general swap, for a row ``a`` lacking a slot and an original ``b`` lacking a cover that
``a`` already holds: take an edge (o, c') with o not in row a, b not in row c, o != c, c != a;
row c gives o to row a and takes b. Degrees: a +1, b +1, every other node unchanged, and slot 0
(the self edge) is never touched. Originals ``o`` are tried nearest to ``a`` first and rows
``c`` nearest to ``b`` first, so the repaired generalizations stay small before the search.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ppdp.engine.methods.heterogeneous.graph import KRegularGraph
from ppdp.engine.methods.heterogeneous.metrics import QidTable
from ppdp.errors import DataError


@dataclass(frozen=True, eq=False)
class RepairResult:
    """The repaired graph over ``keys`` (index order) and what the repair did."""

    graph: KRegularGraph
    kept: int  # tuples present in both graphs
    inserted: int
    deleted: int
    direct_edges: int  # deficits paired directly
    swaps: int  # swaps with existing edges


class RepairError(DataError):
    """The local repair found no valid swap (tiny or degenerate instances)."""


def _features(table: QidTable) -> tuple[np.ndarray, np.ndarray]:
    num = np.asarray(table.numeric, dtype=np.float64)
    span = num.max(axis=0) - num.min(axis=0) if num.shape[0] else np.zeros(num.shape[1])
    span[span == 0] = 1.0
    return num / span, np.asarray(table.categorical)


def repair_graph(previous: Mapping[str, Sequence[str]], keys: Sequence[str], table: QidTable, k: int) -> RepairResult:
    """Repair ``previous`` (anonymized key -> the original keys it covers, any order) into a
    k-regular graph over ``keys`` (with ``table`` their current QIDs, same order).

    Keys of ``previous`` not in ``keys`` are deleted; keys not in ``previous`` are inserted.
    Deterministic. Raises RepairError when no valid swap exists (callers start over then).
    """
    n = len(keys)
    if n < k:
        raise DataError(f"{n} tuples, fewer than k = {k}; hint: the release needs at least k records.")
    index = {key: i for i, key in enumerate(keys)}
    rows: list[list[int]] = []
    kept = 0
    for i, key in enumerate(keys):
        row = [i]
        if key in previous:
            kept += 1
            row += [index[o] for o in previous[key] if o != key and o in index]
            if len(row) > k or len(set(row)) != len(row):
                raise DataError(f"the stored graph gives anonymized tuple {key!r} {len(row)} distinct edges, not k = {k}; "
                                "hint: the private state of the previous version is damaged, publish under a new name.")
        rows.append(row)
    holders: list[set[int]] = [set() for _ in range(n)]
    for t, row in enumerate(rows):
        for o in row:
            holders[o].add(t)
    row_need = np.array([k - len(r) for r in rows], dtype=np.int64)
    orig_need = np.array([k - len(h) for h in holders], dtype=np.int64)
    if row_need.sum() != orig_need.sum() or (orig_need < 0).any():
        raise DataError("the stored graph is not k-regular on its surviving tuples; hint: the private state of the previous "
                        "version is damaged, publish under a new output name.")
    num, cat = _features(table)

    def distance(i: int) -> np.ndarray:
        return np.abs(num - num[i]).sum(axis=1) + (cat != cat[i]).sum(axis=1)

    direct = swaps = 0
    for a in map(int, np.flatnonzero(row_need > 0)):  # needy rows take the nearest needy originals they lack
        if row_need[a] == 0:
            continue
        for b in np.argsort(distance(a), kind="stable"):
            if row_need[a] == 0:
                break
            b = int(b)
            if orig_need[b] > 0 and a not in holders[b]:
                rows[a].append(b)
                holders[b].add(a)
                row_need[a] -= 1
                orig_need[b] -= 1
                direct += 1
    while row_need.sum():
        a = int(np.flatnonzero(row_need > 0)[0])
        needy = [int(b) for b in np.flatnonzero(orig_need > 0)]
        free = [b for b in needy if a not in holders[b]]
        if free:  # possible after earlier swaps moved edges around
            rows[a].append(free[0])
            holders[free[0]].add(a)
            row_need[a] -= 1
            orig_need[free[0]] -= 1
            direct += 1
            continue
        b = needy[0]  # every needy original is already in row a: swap with an existing edge
        da, db = distance(a), distance(b)
        in_a = set(rows[a])
        done = False
        for o in np.argsort(da, kind="stable"):
            o = int(o)
            if o in in_a:
                continue
            for c in sorted(holders[o], key=lambda t: (db[t], t)):
                if c == a or c == o or c in holders[b]:
                    continue
                rows[c][rows[c].index(o)] = b
                holders[o].discard(c)
                holders[b].add(c)
                rows[a].append(o)
                holders[o].add(a)
                row_need[a] -= 1
                orig_need[b] -= 1
                swaps += 1
                done = True
                break
            if done:
                break
        if not done:
            raise RepairError(f"no valid swap gives anonymized tuple {keys[a]!r} its k = {k} edges; hint: start over.")
    graph = KRegularGraph(np.array(rows, dtype=np.int64))
    return RepairResult(graph, kept, n - kept, len(set(previous) - set(index)), direct, swaps)
