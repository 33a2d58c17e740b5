"""Where a small drawn case's time goes inside benchmarks/vs_arx.py's ppdp run, part by part.

    .venv/bin/python benchmarks/small_rows.py [--keys drawn-s1-10,...] [--runs 300]
                                              [--data DIR] [--out benchmarks/results/small_rows]

The drawn family's highest ratios (benchmarks/vs_arx.py ``--drawn``) are adult samples of
1,000-5,000 rows where ARX answers in 2.5-5 ms; there a part of a millisecond decides the ratio.
This runs vs_arx.py's own ``ppdp_run`` (prepare, bind, search: what its ppdp column times) ``--runs``
times per case after 30 untimed ones, ppdp alone (no ARX beside it), with the functions of the
path wrapped by timers, so each part is the code a run executes:

* *read*: the source's rows out of DuckDB (``read_rows``); *encoding*: ``encode_rows``;
  *hierarchies*: ``read_arx_csv`` of every QID (the stat-checked parse cache);
* *problem*: ``Problem(...)`` (evaluator, lookup arrays, oracle plan);
* *search*: the optimizer, of which *class bound* (``class_round`` and ``_class_bounds_small``),
  *evaluations* (the fused kernel ``evaluate_prepared_into``) and *box setup*
  (``BoxBound(...)``, ``prepare_rows``, ``_row_weights``) are kernels or their set-up, and
  *search, rest* is the optimizer's Python around them;
* *rest*: the run's other parts (models bound, the source's facts).

Reported per case: the median whole run and the mean of each part per run (wrappers cost about
a microsecond per call). Outputs: small_rows.json and small_rows.md.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

KEYS = ("drawn-s1-10", "drawn-s1-11", "drawn-s3-11", "drawn-s3-13", "drawn-s1-15")
PARTS = ("read", "encoding", "hierarchies", "problem", "search", "class bound", "evaluations", "box setup",
         "search, rest", "rest")


def timed(totals: Counter, owner: Any, name: str, part: str) -> None:
    """Replace ``owner.name`` by a wrapper adding its wall time to ``totals[part]``."""
    inner = getattr(owner, name)

    @functools.wraps(inner)
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter_ns()
        try:
            return inner(*args, **kwargs)
        finally:
            totals[part] += time.perf_counter_ns() - t0

    setattr(owner, name, wrapper)


def measure(key: str, root: Path, work: Path, runs: int) -> dict[str, Any]:
    import benchmarks.vs_arx as V
    from ppdp.engine.kernels import batch as B
    from ppdp.engine.kernels import classes as K
    from ppdp.engine.methods.generalization.optimizers import bounds as BD
    from ppdp.engine.release.stages import validate as VL

    seed = int(key.split("-")[1][1:])
    case = next(c for c in V.drawn_cases(seed, 17, root) if c.key == key)
    ds = V.dataset(root, case.dataset, work)
    loaded = V.load(ds, ds.sa)
    needs_sa = any(m.requirements.sensitive_counts for m in V.ppdp_models(case, ds))
    sa = [ds.sa] if needs_sa else []
    totals: Counter = Counter()
    wrappers = [(V, "read_rows", "read"), (VL, "encode_rows", "encoding"), (V, "read_arx_csv", "hierarchies"),
                (V, "Problem", "problem"), (V, "run_optimizer", "search"), (BD, "class_round", "class bound"),
                (BD, "_class_bounds_small", "class bound"), (B, "evaluate_prepared_into", "evaluations"),
                (K, "evaluate_optimal_batch", "evaluations"),
                (BD.BoxBound, "__init__", "box setup"), (B, "prepare_rows", "box setup"),
                (BD, "_row_weights", "box setup")]
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in wrappers]
    try:
        for owner, name, part in wrappers:
            timed(totals, owner, name, part)
        for _ in range(30):
            V.ppdp_run(case, loaded, sa, "source")
        totals.clear()
        whole = [V.ppdp_run(case, loaded, sa, "source")[0] for _ in range(runs)]
    finally:
        for owner, name, inner in saved:
            setattr(owner, name, inner)
    per_run = {p: totals[p] / runs / 1e6 for p in PARTS}
    per_run["search, rest"] = per_run["search"] - per_run["class bound"] - per_run["evaluations"] - per_run["box setup"]
    known = sum(per_run[p] for p in ("read", "encoding", "hierarchies", "problem", "search"))
    per_run["rest"] = statistics.fmean(whole) - known
    return {"key": key, "label": case.label, "runs": runs, "whole_median_ms": round(statistics.median(whole), 3),
            "whole_mean_ms": round(statistics.fmean(whole), 3), "parts_ms": {p: round(v, 3) for p, v in per_run.items()}}


def main(argv: list[str] | None = None) -> int:
    import benchmarks.vs_arx as V

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", default=",".join(KEYS), help="drawn case keys, comma-separated")
    ap.add_argument("--runs", type=int, default=300, help="timed runs per case")
    ap.add_argument("--data", help="folder holding arx/ (default: $PPDP_DATA or ../shared/data)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/ppdp-vs-arx"))
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "small_rows")
    args = ap.parse_args(argv)
    root = V.data_dir(args.data)
    rows = [measure(k, root, args.work, args.runs) for k in args.keys.split(",")]
    head = ["case", "whole (median)", *PARTS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        lines.append(f"| {r['key']} | {r['whole_median_ms']:.2f} | "
                     + " | ".join(f"{r['parts_ms'][p]:.2f}" for p in PARTS) + " |")
    table = "\n".join(lines)
    print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    meta = {"commit": V.git_commit(), "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "runs": args.runs}
    (args.out / "small_rows.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    (args.out / "small_rows.md").write_text(f"# Small drawn cases, part by part (ms per run, ppdp alone)\n\n"
                                            f"{json.dumps(meta)}\n\n{table}\n")
    print(f"wrote {args.out / 'small_rows.json'} and {args.out / 'small_rows.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
