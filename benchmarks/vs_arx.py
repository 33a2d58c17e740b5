"""ppdp against ARX 3.9.2, ppdp's side (issue #18): the issue's table regenerated on this machine.

    .venv/bin/python benchmarks/vs_arx.py [--quick] [--reps 5] [--warmups 1] [--data DIR]
                                          [--out benchmarks/results/vs_arx] [--compare OLD.json]

ARX's figures are fixed reference values, measured once with ARX 3.9.2 on this machine and
quoted from issue #18 (source: ``ARX_SOURCE``); this script does not run ARX. For each case it
runs the ppdp optimizer ``--warmups`` times (Numba compilation and caches excluded) and then
``--reps`` times, each on a fresh ``Problem`` (so the oracle's per-G cache does not carry over),
and reports the median wall time of the optimizer run (the histogram and its encoding are built
once per dataset, outside the timing), the nodes evaluated, the median milliseconds per
evaluated node, the TD, and whether the result is certified (optimal within the suppression
limit). ratio = ppdp / ARX (< 1: ppdp faster).

Data (``--data`` / ``PPDP_DATA``, default ../shared/data next to the repository): arx/adult.csv
with the ARX hierarchies (QIDs: the 8 attributes other than salary-class, SA salary-class, the
lattice of 6,480 nodes), and arx/genetic-benchmark/{fars,cup,mach2019,creditcard}_int.csv with
every attribute that has a hierarchy file as a QID (no SA; a leaf given twice keeps its last row,
as ARX does). mach2019's and creditcard's lattices are far above ARX's heuristic search
threshold (100,000 nodes), so ARX ran LIGHTNING there: ppdp runs its heuristics on them with
fixed budgets (``descent``, ppdp's LIGHTNING; ID-DGA; HAEF) plus a capped certified search that
reports the largest TD still possible. A missing or unreadable dataset is reported, not fatal. ``--quick`` runs the adult cases only (about a minute); the full mode adds the four
genetic-benchmark datasets. ``--compare`` adds the figures of an earlier run of this script (for
example on the commit before a change) as extra columns.

Outputs: benchmarks/results/vs_arx/vs_arx.json and vs_arx.md (quick mode: in vs_arx/quick/;
``--out`` elsewhere).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ppdp.engine.encoding import COUNT_COLUMN, EncodedTable, encode_histogram  # noqa: E402
from ppdp.engine.hierarchy import read_arx_csv  # noqa: E402
from ppdp.engine.models import build_model  # noqa: E402
from ppdp.engine.optimizers import run_optimizer  # noqa: E402
from ppdp.engine.problem import Problem  # noqa: E402

ARX_SOURCE = "issue #18: ARX 3.9.2 measured on this machine (fixed reference values, not rerun here)"
ADULT_QIDS = ["age", "education", "marital-status", "native-country", "occupation", "race", "sex", "workclass"]
GENETIC = ["fars", "cup", "mach2019", "creditcard"]
T_EMD_AS_EUCLIDEAN = 0.2828  # binary salary: ARX's EMD 0.2 is Euclidean 0.2 * sqrt(2)


@dataclass(frozen=True)
class Case:
    """One row of the issue's table: dataset, models, ppdp optimizer, ARX's and the issue's figures."""

    key: str
    label: str
    dataset: str
    models: tuple[tuple[str, dict[str, Any]], ...]
    optimizer: str
    params: dict[str, Any] = field(default_factory=dict)
    arx_ms: float | None = None  # ARX 3.9.2, issue #18
    issue_ppdp_ms: float | None = None  # ppdp as measured in issue #18 (before this benchmark)
    budget: int = 10**8  # evaluations; a capped run is not certified and its time is not comparable
    heuristic: bool = False  # a budgeted heuristic run, compared with ARX's heuristic (LIGHTNING)


