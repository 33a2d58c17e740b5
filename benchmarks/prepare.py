"""The fixed cost of a release before its search (prepare), stage by stage, cold and warm.

    .venv/bin/python benchmarks/prepare.py [--rounds 5] [--reps 20] [--data DIR]
                                           [--baseline SRC] [--out benchmarks/results/prepare]

What is timed is a release's own ``engine.release.stages.validate.prepare`` on a DuckDB file, as
``ppdp run`` calls it: adult (30,162 records, 8 QIDs, SA salary-class) and creditcard's
1,000-record sample with 10 QIDs (SA default-payment-next-month; benchmarks/vs_arx.py's
``creditcard-q10-1000``), each with its ARX hierarchy files and k-anonymity k = 2 with equal-
distance t-closeness t = 0.2 (so t-closeness's Q is read too). Each round starts one fresh
process per table: its first ``prepare`` is the *cold* one (empty caches, DuckDB's and the
modules' first use), then ``--reps`` more after two warm-ups are the *warm* ones, what a job
that runs again in a long-lived process (``ppdp serve``, the jobs runner, benchmarks/vs_arx.py)
pays: such a process has searched before, so before the warm ones one evaluator kernel is loaded
(``start_jit``: Numba's JIT started, as a search leaves it). Every process finds its modules' bytecode cached, as an installed package's is. Rounds
alternate the tables (and, with ``--baseline SRC``, this tree's ``src`` and SRC,
another checkout's ``src``), so every column sees the same load. Reported: medians.

Stages (each function of the release path wrapped with a timer, so the stages are the code a
run executes, not a copy of it): *columns* (``described_columns``), *key check* (rows, distinct and
NULL keys: ``key_counts``, the key read in Arrow or the SQL query, and any query prepare runs
outside a stage; built and run. Cold, it is the process's first SQL built, so it holds the import
of sqlglot's DuckDB dialect, which any SQL pays once), *hierarchies* (``load_hierarchy`` of every
QID: the file stat'ed, read and parsed once per content), *Q* (``reference_distribution``, its
query included: a query inside a stage is that stage's), *rows query*
(the source's text rows as Arrow), *encoding* (``encode_rows``, or the GROUP BY and
``encode_histogram`` above ``ROWS_READ_LIMIT``), *checks* (the models bound and
``check_possible``), *other* (the rest: identifiers, roles, models built), *total*. And
*vs_arx prepare*: benchmarks/vs_arx.py's ``prepare`` + ``bind``, warm (its hierarchies read
through the same cache, its column types and row count read once, as ARX's data is loaded once).
With ``--vs-arx KEYS``: only vs_arx.py's prepare of each table (full-size ones too), per tree
(vs_arx_prepare.json and .md). With ``--reruns N``: a job that runs again with nothing changed, as a whole ``ppdp run`` process
(skipped after validate and identify), N times per tree. Outputs: prepare.json and prepare.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TABLES = ("creditcard-q10-1000", "adult")
STAGES = ("columns", "key check", "hierarchies", "Q", "rows query", "encoding", "checks", "other", "total")


def write_spec(ds, db: Path, columns: list[str], path: Path) -> Path:
    from benchmarks.process_vs_arx import toml_str

    drop = [c for c in columns if c not in ds.qids and c not in ("ppdp_key", ds.sa)]
    lines = ["[source]", f"database = {toml_str('duckdb://' + str(db))}", 'table = "source"', 'key = "ppdp_key"',
             "drop = [" + ", ".join(toml_str(c) for c in drop) + "]"]
    for q, f in zip(ds.qids, ds.hierarchy_files, strict=True):
        lines += ["[[quasi_identifiers]]", f"column = {toml_str(q)}",
                  f'hierarchy = {{ type = "arx", file = {toml_str(str(f))}, duplicates = "keep-last" }}']
    lines += ["[sensitive]", f"columns = [{toml_str(ds.sa)}]",
              "[[privacy.models]]", 'name = "k-anonymity"', "k = 2",
              "[[privacy.models]]", 'name = "t-closeness"', "t = 0.2", 'distance = "equal"',
              "[optimizer]", 'name = "lattice"', "[output]", 'schema = "published"', 'name = "release"']
    path.write_text("\n".join(lines) + "\n")
    return path


def child(spec_path: str, key: str, data: str, reps: int, warmups: int) -> dict:
    """One fresh process: the cold prepare, then ``reps`` warm ones after ``warmups``."""
    sys.path.insert(0, str(REPO))
    from ppdp.connectors import connect
    from ppdp.engine.core.spec import load_spec
    from ppdp.engine.release.run import database_url
    from ppdp.engine.release.stages import validate as VAL

    spent: dict[str, float] = {}
    active: list[str] = []

    def timed(stage: str, fn, inherit: bool = False):
        def wrapper(*a, **kw):
            # a query (inherit) inside a stage is that stage's: Q's distribution query is Q's
            active.append(active[-1] if inherit and active else stage)
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                dt = time.perf_counter() - t0
                own = active.pop()
                spent[own] = spent.get(own, 0.0) + dt
                if active:  # a stage inside another: not counted twice
                    spent[active[-1]] = spent.get(active[-1], 0.0) - dt
        return wrapper

    originals = [(VAL, name, getattr(VAL, name)) for name in ("described_columns", "load_hierarchy", "reference_distribution",
                                                              "read_encoded", "encode_rows", "encode_histogram",
                                                              "check_possible")]
    originals.append((VAL.Q, "key_check_query", VAL.Q.key_check_query))
    for name, stage in (("described_columns", "columns"), ("load_hierarchy", "hierarchies"),
                        ("reference_distribution", "Q"), ("read_encoded", "rows query"), ("encode_rows", "encoding"),
                        ("encode_histogram", "encoding"), ("check_possible", "checks")):
        setattr(VAL, name, timed(stage, getattr(VAL, name)))
    VAL.Q.key_check_query = timed("key check", VAL.Q.key_check_query)  # its SQL built, the first SQL of a run
    if hasattr(VAL, "key_counts"):  # the key check, read in Arrow or counted by SQL (a baseline may lack it)
        originals.append((VAL, "key_counts", VAL.key_counts))
        VAL.key_counts = timed("key check", VAL.key_counts)
    spec = load_spec(spec_path)
    con = connect(database_url(spec))
    con.query = timed("key check", con.query, inherit=True)  # prepare's own query; inside a stage it is that stage's
    con.query_arrow = timed("rows query", con.query_arrow, inherit=True)

    def one() -> dict[str, float]:
        spent.clear()
        t0 = time.perf_counter()
        VAL.prepare(spec, con, None)
        total = (time.perf_counter() - t0) * 1000.0
        out = {s: spent.get(s, 0.0) * 1000.0 for s in STAGES[:-2]}
        out["other"] = total - sum(out.values())
        out["total"] = total
        return out

    cold = one()
    start_jit(VAL.prepare(spec, con, None).table)
    for _ in range(warmups):
        one()
    warm = [one() for _ in range(reps)]
    for owner, name, fn in originals:  # the same calls without the timers: the warm total as a run pays it
        setattr(owner, name, fn)
    con.query, con.query_arrow = type(con).query.__get__(con), type(con).query_arrow.__get__(con)
    bare = []
    for _ in range(reps):
        t0 = time.perf_counter()
        VAL.prepare(spec, con, None)
        bare.append((time.perf_counter() - t0) * 1000.0)
    vs_arx: list[float] = []
    if data:
        from benchmarks import vs_arx as V

        ds = V.dataset(Path(data), key, Path("/tmp/ppdp-vs-arx"))
        loaded = V.load(ds, ds.sa)
        models = [V.build_model("k-anonymity", {"k": 2}), V.build_model("t-closeness", {"t": 0.2, "distance": "equal"})]
        for i in range(warmups + reps):
            t0 = time.perf_counter()
            V.bind(models, V.prepare(loaded, [ds.sa], models), ds)
            if i >= warmups:
                vs_arx.append((time.perf_counter() - t0) * 1000.0)
    con.close()
    return {"cold": cold, "warm": warm, "bare": bare, "vs_arx": vs_arx}


def start_jit(table) -> None:
    """What a long-lived process has done before its next prepare: searched, so Numba's JIT is
    started (one kernel of the evaluator loaded; engine/core/encoding.py uses its own kernels
    from then on, and its plain twins before)."""
    import numpy as np

    from ppdp.engine.kernels import classes as K

    gen, _, n_gen = table.lookup
    K.classify(np.zeros(table.n_qids, dtype=np.int64), table.codes, gen, n_gen, np.ones(table.n_rows, dtype=np.bool_))


def _env(src: Path) -> dict[str, str]:
    """A child's environment: ``src`` first on the path, and its modules' bytecode cached as an
    installed package's is (pip compiles it at install), even under PYTHONDONTWRITEBYTECODE."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"PYTHONPATH": str(src)}


