"""RPI of the iterated local search over k-member and l-greedy (issue #16, the paper's eq. 9).

    .venv/bin/python benchmarks/hetero_search.py [--rows 1000] [--k 5] [--seconds 10]
                                                 [--seeds 3] [--quick]

Instance: the first ``--rows`` rows of engine/data/adult/adult.csv with the QIDs of
benchmarks/hetero_moves.py (age numeric; sex, race, marital-status, education, native-country,
workclass, occupation categorical). For each initial heuristic (k-member, l-greedy), objective
(GCP, SIL) and seed, the initial graph is built (k-member's first tuple and the cluster
conversion are seeded), then ``iterated_local_search`` runs for ``--seconds`` on one core.
RPI = 100 * (initial - LS) / initial (eq. 9), averaged over the seeds. Also reported: the time
to build each initial graph at ``--rows`` and at 10,000 rows (issue #16: under 10 s each), and
a full recomputation check of the final objective. JIT compilation is done before timing.
Results: a table on stdout and benchmarks/results/hetero_search.json.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.hetero_moves import adult_table  # noqa: E402
from ppdp.engine.methods.heterogeneous import initial  # noqa: E402
from ppdp.engine.methods.heterogeneous.ils import iterated_local_search  # noqa: E402
from ppdp.engine.methods.heterogeneous.metrics import gcp, sil  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "hetero_search.json"
HEURISTICS = {
    "k-member": lambda table, k, seed: initial.k_member(table, k, seed=seed),
    "l-greedy": lambda table, k, seed: initial.l_greedy(table, k, seed=seed),
}
FULL = {"gcp": gcp, "sil": sil}


def _warm_up(k: int) -> None:
    table = adult_table(60)
    for build in HEURISTICS.values():
        g = build(table, k, 0)
        for objective in FULL:
            iterated_local_search(table, g, objective=objective, seconds=5, max_evaluations=2000)


def main(argv=None) -> int:
    """Run every configuration, print the table, write the JSON."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1000)
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--seconds", type=float, default=10.0, help="ILS time per run")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="1 s per run, 1 seed")
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    seconds, seeds = (1.0, 1) if args.quick else (args.seconds, args.seeds)
    _warm_up(args.k)
    table = adult_table(args.rows)

    build_times = {}
    big = adult_table(10_000)
    for name, build in HEURISTICS.items():
        t0 = time.perf_counter()
        build(big, args.k, 0)
        build_times[name] = round(time.perf_counter() - t0, 3)
    times = ", ".join(f"{n} {s:.2f} s" for n, s in build_times.items())
    print(f"initial graph build time at 10,000 adult rows, k={args.k}: {times} "
          f"(target < 10 s each)")

    runs = []
    head = (f"{'initial':<9} {'obj':<4} {'seed':>4} {'initial':>9} {'LS':>9} {'RPI %':>7} "
            f"{'evals':>11} {'optima':>6} {'check':>8}")
    print(head)
    print("-" * len(head))
    for name, build in HEURISTICS.items():
        for objective, full in FULL.items():
            for seed in range(seeds):
                start = build(table, args.k, seed)
                r = iterated_local_search(table, start, objective=objective, seconds=seconds,
                                          seed=seed)
                rpi = 100.0 * (r.initial_objective - r.objective) / r.initial_objective
                check = abs(full(table, r.graph) - r.objective)
                runs.append({
                    "initial": name, "objective": objective, "seed": seed,
                    "initial_value": r.initial_objective, "ls_value": r.objective, "rpi": rpi,
                    "evaluations": r.evaluations, "local_optima": r.local_optima,
                    "seconds": round(r.seconds, 3), "full_recompute_diff": check,
                    "history": [list(h) for h in r.history],
                })
                print(f"{name:<9} {objective:<4} {seed:>4} {r.initial_objective:>9.5f} "
                      f"{r.objective:>9.5f} {rpi:>7.2f} {r.evaluations:>11,} "
                      f"{r.local_optima:>6} {check:>8.1e}", flush=True)
    summary = []
    print()
    print(f"mean RPI over {seeds} seed(s), {args.rows} adult rows, k={args.k}, {seconds:g} s "
          f"per run (paper, IPUMS: GCP 5-8 %, SIL 30-54 %)")
    for name in HEURISTICS:
        for objective in FULL:
            rpis = [r["rpi"] for r in runs if r["initial"] == name and r["objective"] == objective]
            summary.append({"initial": name, "objective": objective,
                            "mean_rpi": float(np.mean(rpis)), "min_rpi": float(np.min(rpis))})
            print(f"  LS over {name:<9} {objective.upper()}: {np.mean(rpis):6.2f} % "
                  f"(min {np.min(rpis):.2f} %)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "machine": {"platform": platform.platform(), "python": platform.python_version(),
                    "cpus": os.cpu_count(), "threads": 1},
        "rows": args.rows, "k": args.k, "seconds_per_run": seconds, "seeds": seeds,
        "build_seconds_10000_rows": build_times, "summary": summary, "runs": runs,
    }, indent=2) + "\n")
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
