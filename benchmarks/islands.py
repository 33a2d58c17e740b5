"""Island speedup and communication cost of ID-DGA (ID-DGA §6.3-6.4, Fig. 7, Table 5).

    python benchmarks/islands.py            # T1-T16, islands 1/2/4, 5 runs each
    python benchmarks/islands.py --quick    # T1 T8 T16, 1 run each

For each ID-DGA instance (benchmarks/instances.py) ID-DGA runs with 1, 2 and 4 islands (the
``islands`` parameter; population 40 in total, MI = 5, budget nQID * nR, seeds 1000 * i + r).
One island runs in this process (``executor = "local"``: the sequential ID-GA of Table 5); two
and four islands run one worker process per island (``executor = "process"``, spawned). From
the optimizer's ``info`` (engine/optimizers/islands.py):

* RT  = ``run_seconds``: wall time of the run, including starting the worker processes;
* RT-s = RT - ``startup_seconds``: the same without the start-up (the paper's islands are
  long-lived processes on a compute node);
* CT  = ``comm_seconds``: the master's wall time per epoch minus the islands' compute;
* SR  = RT(1 island) / RT(n islands), also on RT-s; CR = CT / RT.

The speedup can only reach the number of cores this machine gives the process (printed and
written to the report); the paper's node had 16 cores. The ID-DGA budgets are tiny (0.05-0.3 s of
compute), so process start-up dominates RT; ``--budget-scale`` multiplies the budgets to show
the compute-bound regime. Output: islands.md and islands.json in benchmarks/results (quick:
benchmarks/results/quick).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import instances as inst_mod  # noqa: E402

from engine.optimizers import OPTIMIZERS, _load_builtin, run_optimizer  # noqa: E402

ISLANDS = (1, 2, 4)


def cores() -> tuple[int, int]:
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return os.cpu_count() or 1, usable


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="instances T1 T8 T16, 1 run")
    ap.add_argument("--runs", type=int, help="runs per (instance, islands) (default 5, quick 1)")
    ap.add_argument("--instances", nargs="+", help="ID-DGA instances (default all; quick T1 T8 T16)")
    ap.add_argument("--budget-scale", type=float, default=1.0, help="factor on nQID * nR (default 1)")
    ap.add_argument("--data", help="data directory (default: $PPDP_DATA or ../shared/data)")
    ap.add_argument("--seed", type=int, default=inst_mod.DEFAULT_SEED, help="instance sampling seed")
    ap.add_argument("--out", help="output folder (default benchmarks/results, quick: benchmarks/results/quick)")
    args = ap.parse_args(argv)
    runs = args.runs or (1 if args.quick else 5)
    wanted = args.instances or (["T1", "T8", "T16"] if args.quick else None)
    out = Path(args.out) if args.out else Path(__file__).resolve().parent / "results" / ("quick" if args.quick else "")
    out.mkdir(parents=True, exist_ok=True)
    n_cpu, usable = cores()
    print(f"cores: {n_cpu} on the machine, {usable} usable by this process", flush=True)
    _load_builtin()
    if "id-dga" not in OPTIMIZERS:
        print("id-dga is not registered (engine/optimizers/id_dga.py missing): nothing to measure", flush=True)
        return 1
    insts = [i for i in inst_mod.build("id-dga", inst_mod.data_dir(args.data), args.seed)
             if wanted is None or i.name in wanted]
    t_start = time.perf_counter()
    rows = []
    for inst in insts:
        number = int(inst.name[1:])  # the same seeds as benchmarks/papers.py
        budget = max(int(round(inst.budget * args.budget_scale)), 1)
        per: dict[int, dict] = {}
        for n in ISLANDS:
            rec = {"rt": [], "startup": [], "ct": [], "cr": [], "td": [], "feasible": []}
            for r in range(runs):
                params = {"islands": n, "executor": "local" if n == 1 else "process"}
                res = run_optimizer("id-dga", inst.problem(), budget=budget, seed=1000 * number + r, params=params)
                info = res.info
                rec["rt"].append(info["run_seconds"])
                rec["startup"].append(info.get("startup_seconds", 0.0))
                rec["ct"].append(info["comm_seconds"])
                rec["cr"].append(info["comm_ratio"])
                rec["td"].append(res.td)
                rec["feasible"].append(res.feasible)
            per[n] = {k: float(np.mean(v)) for k, v in rec.items()} | {"raw": rec}
            print(f"{inst.name} islands={n}: RT {1000 * per[n]['rt']:.1f} ms (start-up {1000 * per[n]['startup']:.1f}"
                  f" ms), CT {1000 * per[n]['ct']:.1f} ms, CR {100 * per[n]['cr']:.2f}%, TD {per[n]['td']:.1f}",
                  flush=True)
        rows.append({"instance": inst.name, "nQID": inst.n_qids, "nR": inst.n_records, "budget": budget, "islands": per})

    wall = time.perf_counter() - t_start
    L = [f"# ID-DGA island speedup and communication ({'quick' if args.quick else 'full'} mode)\n",
         f"Generated by `python benchmarks/islands.py {' '.join(argv or sys.argv[1:])}`; machine with {n_cpu} cores, "
         f"{usable} usable by this process (the paper: 16 cores). {runs} run(s) per cell, budget nQID·nR × "
         f"{args.budget_scale}, population 40, MI = 5; 1 island in-process, 2 and 4 islands one spawned worker process "
         f"each. Total {wall:.0f} s.\n",
         "RT = run time incl. worker start-up; RT-s = RT minus start-up; CT = communication time (master wall time "
         "per epoch minus island compute); SR = RT(1)/RT(n); CR = CT/RT. With more islands than usable cores the "
         "islands time-share the cores, so SR is bounded by the usable core count.\n",
         "## Table 5 layout (ID-GA = 1 island, ID-DGA = 4 islands)\n",
         "| Test instance | ID-GA RT (ms) | ID-DGA RT (ms) | CT (ms) | SR | CR | SR on RT-s |",
         "|---|---|---|---|---|---|---|"]
    for row in rows:
        a, b = row["islands"][1], row["islands"][4]
        sr = a["rt"] / b["rt"] if b["rt"] > 0 else float("nan")
        sr_s = (a["rt"] - a["startup"]) / max(b["rt"] - b["startup"], 1e-12)
        L.append(f"| {row['instance']} | {1000 * a['rt']:.2f} | {1000 * b['rt']:.2f} | {1000 * b['ct']:.2f} | "
                 f"{sr:.2f} | {100 * b['cr']:.2f}% | {sr_s:.2f} |")
    L += ["", "## All island counts\n",
          "| Test instance | nQID | nR | budget | islands | RT (ms) | start-up (ms) | RT-s (ms) | CT (ms) | SR | SR on RT-s | CR |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        base = row["islands"][1]
        for n in ISLANDS:
            c = row["islands"][n]
            rts = c["rt"] - c["startup"]
            L.append(f"| {row['instance']} | {row['nQID']} | {row['nR']} | {row['budget']} | {n} | {1000 * c['rt']:.2f} | "
                     f"{1000 * c['startup']:.2f} | {1000 * rts:.2f} | {1000 * c['ct']:.2f} | {base['rt'] / c['rt']:.2f} | "
                     f"{(base['rt'] - base['startup']) / max(rts, 1e-12):.2f} | {100 * c['cr']:.2f}% |")
    (out / "islands.md").write_text("\n".join(L) + "\n", encoding="utf-8")
    (out / "islands.json").write_text(json.dumps({"cores": n_cpu, "usable_cores": usable, "runs": runs,
                                                  "budget_scale": args.budget_scale, "rows": rows}, indent=1) + "\n",
                                      encoding="utf-8")
    print(f"cores: {n_cpu} on the machine, {usable} usable; wrote {out / 'islands.md'} in {wall:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
