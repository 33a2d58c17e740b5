"""``engine/utility.compute`` (every registered measure over one version's paired histogram):
this tree's against a reference tree's, on adult k = 5, interleaved in one run.

    .venv/bin/python benchmarks/utility_compute.py [--base /tmp/utilfast-base/src] [--rounds 5]
                                                   [--rows 0] [--data ADULT_DIR] [--out benchmarks/results/utility]

Publishes adult's 8 QIDs (``--rows``: the first rows only; 0: all 30,162) as a k = 5 release
(DuckDB, lattice, no suppression limit) and keeps the ``UtilityInput`` its publish stage
measured, as plain data. Then each round runs one fresh process per tree (``--base``: the
``src`` of a git worktree of the reference commit, e.g. ``git worktree add /tmp/utilfast-base
main``; this tree's ``src``), alternating which goes first; a process times ``compute`` on three
freshly built inputs (the per-input arrays are part of the cost) and keeps the fastest. Reported:
the median over rounds of each tree, the ratio reference / this, and the largest relative
difference of each measure's values between the two trees.

Outputs: benchmarks/results/utility/utility_compute.json and .md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
QIDS = ["age", "education", "marital-status", "native-country", "occupation", "race", "sex", "workclass"]


def capture(work: Path, data: Path, rows: int) -> Path:
    """Publish adult k = 5 with this tree and keep the input its utility stage measured."""
    sys.path.insert(0, str(REPO / "src"))
    import duckdb

    import ppdp.engine.utility as utility
    from ppdp.engine.core.spec import load_spec
    from ppdp.engine.release.run import run_release

    db = work / "adult.duckdb"
    con = duckdb.connect(str(db))
    cols = ", ".join(f'"{q}"' for q in QIDS)
    limit = f"LIMIT {rows}" if rows else ""
    con.execute(f"CREATE TABLE adult AS SELECT CAST(row_number() OVER () AS BIGINT) AS id, {cols} "
                f"FROM read_csv(?, delim=';', header=true, all_varchar=true) {limit}", [str(data / "adult.csv")])
    con.close()
    lines = [f'[source]\ndatabase = "duckdb://{db}"\ntable = "adult"\nkey = "id"\n']
    for q in QIDS:
        lines.append(f'[[quasi_identifiers]]\ncolumn = "{q}"\nhierarchy = "{data / f"adult_hierarchy_{q}.csv"}"\n')
    lines.append('[[privacy.models]]\nname = "k-anonymity"\nk = 5\n')
    lines.append('[optimizer]\nname = "lattice"\nbudget = 100000\nseed = 1\n')
    lines.append('[output]\nschema = "published"\nname = "adult"\n')
    (work / "adult.toml").write_text("\n".join(lines))
    seen: list[dict[str, Any]] = []
    measure = utility.compute

    def keep(inp: Any, *, relation: str = "") -> Any:
        seen.append({"columns": inp.columns, "hierarchies": [(h.attribute, h.rows) for h in inp.hierarchies],
                     "cells": [(c.inputs, c.outputs, c.count) for c in inp.cells], "method": inp.method,
                     "extra": [dict(e) for e in inp.extra_values]})
        return measure(inp, relation=relation)

    utility.compute = keep
    try:
        run_release(load_spec(work / "adult.toml"), progress=False)
    finally:
        utility.compute = measure
    path = work / "input.pkl"
    path.write_bytes(pickle.dumps(seen[-1]))
    return path


def worker(path: Path, tries: int) -> None:
    """In a process whose PYTHONPATH is one tree's src: the fastest of ``tries`` timed
    ``compute`` calls, each on a freshly built input, and the measures' values, as JSON."""
    from ppdp.engine.core.hierarchy import Hierarchy
    from ppdp.engine.utility import compute
    from ppdp.engine.utility.base import Cell, UtilityInput

    d = pickle.loads(path.read_bytes())
    best, values = math.inf, None
    for _ in range(tries):
        hs = tuple(Hierarchy(a, tuple(map(tuple, rows))) for a, rows in d["hierarchies"])
        inp = UtilityInput(tuple(d["columns"]), hs, tuple(Cell(i, o, n) for i, o, n in d["cells"]), d["method"],
                           tuple(d["extra"]) if d["extra"] else ())
        t0 = time.perf_counter()
        out = compute(inp)
        best = min(best, time.perf_counter() - t0)
        values = dict(out.measures)
    print(json.dumps({"seconds": best, "cells": len(d["cells"]), "values": values}))


