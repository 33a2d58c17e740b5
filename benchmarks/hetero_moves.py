"""Move evaluations per second of engine/methods/heterogeneous's incremental structures (issue #16's speed point).

    .venv/bin/python benchmarks/hetero_moves.py [--seconds 60] [--rows 10000] [--k 5] [--quick]

Issue #16 asks for at least 1,000,000 move evaluations in 60 s at 10,000 tuples, k = 5, on one
core. A Numba loop (one thread) draws random 2-opt moves (t1, s1, t2, s2) uniformly, rejects
the invalid ones (a self-edge slot, or an edge that would be duplicated; counted as "tries"),
evaluates the delta of each valid one with ``swap_delta`` and applies it when it improves the
objective (random first-improvement descent: the applies keep the structures changing as in a
real local search, and they are inside the timing). Reported: valid-move evaluations per
second over the whole run, the projection to 60 s, applied moves, and the objective before and
after. After the run the incremental objective is checked against a full recomputation.

Instances (first ``--rows`` rows or draws, fixed seed):
  adult      adult.csv: age numeric; sex, race, marital-status, education, native-country,
             workclass, occupation categorical (8 QIDs, mostly categorical)
  numeric4   IPUMS-like: 4 small-integer numeric QIDs (FAMUNIT, FAMSIZE, ELDCH, YNGCH ranges)
The initial graph is the circulant graph (cover[t, s] = t + s mod n), the same for every run.
JIT compilation (or cache load) is excluded: each configuration first runs 1,000 evaluations.
Results: a table on stdout and benchmarks/results/hetero_moves.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ppdp.engine.methods.heterogeneous import _incremental_kernels as K  # noqa: E402
from ppdp.engine.methods.heterogeneous.graph import circulant_graph  # noqa: E402
from ppdp.engine.methods.heterogeneous.incremental import IncrementalState, objective_code  # noqa: E402
from ppdp.engine.methods.heterogeneous.metrics import QidTable, gcp, sil  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ADULT = ROOT / "src" / "ppdp" / "engine" / "data" / "adult" / "adult.csv"
OUT = ROOT / "benchmarks" / "results" / "hetero_moves.json"
ADULT_CATEGORICAL = ["sex", "race", "marital-status", "education", "native-country",
                     "workclass", "occupation"]


@njit(cache=True)
def _descent(objective, n_evals, seed, cover, num, cat, cat_off, num_range, cat_domain,
             num_sigma, cat_sigma, mn, mn2, mx, mx2, num_sum, cat_count, cat_hist, cat_max,
             cat_distinct, t_ncp, t_sil, totals):
    np.random.seed(seed)
    n, k = cover.shape
    evals = 0
    applied = 0
    tries = 0
    while evals < n_evals:
        t1 = np.random.randint(n)
        t2 = np.random.randint(n)
        s1 = np.random.randint(1, k)
        s2 = np.random.randint(1, k)
        tries += 1
        if not K.swap_is_valid(cover, t1, s1, t2, s2):
            continue
        delta = K.swap_delta(objective, cover, num, cat, cat_off, num_range, cat_domain,
                             num_sigma, cat_sigma, mn, mn2, mx, mx2, num_sum, cat_count,
                             cat_hist, cat_max, cat_distinct, t_ncp, t_sil, totals,
                             t1, s1, t2, s2)
        evals += 1
        if delta < -1e-12:
            K.apply_swap(cover, num, cat, cat_off, num_range, cat_domain, num_sigma, cat_sigma,
                         mn, mn2, mx, mx2, num_sum, cat_count, cat_hist, cat_max, cat_distinct,
                         t_ncp, t_sil, totals, t1, s1, t2, s2)
            applied += 1
    return evals, applied, tries


def adult_table(rows: int) -> QidTable:
    """The first ``rows`` rows of adult: age numeric, seven categorical QIDs."""
    frame = pl.read_csv(ADULT, separator=";", n_rows=rows)
    codes, sizes = [], []
    for name in ADULT_CATEGORICAL:
        values, inverse = np.unique(frame[name].to_numpy().astype(str), return_inverse=True)
        codes.append(inverse)
        sizes.append(values.size)
    return QidTable(frame["age"].to_numpy().astype(float)[:, None], np.column_stack(codes),
                    tuple(sizes))


def numeric4_table(rows: int, seed: int = 0) -> QidTable:
    """IPUMS-like draws: FAMUNIT 1..10, FAMSIZE 1..15, ELDCH 0..99, YNGCH 0..99."""
    rng = np.random.default_rng(seed)
    numeric = np.column_stack([rng.integers(1, 11, rows), rng.integers(1, 16, rows),
                               rng.integers(0, 100, rows), rng.integers(0, 100, rows)])
    return QidTable(numeric.astype(float), np.zeros((rows, 0), dtype=np.int64), ())


def run(table: QidTable, name: str, *, k: int, objective: str, seconds: float) -> dict:
    state = IncrementalState(table, circulant_graph(table.n, k))
    code = objective_code(objective)
    start_value = state.objective(objective)
    _descent(code, 1_000, 0, *state.arrays)  # JIT compile / cache load, not timed
    chunk = 200_000
    evals = applied = tries = 0
    t0 = time.perf_counter()
    seed = 1
    while True:
        e, a, t = _descent(code, chunk, seed, *state.arrays)
        evals, applied, tries, seed = evals + e, applied + a, tries + t, seed + 1
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            break
    graph = state.graph()
    full = gcp(table, graph) if objective == "gcp" else sil(table, graph)
    rate = evals / elapsed
    return {
        "instance": name, "rows": table.n, "k": k, "qids": table.d, "objective": objective,
        "seconds": round(elapsed, 3), "evaluations": evals, "evals_per_s": round(rate),
        "evals_in_60s": round(rate * 60), "applied": applied, "tries": tries,
        "start": start_value, "end": state.objective(objective),
        "full_recompute_diff": abs(full - state.objective(objective)),
    }


def main(argv=None) -> int:
    """Run the configurations, print the table, write the JSON."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=10_000)
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--seconds", type=float, default=60.0, help="timed run per configuration")
    p.add_argument("--quick", action="store_true", help="2 s per configuration")
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    seconds = 2.0 if args.quick else args.seconds
    instances = {"adult": adult_table(args.rows), "numeric4": numeric4_table(args.rows)}
    results = []
    head = (f"{'instance':<9} {'obj':<4} {'rows':>6} {'k':>3} {'evals':>11} {'evals/s':>10} "
            f"{'in 60 s':>11} {'applied':>8} {'start':>8} {'end':>8} {'check':>8}")
    print(head)
    print("-" * len(head))
    for name, table in instances.items():
        for objective in ("gcp", "sil"):
            r = run(table, name, k=args.k, objective=objective, seconds=seconds)
            results.append(r)
            print(f"{name:<9} {objective:<4} {r['rows']:>6} {r['k']:>3} {r['evaluations']:>11,} "
                  f"{r['evals_per_s']:>10,} {r['evals_in_60s']:>11,} {r['applied']:>8,} "
                  f"{r['start']:>8.4f} {r['end']:>8.4f} {r['full_recompute_diff']:>8.1e}",
                  flush=True)
    target = 1_000_000
    missed = [f"{r['instance']}/{r['objective']}" for r in results if r["evals_in_60s"] < target]
    print(f"target >= {target:,} move evaluations in 60 s on one core: "
          + (f"NOT met by {', '.join(missed)}" if missed else "met by every configuration"))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "machine": {"platform": platform.platform(), "python": platform.python_version(),
                    "cpus": os.cpu_count(), "threads": 1},
        "seconds_per_run": seconds, "target_evals_in_60s": target, "target_met": not missed,
        "results": results,
    }, indent=2) + "\n")
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
