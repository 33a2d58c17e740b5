"""What island worker processes send: migrants on the ring of pipes, reports to the master.

Messages on the critical path are packed by hand: a migrant every epoch (tens of them in a
run that lasts a fraction of a second) and the islands' reports. Pickling dataclasses of small arrays cost more than the
epochs' compute on the ID-DGA instances (benchmarks/islands.py).
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from ppdp.engine.methods.generalization.evaluators import Evaluation
from ppdp.engine.methods.generalization.optimizers.evolutionary.island import (
    EpochReport,
    Individual,
)

# kind: b"I" a migrant follows, b"S" the same migrant as last time, b"N" none (empty island);
# chain; then for b"I": feasible, violation, td, suppressed, len(g), len(s), len(ad).
_MIGRANT = struct.Struct("<cq?ddqIII")


def encode_migrant(best: Individual | None, last: Individual | None, chain: int) -> bytes:
    if best is None:
        return _MIGRANT.pack(b"N", chain, False, 0.0, 0.0, 0, 0, 0, 0)
    if last is not None and same_individual(best, last):
        return _MIGRANT.pack(b"S", chain, False, 0.0, 0.0, 0, 0, 0, 0)
    g = np.ascontiguousarray(best.g, dtype=np.int64)
    ad = np.ascontiguousarray(best.ad, dtype=np.float64)
    head = _MIGRANT.pack(b"I", chain, bool(best.feasible), float(best.violation), float(best.td),
                         int(best.suppressed), len(g), len(best.s), len(ad))
    return b"".join((head, g.tobytes(), np.packbits(best.s).tobytes(), ad.tobytes()))


def decode_migrant(data: bytes, last: Individual | None) -> tuple[Individual | None, int]:
    kind, chain, feasible, violation, td, suppressed, nq, ns, nad = _MIGRANT.unpack_from(data)
    if kind == b"N":
        return None, chain
    if kind == b"S":
        return last, chain
    o = _MIGRANT.size
    g = np.frombuffer(data, np.int64, nq, o).copy()
    o += 8 * nq
    nbytes = (ns + 7) // 8
    s = np.unpackbits(np.frombuffer(data, np.uint8, nbytes, o), count=ns).astype(bool)
    ad = np.frombuffer(data, np.float64, nad, o + nbytes).copy()
    return Individual(g, s, feasible, violation, td, ad, suppressed), chain


def same_individual(a: Individual, b: Individual) -> bool:
    # Bytes of equal dtypes and shapes (both come from one island's arrays): cheaper than
    # np.array_equal on every epoch's migrant.
    return (a.td == b.td and a.feasible == b.feasible and a.violation == b.violation
            and a.g.shape == b.g.shape and a.s.shape == b.s.shape and a.g.dtype == b.g.dtype
            and a.s.dtype == b.s.dtype and a.g.tobytes() == b.g.tobytes() and a.s.tobytes() == b.s.tobytes())


_REPORT_SCALARS = ("evaluated", "pop_size", "used", "generations", "exhausted", "compute_seconds", "started",
                   "finished")


def pack_reports(reports: list[EpochReport]) -> dict[str, Any]:
    """A batch of one island's reports as a few concatenated arrays (``unpack_reports``)."""
    out: dict[str, Any] = {"index": reports[0].index, "extras": [r.extras for r in reports]}
    for name in _REPORT_SCALARS:
        out[name] = np.array([getattr(r, name) for r in reports])
    imp = [r.improvements for r in reports]
    out["n_imp"] = np.array([0 if x is None else len(x[0]) for x in imp], dtype=np.int64)
    have = [x for x in imp if x is not None]
    out["imp"] = None if not have else (np.concatenate([x[0] for x in have]), np.concatenate([x[1] for x in have]),
                                        np.concatenate([x[2] for x in have]), Evaluation.concat([x[3] for x in have]))
    div = [r.diversity for r in reports]
    have_d = [d for d in div if d is not None]
    if len({d[1].shape[1:] for d in have_d} | {d[2].shape[1:] for d in have_d}) <= 2:
        out["n_div"] = np.array([0 if d is None else len(d[0]) for d in div], dtype=np.int64)
        out["div"] = None if not have_d else tuple(np.concatenate([d[j] for d in have_d]) for j in range(3))
    else:  # the population size changed within the batch (rare): as they are
        out["n_div"], out["div"] = None, div
    return out


def unpack_reports(p: dict[str, Any]) -> list[EpochReport]:
    k = len(p["evaluated"])
    ends_i = np.cumsum(p["n_imp"]).tolist()
    ends_d = np.cumsum(p["n_div"]).tolist() if p["n_div"] is not None else None
    cols = {name: p[name].tolist() for name in _REPORT_SCALARS}
    out = []
    for j in range(k):
        a, b = (ends_i[j - 1] if j else 0), ends_i[j]
        imp = None
        if b > a:
            pos, G, R, ev = p["imp"]
            imp = (pos[a:b], G[a:b], R[a:b], Evaluation(*(getattr(ev, f)[a:b] for f in
                                                             ("ad", "td", "feasible", "violation", "suppressed"))))
        if ends_d is None:
            div = p["div"][j]
        else:
            c, d = (ends_d[j - 1] if j else 0), ends_d[j]
            div = tuple(x[c:d] for x in p["div"]) if d > c else None
        out.append(EpochReport(index=p["index"], improvements=imp, best=None, diversity=div, extras=p["extras"][j],
                               **{name: cols[name][j] for name in _REPORT_SCALARS}))
    return out