K5 = (("k-anonymity", {"k": 5}),)
CASES = [
    Case("adult-k5-lattice", "adult k=5, no suppression limit, ppdp lattice (certified TD optimum)", "adult", K5,
         "lattice", {}, 1972, 571),
    *[Case(f"{d}-k5-lattice", f"{d} k=5, no suppression limit, ppdp lattice{note}", d, K5, "lattice", {}, arx, ppdp,
           budget=budget)
      for d, arx, ppdp, budget, note in [
          ("fars", 12600, 1400, 10**8, ""),
          ("cup", 54700, 23600, 10**8, " (7 QIDs: cup_int_hierarchy_ZIP.csv is missing)"),
      ]],
    # mach2019 (16 QIDs, 85,030,560 nodes) and creditcard (24 QIDs, about 4.9e13 nodes) are far
    # above ARX's heuristic search threshold (ARXConfiguration: 100,000 nodes by default), so
    # ARX's figures are its LIGHTNING heuristic, not an optimal search. ppdp's counterpart is
    # `descent` (LIGHTNING run top-down for TD); the evolutionary optimizers and a capped
    # certified search (its bound left says how far from proven the best is) for comparison.
    *[Case(f"{d}-k5-{opt}", f"{d} k=5, no suppression limit, ppdp {opt}{note}", d, K5, opt, {}, arx, ppdp,
           budget=budget, heuristic=opt != "lattice")
      for d, arx, ppdp in [("mach2019", 7300, 3100), ("creditcard", 5300, 1400)]
      for opt, budget, note in [
          ("descent", 1000, ", 1,000 evaluations (ARX: its LIGHTNING heuristic, the lattice is above 100,000 nodes)"),
          ("id-dga", 1000, ", 1,000 evaluations"),
          ("haef", 1000, ", 1,000 evaluations"),
          ("lattice", 2000, " (certified search capped at 2,000 evaluations)"),
      ]],
    Case("adult-t0.2828-k2", "adult t-closeness (ARX EMD 0.2 = Euclidean 0.2828) + k=2, ppdp lattice", "adult",
         (("k-anonymity", {"k": 2}), ("t-closeness", {"t": T_EMD_AS_EUCLIDEAN})), "lattice", {}, 3000, 6700),
    Case("adult-t0.2-k2", "same with Euclidean t = 0.2, ppdp lattice", "adult",
         (("k-anonymity", {"k": 2}), ("t-closeness", {"t": 0.2})), "lattice", {}, 3000, 10700),
    Case("adult-k5-flash-0", "adult k=5, 0 % suppression limit, ppdp flash", "adult", K5, "flash",
         {"suppression_limit": 0.0}, 40, 120),
    Case("adult-k5-flash-5", "adult k=5, 5 % suppression limit, ppdp flash", "adult", K5, "flash",
         {"suppression_limit": 0.05}, 691, 1650),
    Case("adult-k5-flash-100", "adult k=5, 100 % suppression limit (ARX's usual), ppdp flash", "adult", K5, "flash",
         {"suppression_limit": 1.0}),
    Case("adult-k5-lattice-5", "adult k=5, 5 % suppression limit, ppdp lattice", "adult", K5, "lattice",
         {"suppression_limit": 0.05}),
]


def data_dir(arg: str | None) -> Path:
    """``--data``, else ``PPDP_DATA``, else ../shared/data next to the repository."""
    return Path(arg or os.environ.get("PPDP_DATA") or (REPO / ".." / "shared" / "data")).resolve()


def load_dataset(root: Path, name: str) -> EncodedTable | None:
    """The encoded histogram of one dataset, or None when its files are not there."""
    if name == "adult":
        folder, csv, qids, sa = root / "arx", root / "arx" / "adult.csv", ADULT_QIDS, ["salary-class"]
    else:
        folder = root / "arx" / "genetic-benchmark"
        csv = folder / f"{name}_int.csv"
        if not csv.exists():
            return None
        header = csv.open().readline().strip().split(";")
        qids = [c for c in header if (folder / f"{name}_int_hierarchy_{c}.csv").exists()]
        sa = []
    if not csv.exists():
        return None
    prefix = "adult" if name == "adult" else f"{name}_int"
    # ARX keeps the last row of a leaf given twice (cup's AGE hierarchy does that): do the same.
    hierarchies = [read_arx_csv(folder / f"{prefix}_hierarchy_{q}.csv", q, duplicates="keep-last") for q in qids]
    frame = pl.read_csv(csv, separator=";", infer_schema=False)
    hist = frame.group_by(qids + sa).agg(pl.len().cast(pl.Int64).alias(COUNT_COLUMN))
    return encode_histogram(hist, qids, sa, hierarchies)


