"""ppdp's utility measures against ARX 3.9.2's StatisticsQuality on the same transformation.

    .venv/bin/python benchmarks/utility_vs_arx.py [--datasets adult,cup,fars] [--k 5,10]
                                                  [--optimizer lattice] [--data DIR]
                                                  [--out benchmarks/results/utility] [--arx-classpath CP]

Per dataset and k: ppdp publishes a k-anonymous release (DuckDB, no suppression limit, the
dataset's 8 QIDs of benchmarks/vs_arx.py) and measures its utility (``ppdp utility``,
engine/utility); ARX (benchmarks/arx/ArxQuality.java) anonymizes the same CSV on a lattice pinned
to ppdp's chosen levels, with the version's hierarchies in ppdp's canonical row order
(docs/design/utility.md), and reports its quality models. One row per measure and dataset:
ARX's value, ppdp's, the largest difference over the aggregate and the per-QID values, and
whether it is within 1e-9.

Outputs: benchmarks/results/utility/utility_vs_arx.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "benchmarks"))

from vs_arx import dataset, data_dir  # noqa: E402

from ppdp.connectors import connect  # noqa: E402
from ppdp.engine.core import catalog  # noqa: E402
from ppdp.engine.core.spec import load_spec  # noqa: E402
from ppdp.engine.release.run import run_release  # noqa: E402
from ppdp.engine.utility import _hierarchies, assess_run  # noqa: E402

ARX_MODELS = ("granularity", "intensity", "nu-entropy", "squared-error", "aecs", "discernibility", "ambiguity",
              "record-squared-error", "sse-sst")
TOLERANCE = 1e-9


def _toml_list(xs: list[str]) -> str:
    return "[" + ", ".join(json.dumps(x) for x in xs) + "]"


def release(ds: Any, k: int, work: Path, optimizer: str) -> tuple[Path, str]:
    """A k-anonymous release of ``ds`` in a fresh DuckDB file; the database URL and release name."""
    db = work / f"{ds.key}-k{k}.duckdb"
    if db.exists():
        db.unlink()
    frame = pl.read_csv(ds.csv, separator=";", infer_schema=False).select(list(ds.qids))
    frame = frame.with_row_index("id").with_columns(pl.col("id").cast(pl.Int64))
    con = duckdb.connect(str(db))
    con.register("f", frame)
    con.execute("CREATE TABLE source AS SELECT * FROM f")
    con.close()
    lines = [f'[source]\ndatabase = "duckdb://{db}"\ntable = "source"\nkey = "id"\n']
    for q, h in zip(ds.qids, ds.hierarchy_files, strict=True):
        # ARX keeps the last of repeated leaves (cup's AGE repeats five); ARX is then given the
        # stored hierarchy, without the repeats
        lines.append(f'[[quasi_identifiers]]\ncolumn = {json.dumps(q)}\n'
                     f'hierarchy = {{ type = "arx", file = {json.dumps(str(h))}, duplicates = "keep-last" }}\n')
    lines.append(f'[[privacy.models]]\nname = "k-anonymity"\nk = {k}\n')
    lines.append(f'[optimizer]\nname = "{optimizer}"\nbudget = 1000000\nseed = 1\n')
    lines.append(f'[output]\nschema = "published"\nname = "{ds.key}_k{k}"\n')
    spec = work / f"{ds.key}-k{k}.toml"
    spec.write_text("\n".join(lines))
    run_release(load_spec(spec), progress=False)
    return db, f"{ds.key}_k{k}"


def arx_quality(classpath: str, classes: Path, ds: Any, levels: list[int], k: int, hier: dict[str, Path]) -> dict[str, Any]:
    tokens = [f"data={ds.csv}", f"qids={','.join(ds.qids)}", f"levels={','.join(map(str, levels))}", f"k={k}", "supp=1.0"]
    tokens += [f"hier.{q}={p}" for q, p in hier.items()]
    out = subprocess.run(["java", "-cp", f"{classes}{os.pathsep}{classpath}", "ArxQuality", *tokens],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def compare(arx: dict[str, Any], ours: dict[str, Any], qids: tuple[str, ...]) -> dict[str, Any]:
    a, p = arx.get("value"), ours.get("value")
    diffs = [abs(a - p)] if a is not None and p is not None else []
    if "columns" in arx:
        for q in qids:
            x, y = arx["columns"].get(q), ours.get("columns", {}).get(q)
            if x is not None and y is not None:
                diffs.append(abs(x - y))
            elif (x is None) != (y is None):
                diffs.append(float("inf"))
    if (a is None) != (p is None):
        diffs.append(float("inf"))
    worst = max(diffs) if diffs else 0.0
    return {"arx": a, "ppdp": p, "max_abs_diff": worst, "equal": worst <= TOLERANCE}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--datasets", default="adult,cup,fars")
    ap.add_argument("--k", default="5,10")
    ap.add_argument("--optimizer", default="lattice")
    ap.add_argument("--data")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "utility"))
    ap.add_argument("--arx-classpath", default="/tmp/arx-build/classpath.txt")
    args = ap.parse_args()
    classpath = Path(args.arx_classpath).read_text().strip()
    root = data_dir(args.data)
    work = Path(tempfile.mkdtemp(prefix="utility-vs-arx-"))
    classes = work / "classes"
    classes.mkdir()
    srcs = [REPO / "benchmarks" / "arx" / f for f in ("ArxSetup.java", "ArxQuality.java")]
    subprocess.run(["javac", "-nowarn", "-encoding", "UTF-8", "-cp", classpath, "-d", str(classes), *map(str, srcs)], check=True)
    rows: list[dict[str, Any]] = []
    for key in args.datasets.split(","):
        ds = dataset(root, key, work)
        if ds is None:
            print(f"{key}: data not found under {root}", file=sys.stderr)
            continue
        for k in (int(x) for x in args.k.split(",")):
            db, name = release(ds, k, work, args.optimizer)
            con = connect(f"duckdb://{db}", read_only=True)
            try:
                run = catalog.published_runs(con, catalog.resolve_release(con, name))[-1]
                ours = assess_run(con, run).to_json()
                hier = {}
                for h in _hierarchies(con, run, list(ds.qids)):
                    p = work / f"{key}-{h.attribute}-canonical.csv"
                    p.write_text("\n".join(";".join(r) for r in h.rows) + "\n")
                    hier[h.attribute] = p
            finally:
                con.close()
            levels = [int(run.solution["levels"][q]) for q in ds.qids]
            arx = arx_quality(classpath, classes, ds, levels, k, hier)
            for m in ARX_MODELS:
                row = {"dataset": key, "k": k, "levels": levels, "measure": m, "rows": ours["rows"],
                       "withheld": ours["withheld"], "arx_suppressed": arx["suppressed"], **compare(arx[m], ours[m], ds.qids)}
                rows.append(row)
                print(f"{key:6} k={k:<3} {m:22} ARX {row['arx']!s:>22}  ppdp {row['ppdp']!s:>22}  "
                      f"max|diff| {row['max_abs_diff']:.2e}  {'equal' if row['equal'] else 'DIFFERENT'}", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "utility_vs_arx.json").write_text(json.dumps({"tolerance": TOLERANCE, "rows": rows}, indent=1))
    md = ["| dataset | k | levels | measure | ARX | ppdp | max abs diff (aggregate and per QID) | equal to 1e-9 |",
          "|---|---|---|---|---|---|---|---|"]
    md += [f"| {r['dataset']} | {r['k']} | {r['levels']} | {r['measure']} | {r['arx']} | {r['ppdp']} | {r['max_abs_diff']:.1e} | "
           f"{'yes' if r['equal'] else 'NO'} |" for r in rows]
    (out / "utility_vs_arx.md").write_text("\n".join(md) + "\n")
    bad = [r for r in rows if not r["equal"]]
    print(f"{len(rows) - len(bad)} of {len(rows)} rows equal to {TOLERANCE:g}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
