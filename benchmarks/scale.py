"""End-to-end release at scale: adult resampled to N rows, k = 5, 8 QIDs, lattice search.

    python benchmarks/scale.py --rows 1000000               # DuckDB and PostgreSQL, same data (default)
    python benchmarks/scale.py --rows 10000000 --duckdb     # DuckDB file only
    python benchmarks/scale.py --rows 1000000 --postgres    # a throwaway PostgreSQL server only
    python benchmarks/scale.py --rows 10000000 --engine spark --resample rare   # Spark SQL, local[2]

``--engine duckdb|postgres|spark|both`` (both = DuckDB and PostgreSQL; ``--duckdb`` / ``--postgres``
are the old spellings).

Resamplings (``--resample``):

* ``uniform`` (default): row i (1..N) is adult's row ``hash(i - 1, 42) % 30162``, so every QID
  combination keeps its share of adult and, at millions of rows, no class is smaller than k:
  nothing needs suppressing.
* ``rare``: adult's 30,162 rows split by their 8-QID combination. The 14,021 rows whose
  combination occurs exactly once in adult are kept exactly once each (their natural rarity: a
  combination unique in the sample stays unique in the N-row table); the other N - 14,021 rows
  are drawn by the same hash from the 16,141 rows whose combination occurs at least twice (which
  become classes of hundreds or thousands of rows). At level 0 the unique rows are classes of
  one, so the k = 5 lattice search has to suppress them or generalize everything: it suppresses.

Spark (``--engine spark``): the resampled table is written by DuckDB (``COPY ... TO`` Parquet, in
this parent process, never in Python objects) under the warehouse, then registered as the
external table ``default.adult`` in the warehouse's Derby metastore by a Spark process of its own;
the release runs in a third process over ``spark://local[2]?warehouse=...`` with
``spark.driver.memory`` set (``--spark-driver-memory``). "Peak memory of ppdp's own process" is the
ru_maxrss of that Python process (RUSAGE_SELF, read by the process itself at the end); the JVM that
pyspark starts is a separate process, whose peak (VmHWM in /proc/<pid>/status) is reported beside
it. Writes benchmarks/results/scale_spark[_rare].json and .md.

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
    return ROOT / "src" / "ppdp" / "engine" / "data" / "adult" / "adult.csv"


BASE = "CREATE TEMP TABLE base AS SELECT row_number() OVER () - 1 AS rn, * FROM read_csv(?, delim = ';', header = true)"
UNIFORM = ("SELECT CAST(r.range + 1 AS BIGINT) AS id, base.* EXCLUDE (rn) FROM range({n}) AS r "
           "JOIN base ON base.rn = hash(r.range, 42) % {base_rows}")
QID_LIST = ", ".join(f'"{q}"' for q in QIDS)
# rare: split adult by how often its 8-QID combination occurs (see the module docstring)
RARE_SPLIT = (
    f"CREATE TEMP TABLE tagged AS SELECT *, count(*) OVER (PARTITION BY {QID_LIST}) AS combo_n FROM base",
    "CREATE TEMP TABLE common AS SELECT row_number() OVER (ORDER BY rn) - 1 AS crn, * EXCLUDE (combo_n) FROM tagged WHERE combo_n > 1",
    "CREATE TEMP TABLE rare AS SELECT row_number() OVER (ORDER BY rn) AS rrn, * EXCLUDE (combo_n) FROM tagged WHERE combo_n = 1",
)
RARE = ("SELECT CAST(r.range + 1 AS BIGINT) AS id, common.* EXCLUDE (crn, rn) FROM range({n_common}) AS r "
        "JOIN common ON common.crn = hash(r.range, 42) % {common_rows} "
        "UNION ALL SELECT CAST({n_common} + rrn AS BIGINT) AS id, rare.* EXCLUDE (rrn, rn) FROM rare")


def resample_select(con, n: int, csv: Path, resample: str) -> str:
    """The SELECT of the resampled table (id + adult's columns), over temp tables of ``con``."""
    con.execute(BASE, [str(csv)])
    base_rows = con.execute("SELECT count(*) FROM base").fetchone()[0]
    if resample == "uniform":
        return UNIFORM.format(n=int(n), base_rows=base_rows)
    for stmt in RARE_SPLIT:
        con.execute(stmt)
    rare = con.execute("SELECT count(*) FROM rare").fetchone()[0]
    common = con.execute("SELECT count(*) FROM common").fetchone()[0]
    if n <= rare:
        sys.exit(f"--resample rare needs more than {rare:,} rows (adult's unique QID combinations)")
    return RARE.format(n_common=int(n) - rare, common_rows=common)


def generate_duckdb(path: Path, n: int, csv: Path, resample: str = "uniform") -> None:
    import duckdb

    con = duckdb.connect(str(path))
    con.execute(f"CREATE TABLE adult AS {resample_select(con, n, csv, resample)}")
    con.close()


def generate_parquet(folder: Path, n: int, csv: Path, resample: str) -> None:
    """The resampled table as Parquet files under ``folder`` (DuckDB streams it: no rows in Python)."""
    import duckdb

    folder.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    con.execute("SET preserve_insertion_order = false")
    select = resample_select(con, n, csv, resample)
    # several files of 1M-row groups: Spark reads them in parallel splits
    con.execute(f"COPY ({select}) TO '{folder}' (FORMAT parquet, PER_THREAD_OUTPUT true, ROW_GROUP_SIZE 1000000)")
    con.close()


def register_spark_table(url: str, folder: str) -> None:
    """Runs in its own process: ``default.adult`` as an external Parquet table over ``folder``."""
    from ppdp.connectors.spark_connector import session_for

    session = session_for(url)
    session.sql("DROP TABLE IF EXISTS `default`.`adult`")
    session.sql(f"CREATE TABLE `default`.`adult` USING parquet LOCATION '{folder}'")
    print(f"registered default.adult: {session.table('`default`.`adult`').count():,} rows")


def spark_url(warehouse: Path, driver_memory: str, rows: int) -> str:
    """The release's Spark URL: local[2] (the machine's cores), the Derby catalog beside the
    tables (the product's default: a later process finds them), the driver's heap set explicitly,
    and shuffle partitions growing with the rows (a sort of 100M rows in 4 tasks spills a lot)."""
    partitions = max(4, min(64, rows // 2_000_000))
    return (f"spark://local[2]?warehouse={warehouse}&conf.spark.driver.memory={driver_memory}"
            f"&conf.spark.sql.shuffle.partitions={partitions}")


def jvm_peak_mb() -> float | None:
    """Peak RSS (VmHWM) of this process's Spark JVM, or None without one."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        return None
    session = SparkSession.getActiveSession()
    if session is None:
        return None
    pid = session._jvm.java.lang.ProcessHandle.current().pid()
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return None


def spec_file(workdir: Path, url: str, schema: str | None) -> Path:
    hier = ROOT / "src" / "ppdp" / "engine" / "data" / "adult"
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
    from ppdp.connectors import connect
    from ppdp.engine.core.spec import load_spec
    from ppdp.engine.release.run import run_release

    spec = load_spec(spec_path)
    t0 = time.perf_counter()

    def phase(name: str) -> None:  # a long run's log shows how far it got
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"[{time.perf_counter() - t0:9.1f} s] {name}; peak RSS so far {rss:,.0f} MB", file=sys.stderr, flush=True)

    # every stage's end in the log too (a 100M-row run takes long: its partial figures count)
    from ppdp.engine.methods.context import StageClock

    mark = StageClock.mark

    def logged_mark(clock: StageClock, name: str) -> None:
        mark(clock, name)
        phase(f"{name} took {clock.seconds[name]:.1f} s")

    StageClock.mark = logged_mark  # type: ignore[method-assign]
    outcome = run_release(spec, progress=False, on_phase=phase)
    total = time.perf_counter() - t0
    m = outcome.run.metrics
    result = {
        "total_seconds": total, "stages": m["stage_seconds"], "td": m["td"], "suppressed": m["suppressed"],
        "records": m["records"], "certified": outcome.run.solution["certified"], "verification": outcome.run.verification["passed"],
        "levels": outcome.run.solution["levels"], "maxrss_mb_self": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "jvm_peak_mb": jvm_peak_mb(),  # None without Spark; the JVM is not ppdp's Python process
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
    elif backend == "spark":
        url, schema = str(gen), None  # gen is the Spark URL here
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
    if backend == "spark":
        # RUSAGE_CHILDREN covers the child's own children too (the JVM, reaped by it): the
        # Python process's peak is the one it read itself
        res.update(peak_rss_mb=res["maxrss_mb_self"], peak_rss_exact=True, peak_rss_process_tree_mb=peak_mb)
    return res


def print_one(res: dict, rows: int) -> None:
    print(f"\nppdp end-to-end release, {rows:,} rows from {res['source']} ({os.cpu_count()} cores)")
    print(f"{'stage':<28}{'seconds':>10}")
    for k, v in res["stages"].items():
        print(f"{k:<28}{v:>10.2f}")
    print(f"{'total (run_release)':<28}{res['total_seconds']:>10.2f}")
    print(f"{'wall incl. interpreter':<28}{res['wall_seconds_incl_startup']:>10.2f}")
    print(f"peak memory of the release process (Python, ppdp's own): {res['peak_rss_mb']:,.0f} MB")
    if res.get("jvm_peak_mb") is not None:
        print(f"peak memory of the Spark JVM (a separate process, driver heap {res.get('spark_driver_memory')}): "
              f"{res['jvm_peak_mb']:,.0f} MB")
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
    which.add_argument("--engine", choices=["duckdb", "postgres", "spark", "both"],
                       help="where the release runs (default both = DuckDB and PostgreSQL)")
    which.add_argument("--postgres", action="store_true", help="only PostgreSQL (a throwaway server); = --engine postgres")
    which.add_argument("--duckdb", action="store_true", help="only DuckDB (a file); = --engine duckdb")
    ap.add_argument("--resample", choices=["uniform", "rare"], default="uniform",
                    help="uniform: adult's rows by hash; rare: adult's unique QID combinations kept once each "
                    "(suppression happens); see the docstring")
    ap.add_argument("--memory-limit", default="3GB", help="DuckDB memory_limit for the release (default 3GB)")
    ap.add_argument("--duckdb-threads", type=int, help="DuckDB threads (default: all cores); 1 compares with "
                    "PostgreSQL's single-threaded writes like for like")
    ap.add_argument("--spark-driver-memory", default="6g", help="spark.driver.memory of the release's JVM (default 6g)")
    ap.add_argument("--workdir", help="where the generated data goes (default: a temporary folder, removed after)")
    ap.add_argument("--second-version", action="store_true", help="then change ~1%% of the rows and publish v2 "
                    "(cross-version check, delta, held-back records), timed stage by stage")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--second", default="", help=argparse.SUPPRESS)
    ap.add_argument("--register-spark", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child, second=args.second)
        return
    if args.register_spark:
        register_spark_table(*args.register_spark)
        return
    engine = args.engine or ("postgres" if args.postgres else "duckdb" if args.duckdb else "both")
    csv = adult_csv(args.data)
    if engine == "spark":
        if args.second_version:
            sys.exit("--second-version is not measured on Spark yet")
        with tempfile.TemporaryDirectory(prefix="ppdp-scale-spark-", dir=args.workdir) as tmp:
            res = run_spark(Path(tmp), args.rows, csv, args.resample, args.spark_driver_memory)
        print_one(res, args.rows)
        write_spark_results(res, args)
        return
    backends = {"postgres": ["postgres"], "duckdb": ["duckdb"]}.get(engine, ["duckdb", "postgres"])
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="ppdp-scale-", dir=args.workdir) as tmp:
        work = Path(tmp)
        for b in backends:
            (work / b).mkdir()
        t0 = time.perf_counter()
        gen = work / "scale.duckdb"
        generate_duckdb(gen, args.rows, csv, args.resample)
        gen_s = time.perf_counter() - t0
        server = None
        try:
            if "postgres" in backends:
                from ppdp.connectors.throwaway_postgres import PostgresServer

                server = PostgresServer.start()
                t1 = time.perf_counter()
                load_postgres(server.url, gen)
                load_s = time.perf_counter() - t1
            for b in backends:  # the DuckDB release writes into gen, so PostgreSQL was loaded first
                results[b] = run_backend(work, b, gen, args.memory_limit, server, args.duckdb_threads,
                                         args.rows if args.second_version else 0)
                results[b].update(rows=args.rows, generate_seconds=gen_s, cores=os.cpu_count(), resample=args.resample)
                if b == "postgres":
                    results[b]["load_seconds"] = load_s
                print_one(results[b], args.rows)
        finally:
            if server:
                server.stop()
    out_dir = ROOT / "benchmarks" / "results"
    rare = "_rare" if args.resample == "rare" else ""
    if len(backends) == 2:
        ratios = compare(results["duckdb"], results["postgres"], args.rows)
        suffix = (f"_duckdb{args.duckdb_threads}thread" if args.duckdb_threads else "") + ("_v2" if args.second_version else "") + rare
        (out_dir / f"scale_compare{suffix}.json").write_text(json.dumps(
            {"rows": args.rows, "cores": os.cpu_count(), "duckdb_threads": args.duckdb_threads or "all",
             "duckdb": results["duckdb"], "postgres": results["postgres"],
             "ratio_postgres_over_duckdb": ratios}, indent=2))
        return
    res = results[backends[0]]
    if backends == ["duckdb"]:
        ok = res["total_seconds"] <= 120 and res["peak_rss_mb"] < 4096
        print(f"target <= 120 s and < 4 GB: {'MET' if ok else 'NOT MET'}")
    (out_dir / (("scale_postgres" if backends == ["postgres"] else "scale") + rare + ".json")).write_text(json.dumps(res, indent=2))


def run_spark(work: Path, rows: int, csv: Path, resample: str, driver_memory: str) -> dict:
    """Generate (DuckDB -> Parquet), register (a Spark process), release (another); the record."""
    warehouse = work / "warehouse"
    folder = warehouse / "source" / "adult"
    (work / "spark").mkdir(parents=True)
    t0 = time.perf_counter()
    generate_parquet(folder, rows, csv, resample)
    gen_s = time.perf_counter() - t0
    size_mb = sum(f.stat().st_size for f in folder.iterdir()) / 2**20
    print(f"generated {rows:,} rows ({resample}) as Parquet, {size_mb:,.0f} MB, in {gen_s:.1f} s", flush=True)
    url = spark_url(warehouse, driver_memory, rows)
    t1 = time.perf_counter()
    proc = subprocess.run([sys.executable, __file__, "--register-spark", url, str(folder)])
    if proc.returncode:
        sys.exit(proc.returncode)
    reg_s = time.perf_counter() - t1
    res = run_backend(work, "spark", url, "", None)  # type: ignore[arg-type]
    res.update(rows=rows, resample=resample, generate_seconds=gen_s, register_seconds=reg_s, parquet_mb=size_mb,
               cores=os.cpu_count(), spark_url=url.replace(str(work), "<tmp>"), spark_driver_memory=driver_memory)
    return res


def write_spark_results(res: dict, args) -> None:
    """benchmarks/results/scale_spark[_rare][_<rows>].json and the short .md beside it."""
    size = f"{args.rows // 1_000_000}M" if args.rows % 1_000_000 == 0 else str(args.rows)
    name = "scale_spark" + ("_rare" if args.resample == "rare" else "") + f"_{size}"
    out_dir = ROOT / "benchmarks" / "results"
    (out_dir / f"{name}.json").write_text(json.dumps(res, indent=2))
    jvm = f"{res['jvm_peak_mb']:,.0f} MB" if res.get("jvm_peak_mb") is not None else "not read"
    lines = [f"# ppdp release on Spark, {args.rows:,} rows ({args.resample} resample of adult)", "",
             f"Command: `python benchmarks/scale.py --engine spark --rows {args.rows} --resample {args.resample}"
             f" --spark-driver-memory {args.spark_driver_memory}`", "",
             f"Machine: {os.cpu_count()} cores shared with other agents' jobs (times are not from an idle machine); "
             f"Spark local[2], `{res['spark_url']}`.", "",
             f"Generation (DuckDB -> Parquet, not timed in the release): {res['generate_seconds']:.1f} s, "
             f"{res['parquet_mb']:,.0f} MB; table registration: {res['register_seconds']:.1f} s.", "",
             "| stage | seconds |", "|---|---:|"]
    lines += [f"| {k} | {v:.2f} |" for k, v in res["stages"].items()]
    lines += [f"| **total (run_release)** | **{res['total_seconds']:.2f}** |",
              f"| wall incl. interpreter + Spark start | {res['wall_seconds_incl_startup']:.2f} |", "",
              f"- Peak memory of ppdp's own process (the Python process running run_release, ru_maxrss): "
              f"**{res['peak_rss_mb']:,.0f} MB** (target < 2 GB: {'MET' if res['peak_rss_mb'] < 2048 else 'NOT MET'})",
              f"- Peak memory of the Spark JVM (a separate process started by pyspark, VmHWM; "
              f"spark.driver.memory={res['spark_driver_memory']}): {jvm}",
              f"- TD {res['td']:,.1f}; suppressed {res['suppressed']:,.0f} of {res['records']:,}; "
              f"levels {res['levels']}; certified {res['certified']}; verification "
              f"{'passed' if res['verification'] else 'FAILED'}"]
    (out_dir / f"{name}.md").write_text("\n".join(lines) + "\n")
    print(f"wrote benchmarks/results/{name}.json and .md")


def load_postgres(url: str, gen: Path) -> None:
    import duckdb

    from ppdp.connectors import connect

    con = connect(url)
    src = duckdb.connect(str(gen), read_only=True)
    reader = src.sql("SELECT * FROM adult")
    con.write_frame("public", "adult", reader.pl())
    src.close()
    con.close()


if __name__ == "__main__":
    main()