def hierarchy_sources(ds, reps: int = 30) -> dict[str, float]:
    """Where a re-run could take its hierarchies from, interleaved, median ms: every file parsed,
    every file read and its parse reused (``read_arx_csv``'s cache), and a lower bound of reading
    them from the database (the query of a stored version's rows of ``_ppdp.hierarchies``, in an
    in-memory DuckDB, before any Hierarchy is rebuilt from them)."""
    from ppdp.connectors import connect
    from ppdp.engine.core import catalog
    from ppdp.engine.core import hierarchy as H
    from ppdp.sql import catalog as C

    def files() -> list:
        return [H.read_arx_csv(f, q, duplicates="keep-last") for f, q in zip(ds.hierarchy_files, ds.qids, strict=True)]

    con = connect("duckdb://:memory:")
    catalog.ensure_schema(con)
    catalog.store_hierarchies(con, "r", 1, files(), "run")
    sql = C.version_hierarchies(con.dialect)

    def parsed() -> None:
        H._PARSED.clear()
        files()

    ways = {"parsed": parsed, "cached": files, "_ppdp.hierarchies query": lambda: con.query(sql, ["r", 1])}
    spent: dict[str, list[float]] = {w: [] for w in ways}
    for _ in range(reps):
        for w, fn in ways.items():
            t0 = time.perf_counter()
            fn()
            spent[w].append((time.perf_counter() - t0) * 1000.0)
    con.close()
    return {w: round(statistics.median(v), 3) for w, v in spent.items()}


