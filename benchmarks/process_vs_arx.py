"""A whole ``ppdp run`` process against a fresh ARX JVM process, on the same data and model.

    .venv/bin/python benchmarks/process_vs_arx.py [--reps 3] [--data DIR] [--out benchmarks/results/process_vs_arx]

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
Outputs: process_vs_arx.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
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


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    ms = (time.perf_counter() - t0) * 1000.0
    if out.returncode != 0:
        raise RuntimeError(f"{cmd[0]} exited {out.returncode}: {[x for x in (out.stderr or out.stdout).splitlines() if not x.startswith(chr(9))][:3]}")
    return ms, out.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--data", help="folder holding arx/ (default: $PPDP_DATA or ../shared/data)")
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
    # as an installed ppdp starts: its modules' bytecode cached (pip compiles it at install; round
    # 0 writes it here), not compiled from source by every process, as PYTHONDONTWRITEBYTECODE would
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"PYTHONPATH": str(REPO / "src")}
    cases = [("adult", "adult k=5, no limit (ppdp lattice)", "lattice", None, "k=5 supp=1.0"),
             ("creditcard-q10-1000", "creditcard 1,000 records, 10 QIDs, k=5, 0 % limit (ppdp flash)", "flash", 0.0,
              "k=5 supp=0.0")]
    rows = []
    for key, label, optimizer, limit, arx_tokens in cases:
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
        ppdp_cmd = [sys.executable, "-m", "ppdp.engine.app.cli", "run", str(spec), "--no-progress"]
        ppdp_ms, arx_ms = [], []
        for i in range(args.reps + 1):  # round 0 warms the OS file cache and Numba's cache: not kept
            for side in (("ppdp", "arx") if i % 2 else ("arx", "ppdp")):
                if side == "ppdp":
                    shutil.copyfile(db, fresh)
                    ms, _ = timed(ppdp_cmd, env)
                    (ppdp_ms if i else []).append(ms)
                else:
                    ms, _ = timed(arx_cmd)
                    (arx_ms if i else []).append(ms)
        p, a = statistics.median(ppdp_ms), statistics.median(arx_ms)
        row = {"key": key, "label": label, "ppdp_ms": round(p, 1), "arx_ms": round(a, 1), "ratio": round(p / a, 3),
               "ppdp_ms_all": [round(x, 1) for x in ppdp_ms], "arx_ms_all": [round(x, 1) for x in arx_ms]}
        rows.append(row)
        print(f"{label}: ppdp run {p:,.0f} ms, ARX process {a:,.0f} ms, ratio {p / a:.2f}", flush=True)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "commit": V.git_commit(), "reps": args.reps,
            "load_average": [round(x, 2) for x in os.getloadavg()]}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "process_vs_arx.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    md = ["# A whole `ppdp run` process against a fresh ARX JVM process", "",
          f"Median of {args.reps} alternating rounds after one warm-up round; commit {meta['commit']}; load average "
          f"{meta['load_average']}. ppdp: the CLI, fresh process, publishing and verifying a release into a fresh copy "
          "of the DuckDB file. ARX: `ArxBench bench warmup=0 reps=1`, fresh JVM, reading the CSV and hierarchies.", "",
          "| case | ppdp run ms | ARX process ms | ratio |", "|---|---:|---:|---:|"]
    md += [f"| {r['label']} | {r['ppdp_ms']:,.0f} | {r['arx_ms']:,.0f} | {r['ratio']:.2f} |" for r in rows]
    (args.out / "process_vs_arx.md").write_text("\n".join(md) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
