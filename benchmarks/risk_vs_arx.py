"""``ppdp risk`` against ARX 3.9.2's risk estimators (issue 26), run side by side in one session.

    python benchmarks/risk_vs_arx.py [--data ../shared/data/arx/adult.csv] [--cp /tmp/arx-build/classpath.txt]
                                     [--out benchmarks/results/risk_vs_arx]

For each column set of adult and each sampling fraction it runs ARX (benchmarks/arx/ArxRisk.java,
built as docs/design/arx.md says) and ppdp's ``assess`` on the same CSV loaded into DuckDB,
and prints one row per (columns, fraction, measure) with both values and their difference; the
table and the raw figures go to risk_vs_arx.md / .json. ARX reports a non-converged estimator as
0, ppdp as null: those rows say so instead of a difference.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from ppdp.connectors import connect  # noqa: E402
from ppdp.engine.risk import assess  # noqa: E402
from ppdp.sql import demo  # noqa: E402

COLUMN_SETS = [
    "age,education,marital-status,native-country,occupation,race,salary-class,sex,workclass",
    "age,sex,race",
    "age,education,marital-status,occupation",
]
FRACTIONS = [0.01, 0.1, 0.2, 1.0]
MEASURES = [("prosecutor_average", lambda j: j["prosecutor"]["average"]),
            ("prosecutor_highest", lambda j: j["prosecutor"]["highest"]),
            ("prosecutor_records_at_risk", lambda j: j["prosecutor"]["records_at_risk"]),
            ("marketer_success_rate", lambda j: j["marketer"]["success_rate"]),
            ("sample_uniques", lambda j: j["sample_uniques"]),
            ("pitman", lambda j: j["population_uniques"]["pitman"]),
            ("zayatz", lambda j: j["population_uniques"]["zayatz"]),
            ("snb", lambda j: j["population_uniques"]["snb"]),
            ("dankar", lambda j: j["population_uniques"]["dankar"]),
            ("dankar_model", lambda j: j["population_uniques"]["dankar_model"])]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "arx" / "adult.csv"))
    ap.add_argument("--cp", default="/tmp/arx-build/classpath.txt")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "risk_vs_arx"))
    args = ap.parse_args()
    cp = Path(args.cp).read_text().strip()
    con = connect("duckdb://:memory:")
    con.execute(demo.load_csv_with_id("adult"), [args.data])
    rows, raw = [], []
    for cols in COLUMN_SETS:
        arx = json.loads(subprocess.run(["java", "-cp", cp, "ArxRisk", f"data={args.data}", f"qids={cols}",
                                         "fractions=" + ",".join(map(str, FRACTIONS))],
                                        check=True, capture_output=True, text=True).stdout)
        for f in FRACTIONS:
            ours = assess(con, '"main"."adult"', cols.split(","), sampling_fraction=f, attributes=False).to_json()
            theirs = arx["by_fraction"][str(f)]
            for name, get in MEASURES:
                a, b = theirs.get(name), get(ours)
                if name == "dankar_model":
                    note = "same" if (a or "").lower() == (b or "") else "DIFFERENT"
                    diff = None
                elif b is None:
                    note, diff = ("ARX 0 = no convergence" if a == 0 else "DIFFERENT"), None
                else:
                    diff = abs(a - b)
                    note = "ok" if diff <= 1e-9 else "DIFFERENT"
                rows.append((cols if len(cols) < 40 else "all nine", f, name, a, b, diff, note))
            raw.append({"columns": cols, "fraction": f, "arx": theirs, "ppdp": ours})
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lines = ["| columns | f | measure | ARX | ppdp | abs. difference | |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {c} | {f} | {m} | {a} | {b} | {'' if d is None else f'{d:.1e}'} | {n} |" for c, f, m, a, b, d, n in rows]
    (out / "risk_vs_arx.md").write_text("\n".join(lines) + "\n")
    (out / "risk_vs_arx.json").write_text(json.dumps(raw, indent=1))
    print("\n".join(lines))
    bad = [r for r in rows if r[-1] == "DIFFERENT"]
    print(f"\n{len(rows)} comparisons, {len(bad)} different")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
