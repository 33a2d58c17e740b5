"""``ppdp suggest`` on a large DuckDB table: the profiling pass, not a search.

    PYTHONPATH=src .venv/bin/python benchmarks/suggest_speed.py [--rows 10000000] [--reps 1]
                                                                [--out benchmarks/results/suggest_speed]

Builds a table of ``--rows`` rows and 12 columns (a key, a unique token, a person id repeating
over rows, age, sex, race, ZIP, a date, a diagnosis code, income, a category, a constant) in a
DuckDB file, then times ``ppdp suggest --no-preview`` (profile, key check, distinction and
separation per column and pair, source risk) and ``ppdp suggest`` with its preview (the spec run
on a 50,000-row sample). Wall and CPU seconds (every thread of the process: DuckDB's too) and the
load average when each started (the machine is shared). Prints a table and writes JSON to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import duckdb

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from ppdp.engine.app.cli import main as ppdp  # noqa: E402

TABLE = """CREATE TABLE big AS SELECT
    CAST(i AS BIGINT) AS id,
    md5(CAST(i AS VARCHAR)) AS token,
    CAST(i // 3 AS BIGINT) AS patient_id,
    CAST(18 + hash(i) % 72 AS INTEGER) AS age,
    CASE WHEN hash(i + 1) % 2 = 0 THEN 'F' ELSE 'M' END AS sex,
    ['White', 'Black', 'Asian', 'Other', 'Pacific'][1 + CAST(hash(i + 2) % 5 AS INTEGER)] AS race,
    CAST(10000 + hash(i + 3) % 900 AS VARCHAR) AS zip,
    DATE '2015-01-01' + CAST(hash(i + 4) % 1500 AS INTEGER) AS admitted,
    chr(65 + CAST(hash(i + 5) % 20 AS INTEGER)) || CAST(hash(i + 6) % 100 AS VARCHAR) AS diagnosis,
    CAST(exp(8 + (hash(i + 7) % 1000) / 250.0) AS DOUBLE) AS income,
    ['a', 'b', 'c', 'd'][1 + CAST(hash(i + 8) % 4 AS INTEGER)] AS category,
    2015 AS year
    FROM range(?) AS t(i)"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "suggest_speed"))
    args = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="ppdp-suggest-speed-") as tmp:
        db = Path(tmp) / "big.duckdb"
        con = duckdb.connect(str(db))
        t0 = time.perf_counter()
        con.execute(TABLE, [args.rows])
        load = time.perf_counter() - t0
        cols = len(con.execute("DESCRIBE big").fetchall())
        con.close()
        for rep in range(args.reps):
            for preview in (False, True):
                argv = ["suggest", "--table", "big", "--db", f"duckdb://{db}", "--json"] + ([] if preview else ["--no-preview"])
                with open(os.devnull, "w") as sink:
                    old = sys.stdout
                    sys.stdout = sink
                    try:
                        t0, c0, load0 = time.perf_counter(), os.times(), os.getloadavg()[0]
                        code = ppdp(argv)
                        seconds, c1 = time.perf_counter() - t0, os.times()
                    finally:
                        sys.stdout = old
                cpu = (c1.user - c0.user) + (c1.system - c0.system)
                results.append({"rep": rep, "preview": preview, "seconds": round(seconds, 2), "cpu_seconds": round(cpu, 2),
                                "load_average": round(load0, 1), "exit_code": code})
    lines = [f"table: {args.rows:,} rows x {cols} columns (built in {load:.1f} s), {platform.processor() or platform.machine()}, "
             f"{os.cpu_count()} cpus", "| rep | preview | wall seconds | CPU seconds (all threads) | load average at start | exit |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {r['rep']} | {r['preview']} | {r['seconds']} | {r['cpu_seconds']} | {r['load_average']} | {r['exit_code']} |"
              for r in results]
    print("\n".join(lines))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "suggest_speed.json").write_text(json.dumps({"rows": args.rows, "columns": cols, "runs": results}, indent=2))
    (out / "suggest_speed.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