def run_case(case: Case, table: EncodedTable, *, reps: int, warmups: int) -> dict[str, Any]:
    """Warm-ups, then ``reps`` timed runs on fresh problems; medians and the last result."""
    models = [build_model(name, dict(p)) for name, p in case.models]
    times, per_node, result = [], [], None
    for i in range(warmups + reps):
        problem = Problem(table, models)
        t0 = time.perf_counter()
        result = run_optimizer(case.optimizer, problem, budget=case.budget, params=dict(case.params))
        ms = (time.perf_counter() - t0) * 1000.0
        if i >= warmups:
            times.append(ms)
            per_node.append(ms / max(result.evaluations, 1))
    assert result is not None
    ppdp_ms = statistics.median(times)
    info = {k: v for k, v in result.info.items() if isinstance(v, int | float | bool | str | None)}
    return {
        "ppdp_ms": round(ppdp_ms, 1), "ppdp_ms_all": [round(t, 1) for t in times],
        # A certified search stopped by its budget (or box cap) did not solve the case: no ratio. A heuristic
        # run always spends its budget; its time compares with ARX's heuristic run.
        "ratio": (None if case.arx_ms is None or (not result.certified and not case.heuristic)
                  else round(ppdp_ms / case.arx_ms, 3)),
        "bound_left": result.info.get("remaining_upper_bound") if not result.certified else None,
        "nodes_evaluated": int(result.evaluations), "ms_per_node": round(statistics.median(per_node), 3),
        "td": float(result.td), "feasible": bool(result.feasible), "suppressed": int(result.suppressed),
        "certified": bool(result.certified), "levels": [int(x) for x in result.g], "info": info,
        "records": int(table.n_records), "histogram_rows": int(table.n_rows), "qids": int(table.n_qids),
    }


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return out.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def fmt(x: float | None, spec: str = ",.0f") -> str:
    return "" if x is None else format(x, spec)


