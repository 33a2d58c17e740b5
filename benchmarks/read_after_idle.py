"""How long DuckDB takes to hand over a small table's rows right after the process did something
else for a while: the cost that ppdp's run pays on benchmarks/vs_arx.py's small rows when it
runs right after ARX's, and that ARX's JVM does not show.

    .venv/bin/python benchmarks/read_after_idle.py [--data DIR] [--rows 1000] [--runs 60] [--reps 2]
                                                   [--out benchmarks/results/read_after_idle]

One in-memory DuckDB table holding the first ``--rows`` rows of adult (ARX's CSV, as text), read
whole as Arrow (``con.sql(q).to_arrow_table()``, what ``validate.read_rows`` does) ``--runs`` times
after each kind of gap: none, 1, 5 and 50 ms asleep, 50 ms spinning in Python (the CPU kept
busy), and 50 ms asleep followed by an untimed ``SELECT 1``. Prints the median ms per gap and
writes ``<out>/<commit>.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import polars as pl

REPO = Path(__file__).resolve().parents[1]


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", help="folder holding arx/ (default: $PPDP_DATA or ../shared/data)")
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=60, help="timed reads per gap (after 30 untimed)")
    ap.add_argument("--reps", type=int, default=2, help="how many times the whole set of gaps is run")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "read_after_idle")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(REPO))
    import benchmarks.vs_arx as V

    root = V.data_dir(args.data)
    frame = pl.read_csv(root / "arx" / "adult.csv", separator=";", infer_schema=False).head(args.rows)
    con = duckdb.connect()
    con.register("frame", frame)
    con.execute("CREATE TABLE t AS SELECT * FROM frame")
    con.unregister("frame")
    query = "SELECT * FROM t"

    def read() -> None:
        con.sql(query).to_arrow_table()

    gaps: dict[str, tuple[Callable[[], None], Callable[[], None] | None]] = {
        "none": (lambda: None, None),
        "sleep 1 ms": (lambda: time.sleep(0.001), None),
        "sleep 5 ms": (lambda: time.sleep(0.005), None),
        "sleep 50 ms": (lambda: time.sleep(0.05), None),
        "spin 50 ms": (lambda: _spin(0.05), None),
        "sleep 50 ms, then SELECT 1": (lambda: time.sleep(0.05), lambda: con.execute("SELECT 1").fetchall()),
    }
    rows = []
    for rep in range(args.reps):
        row: dict[str, float] = {}
        for name, (gap, before) in gaps.items():
            for _ in range(30):
                read()
            times = []
            for _ in range(args.runs):
                gap()
                if before is not None:
                    before()
                t0 = time.perf_counter()
                read()
                times.append((time.perf_counter() - t0) * 1000.0)
            row[name] = round(statistics.median(times), 3)
        rows.append(row)
        print(f"rep {rep}: " + " | ".join(f"{k} {v:.2f} ms" for k, v in row.items()), flush=True)
    con.close()
    meta = {"commit": V.git_commit(), "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "rows": args.rows, "runs": args.runs, "duckdb": duckdb.__version__}
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"{meta['commit']}.json"
    out.write_text(json.dumps({"meta": meta, "reps": rows}, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
