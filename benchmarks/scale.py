"""End-to-end release at scale: adult resampled to N rows, k = 5, 8 QIDs, lattice search.

    python benchmarks/scale.py --rows 1000000               # DuckDB and PostgreSQL, same data (default)
    python benchmarks/scale.py --rows 10000000 --duckdb     # DuckDB file only
    python benchmarks/scale.py --rows 1000000 --postgres    # a throwaway PostgreSQL server only

Prints the time of each stage (histogram GROUP BY + validation, fingerprint, search, metrics,
row ids, materialization, verification, view switch, commit) and the peak memory (max RSS) of
the process that ran the release; with both backends, one table side by side with the ratio
PostgreSQL / DuckDB per stage (the target: materialization within 2x). Writes
benchmarks/results/scale.json, scale_postgres.json or scale_compare.json (both).
The source table is generated once, in another process, so its memory is not counted; both
backends release the very same rows.
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


# A second version's changes (about 0.5 % deletions, 0.3 % SA updates, 0.25 % insertions), the
# same statements on both backends: the cross-version check, the delta and held-back records.
SECOND_VERSION = (
    "DELETE FROM {t} WHERE id % 211 = 0",
    "UPDATE {t} SET \"salary-class\" = CASE WHEN \"salary-class\" = '>50K' THEN '<=50K' ELSE '>50K' END WHERE id % 307 = 0",
    "INSERT INTO {t} SELECT id + {n} AS id, {cols} FROM {t} WHERE id % 401 = 0",
)


def child(spec_path: str, out_json: str, second: str = "") -> None:
    """Runs in its own process: the release (and, with ``second``, a second version), nothing else."""
    from connectors import connect
    from engine.release import run_release
    from engine.spec import load_spec

    spec = load_spec(spec_path)
    t0 = time.perf_counter()
    outcome = run_release(spec, progress=False)
    total = time.perf_counter() - t0
    m = outcome.run.metrics
    result = {
        "total_seconds": total, "stages": m["stage_seconds"], "td": m["td"], "suppressed": m["suppressed"],
        "records": m["records"], "certified": outcome.run.solution["certified"], "verification": outcome.run.verification["passed"],
        "levels": outcome.run.solution["levels"], "maxrss_mb_self": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    if second:
        con = connect(spec.database)
        t = f"{spec.schema}.adult" if spec.schema else "adult"
        cols = ", ".join(f'"{c}"' for c, _ in con.relation_columns(spec.schema or "main", "adult") if c != "id")
        for stmt in SECOND_VERSION:
            con.execute(stmt.format(t=t, n=int(second) * 2, cols=cols))
        con.close()
        t1 = time.perf_counter()
        v2 = run_release(spec, progress=False)
        result["second_version"] = {"total_seconds": time.perf_counter() - t1, "stages": v2.run.metrics["stage_seconds"],
                                    "changes": v2.run.changes, "held_back": v2.run.cross_version.get("held_back"),
                                    "verification": v2.run.verification["passed"]}
    Path(out_json).write_text(json.dumps(result))


def run_backend(work: Path, backend: str, gen: Path, memory_limit: str, server=None, threads: int | None = None,
                second: int = 0) -> dict:
    """One release of the generated table on ``backend`` in a child process; its result record."""
    if backend == "postgres":
        url, schema = server.url, "public"
    else:
        url, schema = f"duckdb://{gen}?memory_limit={memory_limit}" + (f"&threads={threads}" if threads else ""), None
    spec = spec_file(work / backend, url, schema)
    out = work / backend / "result.json"
    t1 = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    proc = subprocess.run([sys.executable, __file__, "--child", str(spec), str(out)] + (["--second", str(second)] if second else []))
    wall = time.perf_counter() - t1
    # ru_maxrss of children is the largest child so far: exact for the first run, an upper bound after
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    if proc.returncode:
        sys.exit(proc.returncode)
    res = json.loads(out.read_text())
    res.update(source=backend, wall_seconds_incl_startup=wall, peak_rss_mb=peak_mb,
               peak_rss_exact=peak_mb > before or before == 0)
    return res


def print_one(res: dict, rows: int) -> None:
    print(f"\nppdp end-to-end release, {rows:,} rows from {res['source']} ({os.cpu_count()} cores)")
    print(f"{'stage':<28}{'seconds':>10}")
    for k, v in res["stages"].items():
        print(f"{k:<28}{v:>10.2f}")
    print(f"{'total (run_release)':<28}{res['total_seconds']:>10.2f}")
    print(f"{'wall incl. interpreter':<28}{res['wall_seconds_incl_startup']:>10.2f}")
    print(f"peak memory of the release process: {res['peak_rss_mb']:,.0f} MB")
    print(f"TD {res['td']:,.1f}, suppressed {res['suppressed']:,.0f} of {res['records']:,}, certified {res['certified']}, "
          f"verification {'passed' if res['verification'] else 'FAILED'}")
    sv = res.get("second_version")
    if sv:
        print(f"second version ({sv['changes']}; held back {sv['held_back']}):")
        for k, v in sv["stages"].items():
            if v >= 0.01:
                print(f"  {k:<26}{v:>10.2f}")
        print(f"  {'total (run_release)':<26}{sv['total_seconds']:>10.2f}   verification {'passed' if sv['verification'] else 'FAILED'}")


def compare(duck: dict, pg: dict, rows: int) -> dict:
    """Side-by-side stage table and the PostgreSQL / DuckDB ratios; returns the ratios."""
    print(f"\nsame {rows:,} rows, DuckDB vs PostgreSQL ({os.cpu_count()} cores)")
    print(f"{'stage':<28}{'duckdb s':>10}{'postgres s':>12}{'pg/duckdb':>11}")
    ratios = {}
    for k in list(dict.fromkeys([*duck["stages"], *pg["stages"]])):
        a, b = duck["stages"].get(k), pg["stages"].get(k)
        r = (b / a) if a and b is not None else None
        ratios[k] = r
        fa = f"{a:>10.2f}" if a is not None else f"{'-':>10}"
        fb = f"{b:>12.2f}" if b is not None else f"{'-':>12}"
        fr = f"{r:>11.2f}" if r is not None else f"{'-':>11}"
        print(f"{k:<28}{fa}{fb}{fr}")
    tot = pg["total_seconds"] / duck["total_seconds"]
    ratios["total"] = tot
    print(f"{'total (run_release)':<28}{duck['total_seconds']:>10.2f}{pg['total_seconds']:>12.2f}{tot:>11.2f}")
    same = duck["td"] == pg["td"] and duck["levels"] == pg["levels"] and duck["suppressed"] == pg["suppressed"]
    print(f"same solution on both (TD, levels, suppressed): {same}")
    # Materialization = every write of the version: private state (hierarchies, suppressed keys),
    # row ids, row state, the version table, and (later versions) the history check and delta.
    write = [k for k in WRITE_STAGES if k in duck["stages"] and k in pg["stages"]]
    a, b = sum(duck["stages"][k] for k in write), sum(pg["stages"][k] for k in write)
    m = b / a if a else None
    ratios["materialization (all writes)"] = m
    print(f"{'materialization (all writes)':<28}{a:>10.2f}{b:>12.2f}{m:>11.2f}   = {' + '.join(write)}")
    print(f"target: PostgreSQL materialization within 2x of DuckDB: "
          f"{'MET' if m is not None and m <= 2 else 'NOT MET'} (ratio {m if m is None else round(m, 2)})")
    return ratios | {"same_solution": same}


WRITE_STAGES = ("private_state", "row_ids", "row_state", "materialization", "cross_version_check", "version_table", "delta")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--data")
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--postgres", action="store_true", help="only PostgreSQL (a throwaway server)")
    which.add_argument("--duckdb", action="store_true", help="only DuckDB (a file)")
    ap.add_argument("--memory-limit", default="3GB", help="DuckDB memory_limit for the release (default 3GB)")
    ap.add_argument("--duckdb-threads", type=int, help="DuckDB threads (default: all cores); 1 compares with "
                    "PostgreSQL's single-threaded writes like for like")
    ap.add_argument("--second-version", action="store_true", help="then change ~1%% of the rows and publish v2 "
                    "(cross-version check, delta, held-back records), timed stage by stage")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--second", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child, second=args.second)
        return
    backends = ["postgres"] if args.postgres else ["duckdb"] if args.duckdb else ["duckdb", "postgres"]
    csv = adult_csv(args.data)
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="ppdp-scale-") as tmp:
        work = Path(tmp)
        for b in backends:
            (work / b).mkdir()
        t0 = time.perf_counter()
        gen = work / "scale.duckdb"
        generate_duckdb(gen, args.rows, csv)
        gen_s = time.perf_counter() - t0
        server = None
        try:
            if "postgres" in backends:
                from connectors.throwaway_postgres import PostgresServer

                server = PostgresServer.start()
                t1 = time.perf_counter()
                load_postgres(server.url, gen)
                load_s = time.perf_counter() - t1
            for b in backends:  # the DuckDB release writes into gen, so PostgreSQL was loaded first
                results[b] = run_backend(work, b, gen, args.memory_limit, server, args.duckdb_threads,
                                         args.rows if args.second_version else 0)
                results[b].update(rows=args.rows, generate_seconds=gen_s, cores=os.cpu_count())
                if b == "postgres":
                    results[b]["load_seconds"] = load_s
                print_one(results[b], args.rows)
        finally:
            if server:
                server.stop()
    out_dir = ROOT / "benchmarks" / "results"
    if len(backends) == 2:
        ratios = compare(results["duckdb"], results["postgres"], args.rows)
        suffix = (f"_duckdb{args.duckdb_threads}thread" if args.duckdb_threads else "") + ("_v2" if args.second_version else "")
        (out_dir / f"scale_compare{suffix}.json").write_text(json.dumps(
            {"rows": args.rows, "cores": os.cpu_count(), "duckdb_threads": args.duckdb_threads or "all",
             "duckdb": results["duckdb"], "postgres": results["postgres"],
             "ratio_postgres_over_duckdb": ratios}, indent=2))
        return
    res = results[backends[0]]
    if backends == ["duckdb"]:
        ok = res["total_seconds"] <= 120 and res["peak_rss_mb"] < 4096
        print(f"target <= 120 s and < 4 GB: {'MET' if ok else 'NOT MET'}")
    (out_dir / ("scale_postgres.json" if backends == ["postgres"] else "scale.json")).write_text(json.dumps(res, indent=2))


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
