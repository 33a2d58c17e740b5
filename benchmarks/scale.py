"""End-to-end release at scale: adult resampled to N rows, k = 5, 8 QIDs, lattice search.

    python benchmarks/scale.py --rows 10000000            # DuckDB file (default)
    python benchmarks/scale.py --rows 1000000 --postgres  # a throwaway PostgreSQL server

Prints the time of each stage (histogram GROUP BY + validation, fingerprint, search, metrics,
row ids, materialization, verification, view switch, commit) and the peak memory (max RSS) of
the process that ran the release; writes benchmarks/results/scale[_postgres].json.
The source table is generated first, in another process, so its memory is not counted.
Data: adult.csv from --data or $PPDP_DATA (default ../shared/data), or the copy in engine/data.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
QIDS = ["age", "education", "marital-status", "native-country", "occupation", "race", "sex", "workclass"]


def adult_csv(data: str | None) -> Path:
    for base in (data, os.environ.get("PPDP_DATA"), str(ROOT.parent / "shared" / "data")):
        if base and (Path(base) / "arx" / "adult.csv").exists():
            return Path(base) / "arx" / "adult.csv"
    return ROOT / "engine" / "data" / "adult" / "adult.csv"


RESAMPLE = (
    "CREATE TABLE adult AS WITH base AS (SELECT row_number() OVER () - 1 AS rn, * FROM read_csv(?, delim = ';', header = true)) "
    "SELECT CAST(r.range + 1 AS BIGINT) AS id, base.* EXCLUDE (rn) FROM range({n}) AS r "
    "JOIN base ON base.rn = hash(r.range, 42) % 30162"
)


def generate_duckdb(path: Path, n: int, csv: Path) -> None:
    import duckdb

    con = duckdb.connect(str(path))
    con.execute(RESAMPLE.format(n=int(n)), [str(csv)])
    con.close()


def spec_file(workdir: Path, url: str, schema: str | None) -> Path:
    hier = ROOT / "engine" / "data" / "adult"
    lines = ["[source]", f'database = "{url}"', 'table = "adult"', 'key = "id"'] + ([f'schema = "{schema}"'] if schema else [])
    for q in QIDS:
        lines += ["[[quasi_identifiers]]", f'column = "{q}"', f'hierarchy = "{hier / f"adult_hierarchy_{q}.csv"}"']
    lines += ["[sensitive]", 'columns = ["salary-class"]', "[[privacy.models]]", 'name = "k-anonymity"', "k = 5",
              "[optimizer]", 'name = "lattice"', "budget = 10000", "seed = 1", "[output]", 'schema = "published"', 'name = "adult_scale"']
    p = workdir / "scale.toml"
    p.write_text("\n".join(lines) + "\n")
    return p


def child(spec_path: str, out_json: str) -> None:
    """Runs in its own process: the release, nothing else."""
    from engine.release import run_release
    from engine.spec import load_spec

    t0 = time.perf_counter()
    outcome = run_release(load_spec(spec_path), progress=False)
    total = time.perf_counter() - t0
    m = outcome.run.metrics
    Path(out_json).write_text(json.dumps({
        "total_seconds": total, "stages": m["stage_seconds"], "td": m["td"], "suppressed": m["suppressed"],
        "records": m["records"], "certified": outcome.run.solution["certified"], "verification": outcome.run.verification["passed"],
        "levels": outcome.run.solution["levels"], "maxrss_mb_self": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--data")
    ap.add_argument("--postgres", action="store_true", help="source in a throwaway PostgreSQL server")
    ap.add_argument("--memory-limit", default="3GB", help="DuckDB memory_limit for the release (default 3GB)")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    csv = adult_csv(args.data)
    with tempfile.TemporaryDirectory(prefix="ppdp-scale-") as tmp:
        work = Path(tmp)
        t0 = time.perf_counter()
        server = None
        if args.postgres:
            from connectors.throwaway_postgres import PostgresServer

            server = PostgresServer.start()
            url = server.url
            gen = work / "gen.duckdb"
            generate_duckdb(gen, args.rows, csv)
            load_postgres(url, gen)
            schema = "public"
        else:
            db = work / "scale.duckdb"
            generate_duckdb(db, args.rows, csv)
            url = f"duckdb://{db}?memory_limit={args.memory_limit}"
            schema = None
        gen_s = time.perf_counter() - t0
        spec = spec_file(work, url, schema)
        out = work / "result.json"
        t1 = time.perf_counter()
        proc = subprocess.run([sys.executable, __file__, "--child", str(spec), str(out)])
        wall = time.perf_counter() - t1
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        if server:
            server.stop()
        if proc.returncode:
            sys.exit(proc.returncode)
        res = json.loads(out.read_text())
    res.update(rows=args.rows, source="postgres" if args.postgres else "duckdb", generate_seconds=gen_s,
               wall_seconds_incl_startup=wall, peak_rss_mb=peak_mb, cores=os.cpu_count())
    print(f"\nppdp end-to-end release, {args.rows:,} rows from {res['source']} ({os.cpu_count()} cores)")
    print(f"{'stage':<28}{'seconds':>10}")
    for k, v in res["stages"].items():
        print(f"{k:<28}{v:>10.2f}")
    print(f"{'total (run_release)':<28}{res['total_seconds']:>10.2f}")
    print(f"{'wall incl. interpreter':<28}{wall:>10.2f}")
    print(f"peak memory of the release process: {peak_mb:,.0f} MB")
    print(f"TD {res['td']:,.1f}, suppressed {res['suppressed']:,.0f} of {res['records']:,}, certified {res['certified']}, "
          f"verification {'passed' if res['verification'] else 'FAILED'}")
    target = "<= 120 s and < 4 GB" if not args.postgres else "(1M rows from PostgreSQL)"
    print(f"target {target}: {'MET' if res['total_seconds'] <= 120 and peak_mb < 4096 else 'NOT MET'}")
    name = "scale_postgres.json" if args.postgres else "scale.json"
    (ROOT / "benchmarks" / "results" / name).write_text(json.dumps(res, indent=2))


def load_postgres(url: str, gen: Path) -> None:
    import duckdb

    from connectors import connect

    con = connect(url)
    src = duckdb.connect(str(gen), read_only=True)
    reader = src.sql("SELECT * FROM adult")
    con.write_frame("public", "adult", reader.pl())
    src.close()
    con.close()


if __name__ == "__main__":
    main()
