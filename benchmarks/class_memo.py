"""The class memo's batch planning (issue #25): ``ClassMemo.plan`` (Numba, engine/methods/generalization/evaluators/
_memo_kernels.py) against its plain-Python twin ``DictClassMemo.plan`` (the dict-based memo the
lattice search used per node before), interleaved in one process.

    .venv/bin/python benchmarks/class_memo.py [--data DIR] [--case KEY ...] [--rounds 4] [--out DIR]

For each case (a ``benchmarks/vs_arx.py`` case key; default the 1,000-record creditcard
t-closeness + k=2 search, 19,271 nodes) the lattice search runs once and the node batches it
evaluates are recorded; then both memos (same capacity as ``Problem``'s) plan the same batches,
round after round with the order alternating, checking that they give the same slots. Prints
the best round of each (ms, us/node) and their ratio; writes class_memo.json to --out
(default benchmarks/results/).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO))

import vs_arx as V  # noqa: E402

from ppdp.engine.methods.generalization.evaluators.class_memo import ClassMemo, DictClassMemo  # noqa: E402
from ppdp.engine.methods.generalization.optimizers import run_optimizer  # noqa: E402
from ppdp.engine.methods.generalization.problem import CLASS_CACHE_BYTES, Problem  # noqa: E402


def recorded_batches(key: str, root: Path, work: Path) -> tuple[list[np.ndarray], int, int, int]:
    """(node batches the case's search evaluates, rows, QIDs, memo capacity)."""
    case = next(c for c in V.CASES if c.key == key)
    ds = V.dataset(root, case.dataset, work)
    if ds is None:
        raise SystemExit(f"no data for {key} under {root}")
    loaded = V.load(ds, ds.sa)
    models = V.ppdp_models(case, ds)
    sa = [ds.sa] if ds.sa and any(m.requirements.sensitive_counts for m in models) else []
    table = V.prepare(loaded, sa, models)
    problem = Problem(table, V.bind(models, table, ds))
    batches: list[np.ndarray] = []
    fused = problem.evaluate_optimal_fused

    def recording(G, **kw):
        batches.append(np.array(G))
        return fused(G, **kw)

    problem.evaluate_optimal_fused = recording  # type: ignore[method-assign]
    run_optimizer(case.optimizer, problem, budget=10**8, params=dict(case.params))
    return batches, table.n_rows, table.n_qids, CLASS_CACHE_BYTES // max(4 * table.n_rows, 1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", help="folder holding arx/ (default: $PPDP_DATA or ../shared/data)")
    ap.add_argument("--case", action="append", help="vs_arx case keys (default creditcard-1000-t0.2828-k2)")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--work", type=Path, default=Path("/tmp/ppdp-vs-arx"))
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    args = ap.parse_args(argv)
    root = V.data_dir(args.data)
    rows = []
    print(f"{'case':<30} {'nodes':>7} {'dict ms':>8} {'numba ms':>9} {'dict us/node':>13} {'numba us/node':>14} {'ratio':>6}")
    for key in args.case or ["creditcard-1000-t0.2828-k2"]:
        batches, n_rows, n_qids, capacity = recorded_batches(key, root, args.work)
        nodes = sum(len(G) for G in batches)
        best = {"dict": np.inf, "numba": np.inf}
        for r in range(args.rounds):
            plans = {}
            for name in (("dict", "numba") if r % 2 == 0 else ("numba", "dict")):
                memo = DictClassMemo(n_qids, capacity) if name == "dict" else ClassMemo(n_rows, n_qids, capacity)
                t0 = time.perf_counter()
                plans[name] = [memo.plan(G) for G in batches]
                best[name] = min(best[name], time.perf_counter() - t0)
            for a, b in zip(plans["dict"], plans["numba"], strict=True):
                assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]), "the memos planned differently"
        row = {"case": key, "nodes": nodes, "batches": len(batches), "capacity": capacity,
               "dict_ms": round(best["dict"] * 1e3, 1), "numba_ms": round(best["numba"] * 1e3, 1),
               "ratio": round(best["numba"] / best["dict"], 4)}
        rows.append(row)
        print(f"{key:<30} {nodes:>7,} {row['dict_ms']:>8,.0f} {row['numba_ms']:>9,.0f} "
              f"{best['dict'] * 1e6 / nodes:>13.1f} {best['numba'] * 1e6 / nodes:>14.1f} {row['ratio']:>6.3f}")
    args.out.mkdir(parents=True, exist_ok=True)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "rounds": args.rounds,
            "load_average": [round(x, 2) for x in os.getloadavg()]}
    (args.out / "class_memo.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    print(f"wrote {args.out / 'class_memo.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
