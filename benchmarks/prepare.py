"""The fixed cost of a release before its search (prepare), stage by stage, warm.

    .venv/bin/python benchmarks/prepare.py [--reps 30] [--data DIR] [--out benchmarks/results/prepare]

On adult (30,162 records, 8 QIDs, SA salary-class) and creditcard's 1,000-record sample with 10
QIDs (SA default-payment-next-month; benchmarks/vs_arx.py's ``creditcard-q10-1000``), in one
process, after warm-up rounds (Numba's compilation, DuckDB's first query): each stage's median
over ``--reps`` rounds, and the whole of benchmarks/vs_arx.py's ``prepare`` (the part of ppdp's
time there that ARX's encoding covers) timed on its own.

Stages: *hierarchies* (every QID's ARX CSV parsed, ``read_arx_csv``; vs_arx.py and a release
read them once per run, outside the other stages), *source facts* (the columns' types and the row
count, as the validate stage reads them before the histogram), *rows query* (the source's text
rows as Arrow, ``text_rows_query``), *encoding* (``encode_rows``: leaf codes, SA codes, the
grouping), *bind* (the models bound to the encoded table). Outputs: prepare.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks import vs_arx as V  # noqa: E402
from ppdp.engine.core.encoding import encode_rows  # noqa: E402
from ppdp.engine.core.hierarchy import read_arx_csv  # noqa: E402
from ppdp.sql import queries as Q  # noqa: E402
from ppdp.sql.dialect import DUCKDB  # noqa: E402

STAGES = ("hierarchies", "source facts", "rows query", "encoding", "bind")


def measure(root: Path, key: str, reps: int, warmups: int) -> dict:
    ds = V.dataset(root, key, Path("/tmp/ppdp-vs-arx"))
    assert ds is not None, f"no data for {key} under {root}"
    loaded = V.load(ds, ds.sa)
    sa = [ds.sa] if ds.sa else []
    models = [V.build_model("k-anonymity", {"k": 2}), V.build_model("t-closeness", {"t": 0.2, "distance": "equal"})]
    source = Q.Source(None, "source", None, DUCKDB)
    times: dict[str, list[float]] = {s: [] for s in (*STAGES, "vs_arx prepare")}
    for i in range(warmups + reps):
        t0 = time.perf_counter()
        [read_arx_csv(f, q, duplicates="keep-last") for f, q in zip(ds.hierarchy_files, ds.qids, strict=True)]
        t1 = time.perf_counter()
        assert loaded.connector is not None
        types = dict(loaded.connector.relation_columns("main", "source") or [])
        int(loaded.connector.query(f"SELECT COUNT(*) AS n FROM {source.sql()}")["n"][0])
        t2 = time.perf_counter()
        rows = loaded.connector.query_arrow(Q.text_rows_query(source, list(ds.qids) + sa, types))
        t3 = time.perf_counter()
        table = encode_rows(rows, list(ds.qids), sa, loaded.hierarchies)
        t4 = time.perf_counter()
        V.bind(models, table, ds)
        t5 = time.perf_counter()
        V.prepare(loaded, sa, models)
        t6 = time.perf_counter()
        if i >= warmups:
            for s, (a, b) in zip((*STAGES, "vs_arx prepare"), ((t0, t1), (t1, t2), (t2, t3), (t3, t4), (t4, t5), (t5, t6)),
                                 strict=True):
                times[s].append((b - a) * 1000.0)
    return {"key": key, "records": int(table.n_records), "rows": int(table.n_rows), "qids": len(ds.qids),
            "median_ms": {s: round(statistics.median(v), 2) for s, v in times.items()},
            "min_ms": {s: round(min(v), 2) for s, v in times.items()}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--warmups", type=int, default=5)
    ap.add_argument("--data", help="folder holding arx/ (default: $PPDP_DATA or ../shared/data)")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "prepare")
    args = ap.parse_args()
    root = V.data_dir(args.data)
    rows = [measure(root, key, args.reps, args.warmups) for key in ("creditcard-q10-1000", "adult")]
    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "commit": V.git_commit(), "reps": args.reps,
            "load_average": [round(x, 2) for x in os.getloadavg()]}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "prepare.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    cols = (*STAGES, "vs_arx prepare")
    md = ["# Prepare, stage by stage (warm, one process)", "",
          f"Median (min) ms of {args.reps} rounds after {args.warmups} warm-ups; commit {meta['commit']}; load average "
          f"{meta['load_average']}. *vs_arx prepare* = source facts (read once there) excluded: the rows query, the "
          "encoding and bind, as benchmarks/vs_arx.py times them.", "",
          "| table | records | rows | QIDs | " + " | ".join(cols) + " |", "|---|---:|---:|---:|" + "---:|" * len(cols)]
    for r in rows:
        md.append(f"| {r['key']} | {r['records']:,} | {r['rows']:,} | {r['qids']} | "
                  + " | ".join(f"{r['median_ms'][c]:.1f} ({r['min_ms'][c]:.1f})" for c in cols) + " |")
    (args.out / "prepare.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
