"""A whole ``ppdp run`` process against a fresh ARX JVM process, on the same data and model.

    .venv/bin/python benchmarks/process_vs_arx.py [--reps 3] [--data DIR] [--baseline SRC] [--base-python PY]
                                                  [--case KEY] [--out benchmarks/results/process_vs_arx]

What a user waits for from the command line, start to end: ppdp's side is ``python -m
ppdp.engine.app.cli run spec.toml --no-progress`` in a fresh process (Python's start and imports,
Numba's cache load, validate, the search, the release's SQL, its verification and the run
record; its bytecode cached as an installed package's is, even under PYTHONDONTWRITEBYTECODE) on a fresh copy of a DuckDB file holding the source (the copy is not timed); ARX's side
is ``java ArxBench bench ... warmup=0 reps=1`` in a fresh JVM (its start, reading the CSV and the
hierarchies, one ``ARXAnonymizer.anonymize``). Rounds alternate which side goes first; medians
and ratio = ppdp / ARX. ARX writes nothing and verifies nothing; ppdp publishes and verifies a
release: the comparison favours ARX.

Cases: adult (30,162 records, 8 QIDs) k=5 with no limit (ppdp lattice), and creditcard's
1,000-record sample with 10 QIDs (benchmarks/vs_arx.py's) k=5 with a 0 % limit (ppdp flash).
With ``--baseline SRC`` (another checkout's ``src``) that tree's ``ppdp run`` is timed in the same
rounds, its place in the order rotating with the others. With ``--base-python PY`` (the Python of
a virtual environment holding only ppdp's required dependencies, no extras: what ``pip install
ppdp`` gives) this tree, and the baseline, are also timed under it, as extra columns: the figure
of record stays the development environment's, whose extras (scikit-learn, hence SciPy) Numba
imports when it first compiles or loads a kernel (its BLAS check). The import-time table is the
median of 3 interleaved ``-X importtime`` runs per side on the 1,000-record case (self times summed
by package; the instrumentation inflates them).
Outputs: process_vs_arx.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import duckdb

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks import vs_arx as V  # noqa: E402


def toml_str(s: str) -> str:
    return json.dumps(s)


def make_db(ds: V.Dataset, work: Path) -> Path:
    """A DuckDB file with the dataset as table ``source`` (text columns) and a key ``ppdp_key``."""
    db = work / f"{ds.key}.duckdb"
    if db.exists():
        db.unlink()
    con = duckdb.connect(str(db))
    con.execute(f"CREATE TABLE source AS SELECT row_number() OVER () AS ppdp_key, * FROM "
                f"read_csv({toml_str(str(ds.csv)).replace(chr(34), chr(39))}, delim=';', all_varchar=true, header=true)")
    con.close()
    return db


def write_spec(ds: V.Dataset, db: Path, columns: list[str], optimizer: str, limit: float | None, path: Path) -> Path:
    drop = [c for c in columns if c not in ds.qids and c != "ppdp_key"]
    lines = ["[source]", f"database = {toml_str('duckdb://' + str(db))}", 'table = "source"', 'key = "ppdp_key"',
             "drop = [" + ", ".join(toml_str(c) for c in drop) + "]"]
    for q, f in zip(ds.qids, ds.hierarchy_files, strict=True):
        lines += ["[[quasi_identifiers]]", f"column = {toml_str(q)}",
                  f'hierarchy = {{ type = "arx", file = {toml_str(str(f))}, duplicates = "keep-last" }}']
    lines += ["[[privacy.models]]", 'name = "k-anonymity"', "k = 5", "[optimizer]", f"name = {toml_str(optimizer)}",
              "budget = 100000000"]
    if limit is not None:
        lines += ["[optimizer.params]", f"suppression_limit = {limit}"]
    lines += ["[output]", 'schema = "published"', 'name = "release"']
    path.write_text("\n".join(lines) + "\n")
    return path


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, str, float]:
    """(wall ms, stdout, CPU ms: the user + system time of the process and every thread of it,
    from the children's resource usage before and after; one child at a time)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    ms = (time.perf_counter() - t0) * 1000.0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise RuntimeError(f"{cmd[0]} exited {out.returncode}: {[x for x in (out.stderr or out.stdout).splitlines() if not x.startswith(chr(9))][:3]}")
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000.0
    return ms, out.stdout, cpu


IMPORT_RUNS = 3  # -X importtime runs per side for the import table


def import_groups(stderr: str) -> tuple[dict[str, float], int]:
    """``-X importtime`` output -> (self ms by package group, modules imported). ppdp's own
    modules by subpackage, the others by top-level package, the standard library as one group."""
    stdlib = sys.stdlib_module_names
    ms: Counter[str] = Counter()
    n = 0
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        _, self_us, _cum, name = (x.strip() for x in line.replace("import time:", "|", 1).split("|"))
        parts = name.split(".")
        if parts[0] == "ppdp":
            group = ".".join(parts[:3] if len(parts) > 2 and parts[1] == "engine" else parts[:2])
        elif parts[0].lstrip("_") in stdlib or parts[0] in stdlib:
            group = "(standard library)"
        elif parts[0] in ("llvmlite",):
            group = "numba"
        else:
            group = parts[0].lstrip("_").split("_")[0] if parts[0].startswith("_") else parts[0]
        ms[group] += int(self_us) / 1000.0
        n += 1
    return dict(ms), n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--data", help="folder holding arx/ (default: $PPDP_DATA or ../shared/data)")
    ap.add_argument("--baseline", type=Path, help="another checkout's src folder, timed in the same rounds")
    ap.add_argument("--base-python", type=Path, help="a Python whose environment has ppdp's required dependencies only "
                    "(no extras): also time the run(s) under it, as extra columns")
    ap.add_argument("--case", action="append", choices=("adult", "creditcard-q10-1000"),
                    help="time only this case (repeatable; default: both)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/ppdp-process-vs-arx"))
    ap.add_argument("--arx-classpath", default="/tmp/arx-build/classpath.txt")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "process_vs_arx")
    args = ap.parse_args()
    root = V.data_dir(args.data)
    args.work.mkdir(parents=True, exist_ok=True)
    cp = Path(args.arx_classpath).read_text().strip()
    classes = args.work / "arx-classes"
    classes.mkdir(exist_ok=True)
    srcs = [REPO / "benchmarks" / "arx" / f for f in ("ArxSetup.java", "ArxBench.java")]
    subprocess.run(["javac", "-nowarn", "-cp", cp, "-d", str(classes), *map(str, srcs)], check=True, capture_output=True)
    java_cp = f"{classes}{os.pathsep}{cp}"
    trees = {"this": REPO / "src"} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    pythons = {"": sys.executable} | ({" (base install)": str(args.base_python)} if args.base_python else {})

    # as an installed ppdp starts: its modules' bytecode cached (pip compiles it at install; round
    # 0 writes it here), not compiled from source by every process, as PYTHONDONTWRITEBYTECODE would
    def env_of(src: Path) -> dict[str, str]:
        return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"PYTHONPATH": str(src)}

    sides = [(f"ppdp {tree}{py_label}", py, src) for tree, src in trees.items() for py_label, py in pythons.items()]
    cases = [("adult", "adult k=5, no limit (ppdp lattice)", "lattice", None, "k=5 supp=1.0"),
             ("creditcard-q10-1000", "creditcard 1,000 records, 10 QIDs, k=5, 0 % limit (ppdp flash)", "flash", 0.0,
              "k=5 supp=0.0")]
    rows = []
    imports: dict[str, dict] = {}
    for key, label, optimizer, limit, arx_tokens in cases:
        if args.case and key not in args.case:
            continue
        ds = V.dataset(root, key, args.work)
        assert ds is not None, f"no data for {key} under {root}"
        db = make_db(ds, args.work)
        columns = [r[0] for r in duckdb.connect(str(db), read_only=True).execute("DESCRIBE source").fetchall()]
        fresh = args.work / f"{key}-run.duckdb"
        spec = write_spec(ds, fresh, columns, optimizer, limit, args.work / f"{key}.toml")
        hier = " ".join(f"hier.{q}={f}" for q, f in zip(ds.qids, ds.hierarchy_files, strict=True))
        nodes = 1
        for f in ds.hierarchy_files:
            with open(f) as fh:
                nodes *= fh.readline().count(";") + 1
        if nodes > V.ARX_HEURISTIC_THRESHOLD:  # ARX's optimal search there too, as vs_arx.py asks
            arx_tokens += f" threshold={nodes}"
        arx_cmd = ["java", "-cp", java_cp, "ArxBench", "bench", f"data={ds.csv}", f"qids={','.join(ds.qids)}", *hier.split(),
                   *arx_tokens.split(), "warmup=0", "reps=1"]
        ppdp_args = ["-m", "ppdp.engine.app.cli", "run", str(spec), "--no-progress"]
        times: dict[str, list[float]] = {name: [] for name, _, _ in sides} | {"ARX": []}
        cpu: dict[str, list[float]] = {name: [] for name in times}
        order = [*(name for name, _, _ in sides), "ARX"]
        for i in range(args.reps + 1):  # round 0 warms the OS file cache and Numba's cache: not kept
            shift = i % len(order)  # each side takes each place in the order in turn
            for name in order[shift:] + order[:shift]:
                if name == "ARX":
                    ms, _, cpu_ms = timed(arx_cmd)
                else:
                    _, py, src = next(x for x in sides if x[0] == name)
                    shutil.copyfile(db, fresh)
                    ms, _, cpu_ms = timed([py, *ppdp_args], env_of(src))
                if i:
                    times[name].append(ms)
                    cpu[name].append(cpu_ms)
        a = statistics.median(times["ARX"])
        a_cpu = statistics.median(cpu["ARX"])
        row = {"key": key, "label": label, "arx_ms": round(a, 1), "arx_ms_all": [round(x, 1) for x in times["ARX"]],
               "arx_cpu_ms": round(a_cpu, 1), "sides": {}}
        for name, _, _ in sides:
            p = statistics.median(times[name])
            p_cpu = statistics.median(cpu[name])
            row["sides"][name] = {"ms": round(p, 1), "ratio": round(p / a, 3), "ms_all": [round(x, 1) for x in times[name]],
                                  "cpu_ms": round(p_cpu, 1), "cpu_ratio": round(p_cpu / a_cpu, 3)}
            print(f"{label}: {name} {p:,.0f} ms, ARX process {a:,.0f} ms, ratio {p / a:.2f}", flush=True)
        this = row["sides"]["ppdp this"]
        row |= {"ppdp_ms": this["ms"], "ratio": this["ratio"], "ppdp_ms_all": this["ms_all"]}
        rows.append(row)
        if key == "creditcard-q10-1000":
            runs: dict[str, list[tuple[dict[str, float], int]]] = {name: [] for name, _, _ in sides}
            for _ in range(IMPORT_RUNS):  # the sides interleaved; per package the median of the runs
                for name, py, src in sides:
                    shutil.copyfile(db, fresh)
                    out = subprocess.run([py, "-X", "importtime", *ppdp_args], capture_output=True, text=True, env=env_of(src))
                    runs[name].append(import_groups(out.stderr))
            for name, got in runs.items():
                groups = {g: statistics.median(ms.get(g, 0.0) for ms, _ in got) for g in {g for ms, _ in got for g in ms}}
                imports[name] = {"modules": got[0][1], "runs": len(got),
                                 "ms": {g: round(v, 1) for g, v in sorted(groups.items(), key=lambda x: -x[1])}}
    base_packages = None
    if args.base_python:  # what the base install holds, for the record
        listed = subprocess.run([str(args.base_python), "-m", "pip", "list", "--format=freeze", "--disable-pip-version-check"],
                                capture_output=True, text=True)
        base_packages = sorted(x for x in listed.stdout.split() if not x.lower().startswith(("pip==", "setuptools==")))
    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "commit": V.git_commit(), "reps": args.reps,
            "baseline": str(args.baseline) if args.baseline else None,
            "base_python": str(args.base_python) if args.base_python else None, "base_packages": base_packages,
            "load_average": [round(x, 2) for x in os.getloadavg()]}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "process_vs_arx.json").write_text(json.dumps({"meta": meta, "rows": rows, "imports": imports}, indent=1) + "\n")
    names = [name for name, _, _ in sides]
    md = ["# A whole `ppdp run` process against a fresh ARX JVM process", "",
          f"Median of {args.reps} rounds after one warm-up round, the sides' order rotating each round; commit "
          f"{meta['commit']}" + (f", baseline {args.baseline}" if args.baseline else "") + f"; load average "
          f"{meta['load_average']} at the end. ppdp: the CLI, fresh process, publishing and verifying a release into a "
          "fresh copy of the DuckDB file, in the development environment (with its extras)"
          + (", and as an extra column under a base install (ppdp's required dependencies only, no SciPy)"
             if args.base_python else "") + ". ARX: `ArxBench bench warmup=0 reps=1`, fresh JVM, reading the CSV and "
          "hierarchies. Ratio = ppdp / ARX.", "",
          "| case | " + " | ".join(f"{n} ms | ratio" for n in names) + " | ARX process ms |",
          "|---|" + "---:|---:|" * len(names) + "---:|"]
    if base_packages:
        md[2] += f" The base install's packages: {', '.join(base_packages)}."
    for r in rows:
        md.append(f"| {r['label']} | " + " | ".join(f"{r['sides'][n]['ms']:,.0f} | {r['sides'][n]['ratio']:.2f}" for n in names)
                  + f" | {r['arx_ms']:,.0f} |")
    md += ["", "CPU time (user + system, every thread; median ms, and ratio to ARX's): less moved by the machine's "
           "load than wall time, but not what a user waits for; ARX's JVM compiles and collects on both cores.", "",
           "| case | " + " | ".join(f"{n} CPU ms | ratio" for n in names) + " | ARX CPU ms |",
           "|---|" + "---:|---:|" * len(names) + "---:|"]
    for r in rows:
        md.append(f"| {r['label']} | " + " | ".join(f"{r['sides'][n]['cpu_ms']:,.0f} | {r['sides'][n]['cpu_ratio']:.2f}"
                                                  for n in names) + f" | {r['arx_cpu_ms']:,.0f} |")
    if args.baseline:
        md += ["", "This tree against the baseline, same rounds (median / median):", "",
               "| case | " + " | ".join(f"{py_label.strip() or 'development environment'}" for py_label in pythons) + " |",
               "|---|" + "---:|" * len(pythons)]
        md += [f"| {r['label']} | " + " | ".join(
            f"{r['sides'][f'ppdp this{py_label}']['ms'] / r['sides'][f'ppdp baseline{py_label}']['ms']:.2f}" for py_label in pythons)
            + " |" for r in rows]
    if imports:
        groups = sorted({g for v in imports.values() for g in v["ms"]}, key=lambda g: -max(v["ms"].get(g, 0.0) for v in imports.values()))
        md += ["", f"Import time of the 1,000-record run (`-X importtime`, self ms summed by package, median of "
               f"{IMPORT_RUNS} interleaved runs per side; inflated by the instrumentation):", "",
               "| package | " + " | ".join(imports) + " |", "|---|" + "---:|" * len(imports)]
        md += [f"| {g} | " + " | ".join(f"{v['ms'].get(g, 0.0):,.1f}" for v in imports.values()) + " |"
               for g in groups if max(v["ms"].get(g, 0.0) for v in imports.values()) >= 2.0]
        md += ["| (total) | " + " | ".join(f"{sum(v['ms'].values()):,.1f}" for v in imports.values()) + " |",
               "| (modules imported) | " + " | ".join(f"{v['modules']:,}" for v in imports.values()) + " |"]
    (args.out / "process_vs_arx.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