def reruns(specs: dict[str, Path], trees: dict[str, Path], reps: int) -> dict[str, dict[str, float]]:
    """A job that runs again with nothing changed, as a whole process: ``ppdp run`` on a database
    whose current version it published (the first run, not timed), skipped (exit code 99) after
    validate and identify; median ms per tree, the trees interleaved."""
    spent: dict[tuple[str, str], list[float]] = {}
    for r in range(-1, reps):
        for tree, src in (list(trees.items()) if r % 2 == 0 else list(reversed(list(trees.items())))):
            for key, spec in specs.items():
                env = _env(src)
                own = spec.with_name(f"rerun-{tree}-{key}.toml")
                if r == -1:  # a database of this tree's own, its version published once
                    text = spec.read_text()
                    db = text.split("duckdb://", 1)[1].split('"', 1)[0]
                    fresh = Path(db).with_name(f"rerun-{tree}-{key}.duckdb")
                    fresh.write_bytes(Path(db).read_bytes())
                    own.write_text(text.replace(db, str(fresh)))
                t0 = time.perf_counter()
                out = subprocess.run([sys.executable, "-m", "ppdp.engine.app.cli", "run", str(own), "--no-progress"],
                                     capture_output=True, text=True, env=env)
                ms = (time.perf_counter() - t0) * 1000.0
                if out.returncode not in ((0, 99) if r == -1 else (99,)):
                    raise RuntimeError(f"ppdp run exited {out.returncode}: {out.stderr[-1000:]}")
                if r >= 0:
                    spent.setdefault((tree, key), []).append(ms)
    return {f"{tree} {key}": round(statistics.median(v), 1) for (tree, key), v in spent.items()}


