"""The objective search's two flows under k-anonymity alone within a limit, side by side: a node of
unknown state probed before it is scored (``objectives.PROBE_FIRST``, the product's flow from
``PROBE_FIRST_ROWS`` histogram rows) against every picked node scored first.

    .venv/bin/python benchmarks/probe_first.py [--data DIR] [--datasets adult,fars,...] [--reps 3]
                                              [--out benchmarks/results/probe_first]

Each case (data set x k x limit x objective) runs both flows in this process, back to back and
alternating which goes first, ``--reps`` times each after one untimed round; the threshold is set to
0 so that small tables take the probe-first flow too. Prints one row per case: whether the two
results are the same (node, kept records, TD, objective value, certification), nodes evaluated
and median ms of each; writes ``<out>/<commit>.json``. The data sets are benchmarks/vs_arx.py's
(``--data``: the folder holding arx/).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
OBJECTIVES = ["loss", "nu-entropy", "precision", "height", "aecs", "discernibility"]


def _vs_arx():
    spec = importlib.util.spec_from_file_location("vs_arx", REPO / "benchmarks" / "vs_arx.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["vs_arx"] = module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", help="folder holding arx/ (default: $PPDP_DATA or ../shared/data)")
    ap.add_argument("--datasets", default="adult,fars,mach2019-1000,creditcard-5000")
    ap.add_argument("--ks", default="5,10")
    ap.add_argument("--limits", default="0.02,0.05")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "probe_first")
    ap.add_argument("--work", type=Path, default=Path("/tmp/ppdp-vs-arx"))
    args = ap.parse_args(argv)

    V = _vs_arx()
    from ppdp.engine.methods.generalization import objectives as O
    from ppdp.engine.privacy import build_model
    from ppdp.engine.privacy.base import ModelContext
    from ppdp.process_heap import keep_freed_memory

    keep_freed_memory()  # as a release run does
    O.PROBE_FIRST_ROWS = 0
    root = V.data_dir(args.data)
    rows = []
    print("| data set | k | limit | objective | same | nodes (probe first) | nodes (score first) | ms (probe first) "
          "| ms (score first) | histogram rows |")
    print("|---|---:|---:|---|---|---:|---:|---:|---:|---:|")
    for key in args.datasets.split(","):
        ds = V.dataset(root, key, args.work)
        if ds is None:
            print(f"| {key} | | | | data not found under {root} | | | | | |")
            continue
        table = V.prepare(V.load(ds, None), [], [])
        context = ModelContext(table.sensitive, table.sa_values, ".", None, int(table.n_records))
        for k in (int(x) for x in args.ks.split(",")):
            for limit in (float(x) for x in args.limits.split(",")):
                for objective in OBJECTIVES:
                    results, times = {}, {True: [], False: []}
                    for rep in range(args.reps + 1):
                        for first in ((True, False) if rep % 2 == 0 else (False, True)):
                            O.PROBE_FIRST = first
                            problem = V.Problem(table, [build_model("k-anonymity", {"k": k}).bind(context)])
                            t0 = time.perf_counter()
                            results[first] = O.search(problem, objective, budget=10**8, optimizer="flash",
                                                      params={"suppression_limit": limit})
                            if rep:  # the first round untimed (kernels loaded, caches warm)
                                times[first].append((time.perf_counter() - t0) * 1000.0)
                    a, b = results[True], results[False]
                    same = (np.array_equal(a.g, b.g) and np.array_equal(a.retained, b.retained) and a.td == b.td
                            and a.info["objective_value"] == b.info["objective_value"] and a.certified == b.certified)
                    row = {"dataset": key, "k": k, "limit": limit, "objective": objective, "same": bool(same),
                           "certified": bool(a.certified), "nodes_probe_first": a.info["nodes_evaluated"],
                           "nodes_score_first": b.info["nodes_evaluated"],
                           "ms_probe_first": round(statistics.median(times[True]), 1),
                           "ms_score_first": round(statistics.median(times[False]), 1), "histogram_rows": int(table.n_rows)}
                    rows.append(row)
                    print(f"| {key} | {k} | {limit:g} | {objective} | {'same' if same else 'DIFFERENT'} | "
                          f"{row['nodes_probe_first']:,} | {row['nodes_score_first']:,} | {row['ms_probe_first']:,.1f} | "
                          f"{row['ms_score_first']:,.1f} | {row['histogram_rows']:,} |", flush=True)
    O.PROBE_FIRST = True
    commit = V.git_commit()
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"{commit}.json"
    out.write_text(json.dumps({"commit": commit, "reps": args.reps, "rows": rows}, indent=1) + "\n")
    different = sum(not r["same"] for r in rows)
    print(f"\n{len(rows)} cases, {different} with different results; wrote {out}")
    return 1 if different else 0


if __name__ == "__main__":
    raise SystemExit(main())