def run_worker(src: Path, path: Path) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(src))
    done = subprocess.run([sys.executable, __file__, "--worker", str(path)], check=True, env=env, capture_output=True, text=True)
    return json.loads(done.stdout)


def flatten(value: Any, prefix: str = "") -> dict[str, float]:
    if isinstance(value, dict):
        return {k: v for key, sub in value.items() for k, v in flatten(sub, f"{prefix}.{key}" if prefix else key).items()}
    return {prefix: float("nan") if value is None else float(value)}


def max_relative(a: Any, b: Any) -> float:
    """The largest relative difference between two measure values (NaN on both sides: equal)."""
    fa, fb = flatten(a), flatten(b)
    if fa.keys() != fb.keys():
        return math.inf
    worst = 0.0
    for k in fa:
        x, y = fa[k], fb[k]
        if math.isnan(x) and math.isnan(y) or x == y:
            continue
        worst = max(worst, abs(x - y) / max(abs(x), abs(y)) if not (math.isnan(x) or math.isnan(y)) else math.inf)
    return worst


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", type=Path, default=Path("/tmp/utilfast-base/src"), help="the reference tree's src")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--rows", type=int, default=0, help="adult's first rows only (0: all)")
    ap.add_argument("--data", default=str(REPO / "src" / "ppdp" / "engine" / "data" / "adult"),
                    help="a folder holding adult.csv and adult_hierarchy_<qid>.csv")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "utility"))
    ap.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker is not None:
        worker(args.worker, tries=3)
        return 0
    if not (args.base / "ppdp").is_dir():
        print(f"--base {args.base} holds no ppdp package (make a worktree of the reference commit).", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="utility-compute-"))
    path = capture(work, Path(args.data), args.rows)
    trees = {"reference": args.base, "this": REPO / "src"}
    times: dict[str, list[float]] = {k: [] for k in trees}
    values: dict[str, Any] = {}
    for r in range(args.rounds):
        for name in (("reference", "this") if r % 2 == 0 else ("this", "reference")):
            got = run_worker(trees[name], path)
            times[name].append(got["seconds"])
            values[name] = got["values"]
            print(f"round {r} {name:9} {got['seconds']:.3f} s ({got['cells']:,} cells)", flush=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    diff = {m: max_relative(values["reference"][m], values["this"][m]) for m in values["reference"]}
    result = {"input": f"adult{f' first {args.rows} rows' if args.rows else ''}, 8 QIDs, k = 5, lattice",
              "cells": len(pickle.loads(path.read_bytes())["cells"]), "rounds": args.rounds, "base": str(args.base),
              "times": times, "median": med, "speedup": med["reference"] / med["this"],
              "max_relative_difference": diff, "load_average": os.getloadavg(), "cpu_count": os.cpu_count()}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "utility_compute.json").write_text(json.dumps(result, indent=1))
    md = ["| input | cells | reference compute (median s) | this compute (median s) | speedup |", "|---|---|---|---|---|",
          f"| {result['input']} | {result['cells']:,} | {med['reference']:.3f} | {med['this']:.3f} | {result['speedup']:.1f}x |",
          "", "| measure | max relative difference |", "|---|---|", *(f"| {m} | {d:.1e} |" for m, d in diff.items()),
          "", f"load average {result['load_average'][0]:.2f}, {result['cpu_count']} CPUs"]
    (out / "utility_compute.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
