"""The utility measures over NumPy arrays (engine/utility/measures/) equal, bit for bit, their
per-cell loops (loop_measures.py) on seeded random paired histograms: local recoding to mixed
levels, withheld rows, rows shown at the root in every QID, values outside the hierarchy (the
unavailable-column paths) and heterogeneous values of their own (``extra_values``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from ppdp.engine.core.hierarchy import Hierarchy
from ppdp.engine.utility.base import SUPPRESSED, Cell, Codes, UtilityInput, ordered_sum
from ppdp.engine.utility.measures.ambiguity import ambiguity
from ppdp.engine.utility.measures.granularity import granularity
from ppdp.engine.utility.measures.intensity import intensity
from ppdp.engine.utility.measures.nu_entropy import nu_entropy
from ppdp.engine.utility.measures.record_squared_error import record_squared_error
from ppdp.engine.utility.measures.squared_error import squared_error
from ppdp.engine.utility.measures.sse_sst import sse_sst
from ppdp.engine.utility.measures.td import query_precision, transparency
from ppdp.engine.utility.measures.workload_error import workload_error
from tests.utility import loop_measures as loop

PAIRS = [(granularity, loop.granularity), (intensity, loop.intensity), (nu_entropy, loop.nu_entropy),
         (squared_error, loop.squared_error), (record_squared_error, loop.record_squared_error), (sse_sst, loop.sse_sst),
         (ambiguity, loop.ambiguity), (transparency, loop.transparency), (query_precision, loop.query_precision),
         (lambda inp: workload_error(inp, queries=40), lambda inp: loop.workload_error(inp, queries=40))]


def _hierarchy(rng: np.random.Generator, name: str) -> Hierarchy:
    """Leaves 0..n-1 grouped pairwise, then by fours, ..., a ``*`` root; a group may reuse its
    first leaf's label (a value repeated across levels, as ARX's maps overwrite)."""
    n, height = int(rng.integers(2, 9)), int(rng.integers(1, 4))
    rows = []
    for i in range(n):
        path = [f"{name}{i}"]
        for level in range(1, height):
            group = i >> level
            path.append(f"{name}{group << level}" if rng.random() < 0.2 and i >> level << level == i else f"{name}g{level}.{group}")
        rows.append((*path, SUPPRESSED))
    return Hierarchy(name, tuple(rows))


def _input(seed: int) -> UtilityInput:
    rng = np.random.default_rng(seed)
    q = int(rng.integers(1, 4))
    hs = tuple(_hierarchy(rng, "abc"[i]) for i in range(q))
    extra: list[dict[str, frozenset[str]]] = [{} for _ in hs]
    cells = []
    for _ in range(int(rng.integers(1, 40))):
        rows = [h.rows[int(rng.integers(0, len(h.rows)))] for h in hs]
        inputs = tuple(r[0] if rng.random() > 0.005 else "outside" for r in rows)
        if rng.random() < 0.15:
            outputs = None
        elif rng.random() < 0.1:
            outputs = tuple(r[-1] for r in rows)  # the root everywhere: ARX's suppressed row
        else:
            shown = []
            for j, r in enumerate(rows):
                u = rng.random()
                if u < 0.05:
                    label = f"{{{r[0]}, x}}"  # a value set of its own
                    extra[j][label] = frozenset({r[0], hs[j].rows[0][0]})
                    shown.append(label)
                elif u < 0.06:
                    shown.append("unknown")
                else:
                    shown.append(r[int(rng.integers(0, len(r)))])
            outputs = tuple(shown)
        cells.append(Cell(inputs, outputs, int(rng.integers(1, 50))))
    return UtilityInput(tuple(h.attribute for h in hs), hs, tuple(cells), "heterogeneous", tuple(extra))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b


@pytest.mark.parametrize("seed", range(150))
def test_every_measure_equals_its_loop_bit_for_bit(seed):
    for fast, slow in PAIRS:
        got, want = fast(_input(seed)), slow(_input(seed))
        assert _same(got, want), (seed, fast, got, want)


def test_the_suppressed_mask_is_arx_row_test():
    for seed in range(50):
        inp = _input(seed)
        want = [loop.row_suppressed(c.outputs, inp.shown(c)) for c in inp.cells]
        assert inp.suppressed.tolist() == want


def test_codes_index_the_distinct_values_in_order_of_first_appearance():
    codes = Codes.of(("b", "a", "b", "c", "a"))
    assert codes.values == ("b", "a", "c") and codes.index.tolist() == [0, 1, 0, 2, 1]
    assert codes.get({"a": 1.0}, 7.0).tolist() == [7.0, 1.0, 7.0, 7.0, 1.0]


def test_ordered_sum_adds_left_to_right():
    terms = np.array([1e16, 1.0, -1e16, 1.0])
    total = 0.5
    for t in terms.tolist():
        total += t
    assert ordered_sum(terms, start=0.5) == total and ordered_sum(np.array([])) == 0.0
