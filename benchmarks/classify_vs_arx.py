"""ppdp's classifier of release against original beside ARX's StatisticsClassification, on adult.

    python benchmarks/classify_vs_arx.py [--data DIR] [--arx-classpath CP] [--out DIR] [--only KEY]

adult with its 8 QIDs and ARX's hierarchies, salary-class as the target, logistic regression,
10 folds, at most 100,000 records, seed Integer.MAX_VALUE (ARX's defaults). For each case ppdp
publishes a release (lattice optimizer) into a DuckDB file and ``ppdp.engine.utility.classify``
classifies it; ARX (benchmarks/arx/ArxClassify.java, compiled on the fly against ARX's classpath,
default /tmp/arx-build/classpath.txt) anonymizes the same data under the same models with no
suppression limit, and runs StatisticsClassification twice: on its output at ppdp's node (the
same transformation and the same suppressed records: the like-for-like row) and at its own
global optimum (ARX's Loss). The folds are ARX's, record for record (utility/folds.py).

Outputs: benchmarks/results/utility/classify_vs_arx.json and .md (with --only KEY:
classify_vs_arx_KEY.json and .md).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from ppdp.connectors.base import connect  # noqa: E402
from ppdp.engine.app.api import run_release  # noqa: E402
from ppdp.engine.core import catalog  # noqa: E402
from ppdp.engine.utility.classify import classify  # noqa: E402

QIDS = ["age", "education", "marital-status", "native-country", "occupation", "race", "sex", "workclass"]
TARGET = "salary-class"
# key, ppdp models (TOML), ARX tokens
CASES = [
    ("k2", "k = 2", '[[privacy.models]]\nname = "k-anonymity"\nk = 2\n', "k=2"),
    ("k5", "k = 5", '[[privacy.models]]\nname = "k-anonymity"\nk = 5\n', "k=5"),
    ("k10", "k = 10", '[[privacy.models]]\nname = "k-anonymity"\nk = 10\n', "k=10"),
    # ppdp optimizing ARX's Loss (objective = "loss"): the node ARX's own optimum is
    ("k5loss", "k = 5, objective loss", '[[privacy.models]]\nname = "k-anonymity"\nk = 5\n[utility]\nobjective = "loss"\n', "k=5"),
    ("t02", "k = 2, t = 0.2 (equal-distance EMD on salary-class)",
     '[[privacy.models]]\nname = "k-anonymity"\nk = 2\n[[privacy.models]]\nname = "t-closeness"\nt = 0.2\ndistance = "equal"\n',
     f"k=2 t=0.2 tmodel=equal sensitive={TARGET}"),
]


def _spec(db: Path, data: Path, models: str, name: str) -> str:
    lines = ["[source]", f'database = "duckdb://{db}"', 'table = "adult"', 'key = "id"', "keep = []"]
    for q in QIDS:
        lines += ["[[quasi_identifiers]]", f'column = "{q}"', f'hierarchy = "{data / f"adult_hierarchy_{q}.csv"}"']
    lines += ["[sensitive]", f'columns = ["{TARGET}"]', models.strip(), "[output]", 'schema = "published"', f'name = "{name}"']
    return "\n".join(lines) + "\n"


def _arx(cp: str, tokens: list[str]) -> dict:
    out = subprocess.run(["java", "-cp", cp, "ArxClassify", *tokens], check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="/work/shared/data/arx")
    ap.add_argument("--arx-classpath", default="/tmp/arx-build/classpath.txt")
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/utility"))
    ap.add_argument("--only", default=None)
    args = ap.parse_args()
    data = Path(args.data)
    work = Path(tempfile.mkdtemp(prefix="classify_vs_arx_"))
    classes = work / "classes"
    classes.mkdir()
    cp = Path(args.arx_classpath).read_text().strip()
    subprocess.run(["javac", "-encoding", "UTF-8", "-d", str(classes), "-cp", cp, str(ROOT / "benchmarks/arx/ArxSetup.java"),
                    str(ROOT / "benchmarks/arx/ArxClassify.java")], check=True)
    cp = f"{classes}:{cp}"  # these classes first: a harness build on the classpath has an older ArxSetup
    db = work / "adult.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE adult AS SELECT CAST(row_number() OVER () AS BIGINT) AS id, * "
                "FROM read_csv(?, delim = ';', header = true)", [str(data / "adult.csv")])
    con.close()
    base = [f"data={data / 'adult.csv'}", f"qids={','.join(QIDS)}", f"target={TARGET}", "supp=1.0"]
    rows = []
    for key, label, models, arx_tokens in CASES:
        if args.only and key != args.only:
            continue
        spec = work / f"{key}.toml"
        spec.write_text(_spec(db, data, models, f"adult_{key}"))
        t0 = time.perf_counter()
        run_release(str(spec))
        t1 = time.perf_counter()
        c = connect(f"duckdb://{db}", read_only=True)
        try:
            levels = catalog.published_runs(c, catalog.resolve_release(c, f"adult_{key}"))[-1].solution["levels"]
            ours = classify(c, f"adult_{key}", TARGET)
        finally:
            c.close()
        t2 = time.perf_counter()
        node = ",".join(f"{q}:{levels[q]}" for q in QIDS)
        same = _arx(cp, [*base, *arx_tokens.split(), f"levels={node}"])
        best = _arx(cp, [*base, *arx_tokens.split()])
        row = {"case": key, "models": label, "ppdp_levels": levels, "ppdp_suppressed": ours.suppressed,
               "ppdp": ours.to_json(), "ppdp_release_s": round(t1 - t0, 1), "ppdp_classify_s": round(t2 - t1, 1),
               "arx_at_ppdp_node": same, "arx_optimum": best,
               "diff_accuracy": ours.release.accuracy - same["accuracy"],
               "diff_zeror": ours.zeror.accuracy - same["zeror_accuracy"],
               "diff_original": ours.original.accuracy - same["original_accuracy"]}
        rows.append(row)
        print(f"{key}: ppdp {ours.release.accuracy:.4f} / ARX {same['accuracy']:.4f} at ppdp's node "
              f"(suppressed {ours.suppressed} / {same['suppressed']}), ZeroR {ours.zeror.accuracy:.4f} / {same['zeror_accuracy']:.4f}, "
              f"original {ours.original.accuracy:.4f} / {same['original_accuracy']:.4f}; ARX's optimum {best['accuracy']:.4f}",
              flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = "classify_vs_arx" + (f"_{args.only}" if args.only else "")
    (out / f"{stem}.json").write_text(json.dumps(rows, indent=2) + "\n")
    md = ["# Classification: ppdp against ARX's StatisticsClassification (adult, 8 QIDs, salary-class, logistic, 10 folds)",
          "", "Same node = ARX's output at ppdp's chosen levels (the same transformation and suppressed records). "
          "ARX optimum = ARX's own Loss-optimal node (no suppression limit).", "",
          "| case | ppdp node | suppressed ppdp / ARX | original ppdp / ARX | ZeroR ppdp / ARX | release ppdp / ARX (same node) | "
          "diff | Brier release ppdp / ARX | AUC >50K ppdp / ARX | ARX optimum: node, accuracy |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        p, a, b = r["ppdp"], r["arx_at_ppdp_node"], r["arx_optimum"]
        lv = "".join(str(r["ppdp_levels"][q]) for q in QIDS)
        bv = "".join(str(b["levels"][q]) for q in QIDS)
        md.append(f"| {r['models']} | {lv} | {r['ppdp_suppressed']:,} / {a['suppressed']:,} | "
                  f"{p['original']['accuracy']:.4f} / {a['original_accuracy']:.4f} | {p['zeror']['accuracy']:.4f} / {a['zeror_accuracy']:.4f} | "
                  f"{p['release']['accuracy']:.4f} / {a['accuracy']:.4f} | {r['diff_accuracy']:+.4f} | "
                  f"{p['release']['brier']:.4f} / {a['brier']:.4f} | {p['release']['auc']['>50K']:.4f} / {a['auc']['>50K']:.4f} | "
                  f"{bv}, {b['accuracy']:.4f} |")
    md += ["", f"Levels in QID order {', '.join(QIDS)}."]
    (out / f"{stem}.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    worst = max((abs(r["diff_accuracy"]) for r in rows), default=0.0)
    print(f"largest |accuracy difference| at the same node: {worst:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
