"""``ppdp utility`` against ``ppdp risk`` on the same version, DuckDB, adult resampled.

    .venv/bin/python benchmarks/utility_speed.py [--rows 10000000] [--reps 3] [--data DIR]
                                                 [--out benchmarks/results/utility]

Builds a DuckDB file with adult's 8 QIDs resampled (with replacement, seeded) to ``--rows`` rows,
publishes a k = 5 release (lattice, no suppression limit), then times the two commands on its
version, each in a fresh process (the CLI as a user runs it), interleaved: round r runs utility
then risk when r is even, risk then utility when odd. Reported: the median wall time of each and
the ratio utility / risk (target: at most 2).

Outputs: benchmarks/results/utility/utility_speed.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from ppdp.engine.core.spec import load_spec  # noqa: E402
from ppdp.engine.release.run import run_release  # noqa: E402

QIDS = ["age", "education", "marital-status", "native-country", "occupation", "race", "sex", "workclass"]
CLI = "import sys; from ppdp.engine.app.cli import main; sys.exit(main(sys.argv[1:]))"


def build(db: Path, csv: Path, rows: int) -> None:
    con = duckdb.connect(str(db))
    cols = ", ".join(f'"{q}"' for q in QIDS)
    con.execute(f"CREATE TABLE adult AS SELECT {cols} FROM read_csv('{csv}', delim=';', header=true, all_varchar=true)")
    n = con.execute("SELECT COUNT(*) FROM adult").fetchone()[0]
    con.execute("SELECT setseed(0.25)")
    picked = ", ".join(f'a."{q}"' for q in QIDS)
    con.execute(f"CREATE TABLE source AS SELECT CAST(i AS BIGINT) AS id, {picked} FROM range({rows}) AS r(i) "
                f"JOIN (SELECT row_number() OVER () - 1 AS j, * FROM adult) AS a ON a.j = CAST(floor(random() * {n}) AS BIGINT) "
                "ORDER BY i")
    con.execute("DROP TABLE adult")
    con.close()


def spec(path: Path, db: Path, hierarchies: Path) -> Path:
    lines = [f'[source]\ndatabase = "duckdb://{db}"\ntable = "source"\nkey = "id"\n']
    for q in QIDS:
        lines.append(f'[[quasi_identifiers]]\ncolumn = "{q}"\nhierarchy = "{hierarchies / f"adult_hierarchy_{q}.csv"}"\n')
    lines.append('[[privacy.models]]\nname = "k-anonymity"\nk = 5\n')
    lines.append('[optimizer]\nname = "lattice"\nbudget = 100000\nseed = 1\n')
    lines.append('[output]\nschema = "published"\nname = "adult"\n')
    path.write_text("\n".join(lines))
    return path


def timed(args: list[str]) -> float:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", CLI, *args], check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "utility"))
    ap.add_argument("--db", type=Path, help="a DuckDB file this script built before (its release 'adult'): reuse it")
    args = ap.parse_args()
    arx = Path(args.data) / "arx"
    if args.db is not None:
        db = args.db
        con = duckdb.connect(str(db), read_only=True)
        args.rows = int(con.execute("SELECT COUNT(*) FROM source").fetchone()[0])
        con.close()
        print(f"{args.rows:,} rows: reusing {db}", flush=True)
    else:
        work = Path(tempfile.mkdtemp(prefix="utility-speed-"))
        db = work / "adult.duckdb"
        t0 = time.perf_counter()
        build(db, arx / "adult.csv", args.rows)
        built = time.perf_counter() - t0
        t0 = time.perf_counter()
        run_release(load_spec(spec(work / "adult.toml", db, arx)), progress=False)
        released = time.perf_counter() - t0
        print(f"{args.rows:,} rows: built in {built:.1f} s, released in {released:.1f} s", flush=True)
    url = f"duckdb://{db}"
    cmds = {"utility": ["utility", "adult", "--db", url, "--json"], "risk": ["risk", "adult", "--db", url, "--json"]}
    times: dict[str, list[float]] = {"utility": [], "risk": []}
    for r in range(args.reps + 1):  # round 0 warms the file cache and Numba's, untimed
        order = ("utility", "risk") if r % 2 == 0 else ("risk", "utility")
        for name in order:
            t = timed(cmds[name])
            if r > 0:
                times[name].append(t)
            print(f"round {r} {name:8} {t:7.2f} s{' (warm-up)' if r == 0 else ''}", flush=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = med["utility"] / med["risk"]
    result = {"rows": args.rows, "reps": args.reps, "times": times, "median": med, "ratio_utility_over_risk": ratio,
              "target": 2.0, "cpu_count": os.cpu_count()}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "utility_speed.json").write_text(json.dumps(result, indent=1))
    md = ["| rows | ppdp utility (median s) | ppdp risk (median s) | utility / risk | target |", "|---|---|---|---|---|",
          f"| {args.rows:,} | {med['utility']:.2f} | {med['risk']:.2f} | {ratio:.2f} | <= 2 |"]
    (out / "utility_speed.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