def vs_arx_child(keys: list[str], data: str, reps: int, warmups: int) -> dict:
    """One fresh process: benchmarks/vs_arx.py's ``prepare`` of each table, warm (``reps`` after
    ``warmups``), median and minimum ms."""
    sys.path.insert(0, str(REPO))
    from benchmarks import vs_arx as V

    out = {}
    for key in keys:
        ds = V.dataset(Path(data), key, Path("/tmp/ppdp-vs-arx"))
        loaded = V.load(ds, ds.sa)
        sa = [ds.sa] if ds.sa else []
        start_jit(V.prepare(loaded, sa))  # vs_arx.py searches between its prepares
        spent, cpu = [], []
        for i in range(warmups + reps):
            t0, c0 = time.perf_counter(), time.process_time()
            V.prepare(loaded, sa)
            if i >= warmups:
                spent.append((time.perf_counter() - t0) * 1000.0)
                cpu.append((time.process_time() - c0) * 1000.0)
        out[key] = {"median": statistics.median(spent), "min": min(spent), "cpu": statistics.median(cpu)}
    return out


def vs_arx_tables(keys: list[str], trees: dict[str, Path], root: Path, rounds: int, reps: int, warmups: int,
                  out: Path) -> None:
    """``--vs-arx KEYS``: vs_arx.py's prepare (the rows query and the encoding, no key check and no
    Q) on full-size and sampled tables, one fresh process per tree and round, rounds interleaved;
    per tree the median of the rounds' medians and the minimum. Writes vs_arx_prepare.json/.md."""
    got: dict[str, list[dict]] = {t: [] for t in trees}
    for r in range(rounds):
        for tree, src in (list(trees.items()) if r % 2 == 0 else list(reversed(list(trees.items())))):
            res = subprocess.run([sys.executable, __file__, "--vs-arx-child", ",".join(keys), "--reps", str(reps),
                                  "--warmups", str(warmups), "--data", str(root)],
                                 capture_output=True, text=True, env=_env(src), cwd=REPO)
            if res.returncode:
                raise RuntimeError(res.stderr[-2000:])
            got[tree].append(json.loads(res.stdout.strip().splitlines()[-1]))
    rows = {k: {t: {"median_ms": round(statistics.median(g[k]["median"] for g in got[t]), 2),
                    "min_ms": round(min(g[k]["min"] for g in got[t]), 2),
                    "cpu_ms": round(statistics.median(g[k]["cpu"] for g in got[t]), 2)} for t in trees} for k in keys}
    from benchmarks import vs_arx as V

    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "commit": V.git_commit(),
            "trees": {t: str(s) for t, s in trees.items()}, "rounds": rounds, "reps": reps,
            "load_average": [round(x, 2) for x in os.getloadavg()]}
    (out / "vs_arx_prepare.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    names = list(trees)
    md = ["# benchmarks/vs_arx.py's prepare, warm (rows query + encoding)", "",
          f"{rounds} rounds x {reps} prepares per table and tree, one fresh process per round, rounds interleaved; "
          f"commit {meta['commit']}, trees {meta['trees']}; load average {meta['load_average']} at the end. ms: the "
          "median of the rounds' medians, and the minimum of all; *CPU*: the median of the rounds' median CPU "
          "time of the process (every thread: DuckDB's too), less sensitive to the machine's load than the wall "
          "clock.", "",
          "| table | " + " | ".join(f"{t} median" for t in names) + " | " + " | ".join(f"{t} min" for t in names)
          + " | " + " | ".join(f"{t} CPU" for t in names)
          + (" | ratio median | ratio min | ratio CPU |" if len(names) == 2 else " |"),
          "|---|" + "---:|" * (3 * len(names) + (3 if len(names) == 2 else 0))]
    for k, v in rows.items():
        cells = ([f"{v[t]['median_ms']:.2f}" for t in names] + [f"{v[t]['min_ms']:.2f}" for t in names]
                 + [f"{v[t]['cpu_ms']:.2f}" for t in names])
        if len(names) == 2:
            a, b = names
            cells += [f"{v[a]['median_ms'] / v[b]['median_ms']:.2f}", f"{v[a]['min_ms'] / v[b]['min_ms']:.2f}",
                      f"{v[a]['cpu_ms'] / v[b]['cpu_ms']:.2f}"]
        md.append(f"| {k} | " + " | ".join(cells) + " |")
    (out / "vs_arx_prepare.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmups", type=int, default=2)
    ap.add_argument("--data", help="folder holding arx/ (default: $PPDP_DATA or ../shared/data)")
    ap.add_argument("--baseline", type=Path, help="another checkout's src folder, timed in the same rounds")
    ap.add_argument("--reruns", type=int, default=0, help="also time this many skipped re-runs (whole processes)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/ppdp-prepare"))
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "prepare")
    ap.add_argument("--child", nargs=2, metavar=("SPEC", "KEY"), help=argparse.SUPPRESS)
    ap.add_argument("--vs-arx", help="comma-separated vs_arx.py table keys: time only vs_arx.py's prepare of "
                    "each (e.g. adult,fars,mach2019,creditcard,adult-1000), see vs_arx_tables")
    ap.add_argument("--vs-arx-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], args.child[1], args.data or "", args.reps, args.warmups)))
        return 0
    if args.vs_arx_child:
        print(json.dumps(vs_arx_child(args.vs_arx_child.split(","), args.data or "", args.reps, args.warmups)))
        return 0
    sys.path.insert(0, str(REPO))
    import duckdb

    from benchmarks import process_vs_arx as PV
    from benchmarks import vs_arx as V

    root = V.data_dir(args.data)
    if args.vs_arx:
        args.out.mkdir(parents=True, exist_ok=True)
        vs_arx_tables(args.vs_arx.split(","), {"this": REPO / "src"} | ({"baseline": args.baseline.resolve()} if args.baseline else {}),
                      root, args.rounds, args.reps, args.warmups, args.out)
        return 0
    args.work.mkdir(parents=True, exist_ok=True)
    specs, sources = {}, {}
    for key in TABLES:
        ds = V.dataset(root, key, args.work)
        assert ds is not None, f"no data for {key} under {root}"
        db = PV.make_db(ds, args.work)
        columns = [r[0] for r in duckdb.connect(str(db), read_only=True).execute("DESCRIBE source").fetchall()]
        specs[key] = write_spec(ds, db, columns, args.work / f"{key}.toml")
        sources[key] = hierarchy_sources(ds)
    trees = {"this": REPO / "src"} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    got: dict[tuple[str, str], list[dict]] = {}
    for r in range(-1, args.rounds):  # round -1 fills the OS file cache and each tree's Numba cache: not kept
        order = list(trees.items()) if r % 2 == 0 else list(reversed(list(trees.items())))
        for tree, src in order:
            for key in (TABLES if r % 2 == 0 else tuple(reversed(TABLES))):
                env = _env(src)
                out = subprocess.run([sys.executable, __file__, "--child", str(specs[key]), key, "--reps", str(args.reps),
                                      "--warmups", str(args.warmups), "--data", str(root)],
                                     capture_output=True, text=True, env=env, cwd=REPO)
                if out.returncode:
                    raise RuntimeError(out.stderr[-2000:])
                if r >= 0:
                    got.setdefault((tree, key), []).append(json.loads(out.stdout.strip().splitlines()[-1]))
    skipped = reruns(specs, trees, args.reruns) if args.reruns else {}
    rows = []
    for (tree, key), runs in got.items():
        warm = [w for run in runs for w in run["warm"]]
        cold = [run["cold"] for run in runs]
        rows.append({"tree": tree, "key": key,
                     "cold_median_ms": {s: round(statistics.median(c[s] for c in cold), 2) for s in STAGES},
                     "warm_median_ms": {s: round(statistics.median(w[s] for w in warm), 2) for s in STAGES},
                     "warm_total_ms_p10_p90": [round(x, 2) for x in statistics.quantiles([w["total"] for w in warm], n=10)[::8]],
                     "warm_total_untimed_stages_median_ms": round(statistics.median(x for run in runs for x in run["bare"]), 2),
                     "vs_arx_prepare_median_ms": round(statistics.median(x for run in runs for x in run["vs_arx"]), 2),
                     "cold_samples": len(cold), "warm_samples": len(warm)})
    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "commit": V.git_commit(),
            "baseline": str(args.baseline) if args.baseline else None, "rounds": args.rounds, "reps": args.reps,
            "load_average": [round(x, 2) for x in os.getloadavg()]}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "prepare.json").write_text(json.dumps({"meta": meta, "rows": rows, "hierarchy_sources": sources,
                                                             "skipped_rerun_ms": skipped}, indent=1)
                                          + "\n")
    md = ["# Prepare, stage by stage (a release's validate.prepare, cold and warm)", "",
          f"Medians: cold = the first prepare of {args.rounds} fresh processes per table, warm = {args.rounds} x "
          f"{args.reps} later ones in those processes; rounds interleaved; commit {meta['commit']}"
          + (f", baseline {args.baseline}" if args.baseline else "") + f"; load average {meta['load_average']} at the end. "
          "ms. *bare* = the warm total again without the stage timers (as a run pays it). *vs_arx* = "
          "benchmarks/vs_arx.py's prepare + bind, warm.", "",
          "| tree | table | when | " + " | ".join(STAGES) + " | bare | vs_arx |", "|---|---|---|" + "---:|" * (len(STAGES) + 2)]
    for r in rows:
        for when in ("cold", "warm"):
            vals = r[f"{when}_median_ms"]
            tail = (f" | {r['warm_total_untimed_stages_median_ms']:.1f} | {r['vs_arx_prepare_median_ms']:.1f} |"
                    if when == "warm" else " | | |")
            md.append(f"| {r['tree']} | {r['key']} | {when} | " + " | ".join(f"{vals[s]:.1f}" for s in STAGES) + tail)
    if args.baseline:
        md += ["", "Ratio this / baseline (warm total, bare, cold total, vs_arx):", ""]
        for key in TABLES:
            a = next(r for r in rows if r["tree"] == "this" and r["key"] == key)
            b = next(r for r in rows if r["tree"] == "baseline" and r["key"] == key)
            md.append(f"- {key}: warm {a['warm_median_ms']['total'] / b['warm_median_ms']['total']:.2f}, bare "
                      f"{a['warm_total_untimed_stages_median_ms'] / b['warm_total_untimed_stages_median_ms']:.2f}, cold "
                      f"{a['cold_median_ms']['total'] / b['cold_median_ms']['total']:.2f}, vs_arx "
                      f"{a['vs_arx_prepare_median_ms'] / b['vs_arx_prepare_median_ms']:.2f}")
    md += ["", "Hierarchies, every QID's, by where a re-run takes them from (median ms, interleaved, this tree): "
           "parsed from the files, the files read and their parses reused, and the query alone of a stored "
           "version's rows of `_ppdp.hierarchies`:", ""]
    md += [f"- {key}: " + ", ".join(f"{w} {ms:.2f}" for w, ms in sources[key].items()) for key in TABLES]
    if skipped:
        md += ["", f"A job that runs again with nothing changed, the whole `ppdp run` process (skipped, exit code 99; median "
               f"of {args.reruns}, interleaved; the spec above, k-anonymity and t-closeness, lattice): "
               + ", ".join(f"{k} {v:,.0f} ms" for k, v in skipped.items())]
    (args.out / "prepare.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
