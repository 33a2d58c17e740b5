"""Same verdict as ARX (issue 25, acceptance 1) for the population-based models: delta-presence
and k-map (population table, Poisson and zero-truncated Poisson estimators).

For every node of adult's lattice (8 QIDs, 6,480 nodes), with no suppression, ppdp's verdict
(every class satisfies the model: ``Problem.evaluate_unsuppressed(...).feasible``, the models
read through the release's own ``prepare``) is compared with ARX 3.9.2's (benchmarks/arx/
ArxPopVerdicts.java: ARX's class checks on every node, unchecked nodes applied). Prints one row
per case (nodes compared, disagreements, nodes feasible) and writes JSON.

    PYTHONPATH=src:. python benchmarks/arx_population_verdicts.py [--out FILE] [--cases a,b]
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import tempfile
import time
from pathlib import Path

import duckdb
import numpy as np

from ppdp.connectors import connect
from ppdp.engine.core.spec import spec_from_dict
from ppdp.engine.methods.generalization.problem import Problem
from ppdp.engine.release.stages.validate import prepare

ROOT = Path(__file__).resolve().parents[1]
ADULT_DIR = ROOT / "src" / "ppdp" / "engine" / "data" / "adult"
QIDS = ["age", "education", "marital-status", "native-country", "occupation", "race", "sex", "workclass"]
CLASSPATH = Path("/tmp/arx-build/classpath.txt")
# The research subset (and k-map's sample): a deterministic subset of adult, as SQL for ppdp and
# as row indices for ARX (the same rows: the DuckDB table's id is the CSV's line order).
RESEARCH = "\"salary-class\" = '>50K' OR (age >= 60 AND sex = 'Female')"

CASES: dict[str, dict] = {
    "delta-presence 0.05-0.6": {"model": {"name": "delta-presence", "dmin": 0.05, "dmax": 0.6, "research": RESEARCH},
                                "arx": ["model=dpresence", "dmin=0.05", "dmax=0.6"], "subset": True},
    "delta-presence 0-0.5": {"model": {"name": "delta-presence", "dmin": 0.0, "dmax": 0.5, "research": RESEARCH},
                             "arx": ["model=dpresence", "dmin=0.0", "dmax=0.5"], "subset": True},
    "k-map population k=10": {"model": {"name": "k-map", "k": 10, "population": "main.adult"},
                              "arx": ["model=kmap", "k=10"], "subset": True, "sample": True},
    "k-map poisson k=10 N=300000 a=0.01": {
        "model": {"name": "k-map", "k": 10, "estimator": "poisson", "population_size": 300000, "significance": 0.01},
        "arx": ["model=kmap", "k=10", "estimator=poisson", "population_size=300000", "significance=0.01"]},
    "k-map zero-truncated k=20 N=100000 a=0.05": {
        "model": {"name": "k-map", "k": 20, "estimator": "zero-truncated-poisson", "population_size": 100000,
                  "significance": 0.05},
        "arx": ["model=kmap", "k=20", "estimator=zero-truncated-poisson", "population_size=100000", "significance=0.05"]},
}


def load(db: Path) -> None:
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE adult AS SELECT CAST(row_number() OVER () AS BIGINT) AS id, * "
                "FROM read_csv(?, delim = ';', header = true, all_varchar = false)", [str(ADULT_DIR / "adult.csv")])
    con.execute(f"CREATE TABLE sample AS SELECT * FROM adult WHERE {RESEARCH}")
    con.close()


def spec_for(db: Path, case: dict) -> dict:
    model = dict(case["model"])
    table = "sample" if case.get("sample") else "adult"
    return {
        "source": {"database": f"duckdb://{db}", "table": table, "key": "id", "keep": ["salary-class"]},
        "quasi_identifiers": [{"column": q, "hierarchy": {"type": "arx", "file": str(ADULT_DIR / f"adult_hierarchy_{q}.csv")}}
                              for q in QIDS],
        "privacy": {"models": [model]},
        "optimizer": {"name": "lattice"},
        "output": {"schema": "published", "name": "v"},
    }


def ppdp_verdicts(db: Path, case: dict) -> tuple[dict[tuple[int, ...], bool], float]:
    spec = spec_from_dict(spec_for(db, case), base_dir=ROOT)
    con = connect(f"duckdb://{db}")
    try:
        prep = prepare(spec, con)
    finally:
        con.close()
    t0 = time.perf_counter()
    problem = Problem(prep.table, prep.models)
    nodes = np.array(list(itertools.product(*[range(int(h) + 1) for h in prep.table.heights])), dtype=np.int64)
    out: dict[tuple[int, ...], bool] = {}
    for start in range(0, len(nodes), 256):
        chunk = nodes[start:start + 256]
        ev = problem.evaluate_unsuppressed(chunk)
        for g, ok in zip(chunk.tolist(), ev.feasible.tolist(), strict=True):
            out[tuple(g)] = bool(ok)
    return out, time.perf_counter() - t0


def arx_verdicts(db: Path, case: dict, work: Path) -> tuple[dict[tuple[int, ...], bool], float, int | None]:
    args = [f"data={ADULT_DIR / 'adult.csv'}", f"qids={','.join(QIDS)}", *case["arx"]]
    if case.get("subset"):
        con = duckdb.connect(str(db), read_only=True)
        rows = [r[0] - 1 for r in con.execute(f"SELECT id FROM adult WHERE {RESEARCH} ORDER BY id").fetchall()]
        con.close()
        path = work / "subset.txt"
        path.write_text("\n".join(map(str, rows)) + "\n")
        args.append(f"subset={path}")
    classes = work / "classes"
    if not classes.exists():
        srcs = [str(Path(__file__).resolve().parent / "arx" / f) for f in ("ArxSetup.java", "ArxPopVerdicts.java")]
        subprocess.run(["javac", "-cp", CLASSPATH.read_text().strip(), "-d", str(classes), *srcs], check=True)
    t0 = time.perf_counter()
    run = subprocess.run(["java", "-cp", f"{classes}:{CLASSPATH.read_text().strip()}", "ArxPopVerdicts", *args],
                         check=True, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    qis: list[str] = []
    derived = None
    out: dict[tuple[int, ...], bool] = {}
    for line in run.stdout.splitlines():
        if line.startswith("#qids "):
            qis = line.split(" ", 1)[1].split(",")
        elif line.startswith("#derived_k "):
            derived = int(line.split()[1])
        elif line.strip():
            levels, verdict = line.split()
            by_name = dict(zip(qis, map(int, levels.split(",")), strict=True))
            out[tuple(by_name[q] for q in QIDS)] = verdict == "1"
    return out, elapsed, derived


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks/results/arx_population_verdicts.json")
    ap.add_argument("--cases", default=",".join(CASES))
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        db = work / "adult.duckdb"
        load(db)
        print(f"{'case':<45} {'nodes':>6} {'disagree':>8} {'feasible':>8}  ppdp s  ARX s")
        for name in a.cases.split(","):
            case = CASES[name]
            mine, t_ppdp = ppdp_verdicts(db, case)
            theirs, t_arx, derived = arx_verdicts(db, case, work)
            common = sorted(set(mine) & set(theirs))
            diff = [g for g in common if mine[g] != theirs[g]]
            row = {"case": name, "nodes_ppdp": len(mine), "nodes_arx": len(theirs), "compared": len(common),
                   "disagreements": len(diff), "feasible_ppdp": sum(mine.values()), "feasible_arx": sum(theirs.values()),
                   "arx_derived_k": derived, "ppdp_s": round(t_ppdp, 2), "arx_s": round(t_arx, 2),
                   "first_disagreements": [list(g) for g in diff[:5]]}
            rows.append(row)
            print(f"{name:<45} {len(common):>6} {len(diff):>8} {row['feasible_ppdp']:>8}  {t_ppdp:6.1f} {t_arx:6.1f}")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