def markdown(doc: dict[str, Any], compare: dict[str, Any] | None) -> str:
    meta = doc["meta"]
    lines = [
        "# ppdp vs ARX 3.9.2 (issue #18), ppdp's side",
        "",
        f"Mode {meta['mode']}; median of {meta['reps']} runs after {meta['warmups']} warm-up(s); commit {meta['commit']}; "
        f"{meta['machine']}; load average at start {meta['load_average']}. ARX figures: {ARX_SOURCE}.",
        "ppdp time = one optimizer run on a fresh Problem (histogram built once per dataset, outside the timing). "
        "ratio = ppdp / ARX. certified = TD proven optimal within the suppression limit; *no TD above* = the "
        "largest bound left by a capped certified search (no node can do better).",
        "",
        "mach2019 (85,030,560 nodes) and creditcard (about 4.9e13 nodes) are above ARX's heuristic search threshold "
        "(100,000 nodes, ARXConfiguration's default), so ARX's figures for them are its LIGHTNING heuristic with its own "
        "loss, not an optimal search: ppdp's heuristic rows compare with them, and no certified search of ppdp or ARX "
        "finishes there.",
        "",
    ]
    head = ("| case | ARX (ms) | ppdp (ms) | ratio | issue's ppdp (ms) | nodes evaluated | ms / node | TD | certified "
            "| no TD above |")
    rule = "|---|---:|---:|---:|---:|---:|---:|---:|:---:|---:|"
    if compare:
        head += " before (ms) | before nodes |"
        rule += "---:|---:|"
    lines += [head, rule]
    old = {r["key"]: r for r in (compare or {}).get("rows", [])}
    for r in doc["rows"]:
        if "skipped" in r:
            cells = [r["label"], fmt(r["arx_ms"]), f"skipped: {r['skipped']}", "", fmt(r["issue_ppdp_ms"]), "", "", "", "", ""]
        else:
            cells = [r["label"], fmt(r["arx_ms"]), fmt(r["ppdp_ms"]), fmt(r["ratio"], ".2f"), fmt(r["issue_ppdp_ms"]),
                     fmt(r["nodes_evaluated"]), fmt(r["ms_per_node"], ".3f"), fmt(r["td"], ",.1f"),
                     "yes" if r["certified"] else "no", fmt(r.get("bound_left"), ",.1f")]
        if compare:
            o = old.get(r["key"], {})
            cells += [o.get("skipped", fmt(o.get("ppdp_ms"))) if o else "", fmt(o.get("nodes_evaluated")) if o else ""]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    if compare:
        lines += ["", f"before = {compare['meta'].get('label') or compare['meta']['commit']} "
                      f"(same script, run {compare['meta']['date']})."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="adult cases only")
    ap.add_argument("--reps", type=int, default=None, help="timed runs per case (default 3 quick, 5 full)")
    ap.add_argument("--warmups", type=int, default=1, help="untimed runs per case first (default 1)")
    ap.add_argument("--data", help="folder holding arx/ (default: $PPDP_DATA or ../shared/data)")
    ap.add_argument("--out", type=Path, help="output folder (default benchmarks/results/vs_arx, or its quick/ in quick mode)")
    ap.add_argument("--compare", type=Path, help="an earlier vs_arx.json whose figures become extra columns")
    ap.add_argument("--label", help="a name for this run in the JSON (e.g. 'before #18 item 2')")
    ap.add_argument("--only", action="append", help="run only these case keys (repeatable)")
    args = ap.parse_args(argv)
    reps = args.reps or (3 if args.quick else 5)
    args.out = args.out or REPO / "benchmarks" / "results" / "vs_arx" / ("quick" if args.quick else "")
    root = data_dir(args.data)
    cases = [c for c in CASES if (not args.quick or c.dataset == "adult") and (not args.only or c.key in args.only)]
    tables: dict[str, EncodedTable | None] = {}
    rows: list[dict[str, Any]] = []
    compare = json.loads(args.compare.read_text()) if args.compare else None
    meta = {"mode": "quick" if args.quick else "full", "reps": reps, "warmups": args.warmups, "commit": git_commit(),
            "label": args.label, "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}",
            "load_average": [round(x, 2) for x in os.getloadavg()], "data": str(root), "arx_source": ARX_SOURCE}
    for case in cases:
        load_error = None
        if case.dataset not in tables:
            try:
                tables[case.dataset] = load_dataset(root, case.dataset)
            except Exception as exc:  # one unreadable dataset should not cost the others' figures
                tables[case.dataset], load_error = None, f"{type(exc).__name__}: {exc}"[:200]
        row: dict[str, Any] = {"key": case.key, "label": case.label, "dataset": case.dataset, "optimizer": case.optimizer,
                               "params": case.params, "models": [[n, p] for n, p in case.models],
                               "arx_ms": case.arx_ms, "issue_ppdp_ms": case.issue_ppdp_ms}
        table = tables[case.dataset]
        if table is None:
            row["skipped"] = load_error or f"no data (or unreadable) under {root}"
        else:
            try:
                row |= run_case(case, table, reps=reps, warmups=args.warmups)
            except Exception as exc:  # an older commit may refuse a case (e.g. flash with limit 1.0)
                row["skipped"] = f"{type(exc).__name__}: {exc}"[:200]
        rows.append(row)
        shown = row.get("skipped") or f"{row['ppdp_ms']:,.0f} ms, {row['nodes_evaluated']} nodes, ratio {row['ratio']}"
        print(f"{case.key:<22} {shown}", flush=True)
        write(args.out, meta, rows, compare)  # after every case: a long run cut short keeps what it has
    print(f"wrote {args.out / 'vs_arx.json'} and {args.out / 'vs_arx.md'}")
    return 0


def write(out: Path, meta: dict[str, Any], rows: list[dict[str, Any]], compare: dict[str, Any] | None) -> None:
    doc: dict[str, Any] = {"meta": meta, "rows": rows}
    if compare:
        doc["compare"] = {"meta": compare["meta"], "rows": compare["rows"]}
    out.mkdir(parents=True, exist_ok=True)
    (out / "vs_arx.json").write_text(json.dumps(doc, indent=1) + "\n")
    (out / "vs_arx.md").write_text(markdown(doc, compare))


if __name__ == "__main__":
    sys.exit(main())
