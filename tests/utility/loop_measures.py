"""The utility measures as per-cell loops over the paired histogram: the plain-Python twin of the
NumPy measures of engine/utility/measures/ (the form they had before), for test_measure_arrays.py."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ppdp.engine.utility.base import UtilityInput, column_quality, row_quality
from ppdp.engine.utility.measures.workload_error import QUERIES, SEED, random_workload


def row_suppressed(cell_outputs: tuple[str, ...] | None, shown: tuple[str, ...]) -> bool:
    if cell_outputs is None:
        return True
    return all(shown[i - 1] == shown[i] for i in range(1, len(shown)))


def granularity(inp: UtilityInput) -> dict[str, Any]:
    arx = inp.arx
    result = [0.0] * len(inp.columns)
    for cell in inp.cells:
        shown = inp.shown(cell)
        suppressed = row_suppressed(cell.outputs, shown)
        for i, h in enumerate(arx):
            result[i] += cell.count * (1.0 if suppressed else h.share(shown[i]))
    n = float(inp.rows)
    loss = [r / n for r in result]
    out = column_quality(inp.columns, [1.0 / h.domain if h.domain else 0.0 for h in arx], loss, [1.0] * len(arx))
    return out | {"loss": sum(loss) / len(loss)}


def intensity(inp: UtilityInput) -> dict[str, Any]:
    arx = inp.arx
    result = [0.0] * len(inp.columns)
    for cell in inp.cells:
        shown = inp.shown(cell)
        suppressed = row_suppressed(cell.outputs, shown)
        for i, h in enumerate(arx):
            p = 1.0 if suppressed else h.precision.get(shown[i], 1.0)
            result[i] += cell.count * p
    n = float(inp.rows)
    return column_quality(inp.columns, [0.0] * len(arx), [r / n for r in result], [1.0] * len(arx))


def _entropy_column(inp: UtilityInput, i: int) -> float:
    h = inp.arx[i]
    gen = h.generalize
    # (input value, level of the published value, rows) per cell
    pairs = [(c.inputs[i], h.first_level[inp.shown(c)[i]], c.count) for c in inp.cells]
    levels = sorted({lv for _, lv, _ in pairs})
    result = 0.0
    for index, current in enumerate(levels):
        previous = levels[index - 1] if index > 0 else current
        live = [(v, n) for v, lv, n in pairs if lv >= current]
        before: dict[str, float] = {}
        after: dict[str, float] = {}
        for v, n in live:
            a = v if index == 0 else gen[previous][v]
            before[a] = before.get(a, 0.0) + n
            b = gen[current][v]
            after[b] = after.get(b, 0.0) + n
        for v, n in live:
            a = v if index == 0 else gen[previous][v]
            result += n * math.log2(before[a] / after[gen[current][v]])
    return -result


def _maximum(inp: UtilityInput, i: int) -> float:
    freq: dict[str, float] = {}
    for c in inp.cells:
        freq[c.inputs[i]] = freq.get(c.inputs[i], 0.0) + c.count
    n = float(inp.rows)
    return -sum(f * math.log2(f / n) for f in freq.values())


def nu_entropy(inp: UtilityInput) -> dict[str, Any]:
    result, maximum = [], []
    for i in range(len(inp.columns)):
        try:
            result.append(_entropy_column(inp, i))
        except KeyError:  # a value outside the hierarchy: ARX reports the column as unavailable
            result.append(float("nan"))
        maximum.append(_maximum(inp, i))
    out = column_quality(inp.columns, [0.0] * len(result), result, maximum)
    return out | {"entropy": sum(r for r in result if r == r)}  # noqa: PLR0124


def _far(x: float, o1: float, o2: float, sd: float) -> float:
    far = o2 if (o2 - x) > (x - o1) else o1
    t = 0.0 if sd == 0.0 else (x - far) / sd
    return t * t


def record_squared_error(inp: UtilityInput) -> dict[str, Any]:
    arx, q = inp.arx, len(inp.columns)
    try:
        rows = [([h.ordinal[c.inputs[i]] for i, h in enumerate(arx)], [h.ordinal[inp.shown(c)[i]] for i, h in enumerate(arx)],
                 c.count) for c in inp.cells]
    except KeyError:
        return {"value": float("nan")}
    n = float(inp.rows)
    sd, lo, hi = [], [], []
    for i in range(q):
        mean = sum(x[i][0] * k for x, _, k in rows) / n
        sd.append(math.sqrt(sum(k * (x[i][0] - mean) ** 2 for x, _, k in rows) / n))
        lo.append(float(min(min(min(x[i]), min(o[i])) for x, o, _ in rows)))
        hi.append(float(max(max(max(x[i]), max(o[i])) for x, o, _ in rows)))
    real = top = 0.0
    for x, o, k in rows:
        real += k * math.sqrt(sum(_far(x[i][0], o[i][0], o[i][1], sd[i]) for i in range(q)))
        top += k * math.sqrt(sum(_far(x[i][0], lo[i], hi[i], sd[i]) for i in range(q)))
    real, top = real / q / n, top / q / n
    return {"value": row_quality(0.0, real, top), "distance": real}


def _squared_column(inp: UtilityInput, i: int) -> tuple[float, float]:
    h = inp.arx[i]
    ords = [(h.ordinal[c.inputs[i]], h.ordinal[inp.shown(c)[i]], c.count) for c in inp.cells]
    lo = min(min(a) for a, _, _ in ords)
    hi = max(max(a) for a, _, _ in ords)
    result = top = 0.0
    for (x, _), (o1, o2), n in ords:
        cap = max((x - lo) ** 2, (x - hi) ** 2)
        result += n * min(max((x - o1) ** 2, (x - o2) ** 2), cap)
        top += n * cap
    return float(result), float(top)


def squared_error(inp: UtilityInput) -> dict[str, Any]:
    result, maximum = [], []
    for i in range(len(inp.columns)):
        try:
            r, m = _squared_column(inp, i)
        except KeyError:
            r, m = float("nan"), float("nan")
        result.append(r)
        maximum.append(m)
    return column_quality(inp.columns, [0.0] * len(result), result, maximum)


def sse_sst(inp: UtilityInput) -> dict[str, Any]:
    arx, q = inp.arx, len(inp.columns)
    try:
        rows = [([h.ordinal[c.inputs[i]] for i, h in enumerate(arx)], [h.ordinal[inp.shown(c)[i]] for i, h in enumerate(arx)],
                 c.count) for c in inp.cells]
    except KeyError:
        return {"value": float("nan")}
    n = float(inp.rows)
    mid = lambda span: (span[0] + span[1]) / 2.0  # noqa: E731
    centroid = [sum(k * mid(x[i]) for x, _, k in rows) / n for i in range(q)]
    sse = sum(k * sum((mid(x[i]) - mid(o[i])) ** 2 for i in range(q)) for x, o, k in rows)
    sst = sum(k * sum((mid(o[i]) - centroid[i]) ** 2 for i in range(q)) for _, o, k in rows)
    return {"value": row_quality(0.0, sse, sst), "sse": sse, "sst": sst}


def ambiguity(inp: UtilityInput) -> dict[str, Any]:
    arx = inp.arx
    result = 0.0
    top = 1.0
    for h in arx:
        top *= h.domain
    for cell in inp.cells:
        shown = inp.shown(cell)
        prod = 1.0
        for i, h in enumerate(arx):
            prod *= h.share(shown[i]) * h.domain
        result += cell.count * prod
    n = float(inp.rows)
    return {"value": row_quality(n, result, n * top), "ambiguity": result / n}


def transparency(inp: UtilityInput) -> float:
    arx = inp.arx
    total = 0.0
    for cell in inp.cells:
        if cell.outputs is None:
            continue
        total += cell.count * sum(1.0 / h.leaves_under.get(v, h.domain) for h, v in zip(arx, cell.outputs, strict=True))
    return total


def query_precision(inp: UtilityInput) -> float:
    return 100.0 * transparency(inp) / (inp.rows * len(inp.columns))


def workload_error(inp: UtilityInput, *, queries: int = QUERIES, seed: int = SEED) -> float:
    arx = inp.arx
    index = [{r[0]: i for i, r in enumerate(h.rows)} for h in arx]
    cells = inp.cells
    counts = np.array([c.count for c in cells], dtype=np.float64)
    kept = np.array([0.0 if c.outputs is None else c.count for c in cells])
    # per QID: each cell's input leaf index, and the leaves its published value covers
    leaf = [np.array([index[q].get(c.inputs[q], -1) for c in cells]) for q in range(len(arx))]
    # per QID: each cell's published value as an index into that QID's values (withheld: -1),
    # and each value's leaves as a (values, leaves) 0/1 matrix
    value_ix: list[np.ndarray] = []
    member: list[np.ndarray] = []
    for q, h in enumerate(arx):
        values: dict[str, int] = {}
        ix = np.array([-1 if c.outputs is None else values.setdefault(c.outputs[q], len(values)) for c in cells], dtype=np.int64)
        m = np.zeros((len(values) + 1, h.domain))
        for v, j in values.items():
            own = h.extra.get(v)
            for i, r in enumerate(h.rows):
                if (r[0] in own) if own is not None else (v in r):
                    m[j, i] = 1.0
        sizes = m.sum(axis=1)
        m[sizes > 0] /= sizes[sizes > 0, None]
        value_ix.append(np.where(ix < 0, len(values), ix))
        member.append(m)
    errors = np.empty(queries)
    for n, preds in enumerate(random_workload([h.domain for h in arx], queries=queries, seed=seed)):
        true_w = np.ones(len(cells))
        est_w = np.ones(len(cells))
        for q, mask in preds:
            true_w *= np.where(leaf[q] >= 0, mask[np.maximum(leaf[q], 0)], False)
            frac = (member[q] * mask).sum(axis=1)  # share of each value's leaves the predicate holds
            est_w *= frac[value_ix[q]]
        truth = float((true_w * counts).sum())
        estimate = float((est_w * kept).sum())
        errors[n] = abs(estimate - truth) / max(truth, 1.0)
    return float(errors.mean())
