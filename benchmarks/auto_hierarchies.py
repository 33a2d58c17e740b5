"""Auto hierarchies against ARX's hand-made ones: the certified optimum's granularity.

    PYTHONPATH=src .venv/bin/python benchmarks/auto_hierarchies.py [--data /work/shared/data/arx] [--rows N]
                                                                   [--out benchmarks/results/auto_hierarchies]

For adult (8 QIDs, the ARX files), cup (the 7 QIDs ARX has files for) and fars (8 QIDs), one
release with ARX's hand-made hierarchies and one with ``hierarchy = "auto"`` for every QID, both
k-anonymity k = 5 with the lattice search (the certified optimum when it finishes in budget),
each into its own DuckDB file. Measured on each published optimum:

- Loss: ARX's Loss measure (``MetricMDNMLoss``, the utility issue's granularity) computed here
  by ``arx_loss`` since ppdp's utility package is not on this branch yet: the mean over records
  and QIDs of the generalized value's share of the column's domain,
  ``(|leaves below| - 1) / (|leaves| - 1)``, a suppressed record losing 1 on every QID. The same
  leaf-share formula is applied to both hierarchies (ARX's files carry no intervals).
- granularity = 1 - Loss, and the ratio auto / hand (>= 0.9: within 10 %; > 1: auto better).

Prints a table and writes JSON and Markdown to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import polars as pl

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from ppdp.connectors import connect  # noqa: E402
from ppdp.engine.app import api  # noqa: E402
from ppdp.engine.core import catalog  # noqa: E402
from ppdp.engine.core.catalog import resolve_release  # noqa: E402
from ppdp.engine.core.spec import load_spec  # noqa: E402
from ppdp.engine.release.stages.validate import load_hierarchy  # noqa: E402
from ppdp.sql import queries as Q  # noqa: E402

DATASETS = {
    "adult": ("adult.csv", "adult_hierarchy_{}.csv",
              ["age", "education", "marital-status", "native-country", "occupation", "race", "sex", "workclass"]),
    "cup": ("genetic-benchmark/cup_int.csv", "genetic-benchmark/cup_int_hierarchy_{}.csv",
            ["AGE", "GENDER", "INCOME", "MINRAMNT", "NGIFTALL", "RAMNTALL", "STATE"]),
    "fars": ("genetic-benchmark/fars_int.csv", "genetic-benchmark/fars_int_hierarchy_{}.csv",
             ["iage", "irace", "ideathmon", "ideathday", "isex", "ihispanic", "istatenum", "iinjury"]),
}


def _toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def spec(db: Path, table: str, columns: list[str], qids: list[str], hierarchies: dict[str, str]) -> str:
    others = [c for c in columns if c not in qids and c != "id"]
    lines = ["[source]", f"database = {_toml_str('duckdb://' + str(db))}", f"table = {_toml_str(table)}", 'key = "id"',
             "drop = [" + ", ".join(_toml_str(c) for c in others) + "]", ""]
    for q in qids:
        h = hierarchies.get(q)
        lines += ["[[quasi_identifiers]]", f"column = {_toml_str(q)}",
                  # ARX keeps the last row of a leaf its file repeats (cup's AGE file repeats five)
                  f"hierarchy = {{ type = \"arx\", file = {_toml_str(h)}, duplicates = \"keep-last\" }}" if h
                  else 'hierarchy = "auto"', ""]
    lines += ["[[privacy.models]]", 'name = "k-anonymity"', "k = 5", "", "[optimizer]", 'name = "lattice"',
              "budget = 200000", "seed = 1", "", "[output]", 'schema = "published"', f"name = {_toml_str(table)}", ""]
    return "\n".join(lines)


def arx_loss(con, spec_path: Path, table: str) -> tuple[float, dict[str, int], bool, dict[str, float]]:
    """ARX's Loss of the published optimum (see the module docstring), its levels, certified, Loss per QID."""
    s = load_spec(spec_path)
    rid = resolve_release(con, table)
    run = catalog.published_runs(con, rid)[-1]
    levels = run.solution["levels"]
    source = Q.Source(None, table, None, con.dialect)
    n = int(con.query(f'SELECT COUNT(*) AS n FROM "main"."{table}"')["n"][0])
    view = con.query(f'SELECT * FROM "published"."{table}"')
    suppressed = n - view.height
    total = 0.0
    per_qid: dict[str, float] = {}
    for q in s.quasi_identifiers:
        h = load_hierarchy(s, q, source, con, None, run)
        lvl = int(levels[q.column])
        leaves = len(h.rows)
        share = {v: (int(c) - 1) / max(leaves - 1, 1) for v, c in zip(h.level_values[lvl], h.leaf_counts[lvl], strict=True)}
        published = view[q.column].cast(pl.String).to_list()
        qid_loss = sum(share[v] for v in published) + suppressed
        per_qid[q.column] = round(qid_loss / n, 4)
        total += qid_loss
    return total / (n * len(s.quasi_identifiers)), levels, bool(run.solution.get("certified")), per_qid


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/work/shared/data/arx")
    ap.add_argument("--only", help="one dataset: adult, cup or fars")
    ap.add_argument("--rows", type=int, default=None, help="first N rows of each dataset (default: all)")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "auto_hierarchies"))
    args = ap.parse_args()
    data = Path(args.data)
    rows = []
    with tempfile.TemporaryDirectory(prefix="ppdp-autoh-") as tmp:
        for name, (csv, hfile, qids) in DATASETS.items():
            if args.only and name != args.only:
                continue
            out = {"dataset": name, "qids": len(qids)}
            for variant in ("hand", "auto"):
                db = Path(tmp) / f"{name}_{variant}.duckdb"
                c = duckdb.connect(str(db))
                limit = f" LIMIT {int(args.rows)}" if args.rows else ""
                c.execute(f"CREATE TABLE \"{name}\" AS SELECT row_number() OVER () AS id, * FROM "
                          f"(SELECT * FROM read_csv(?, delim = ';', header = true){limit})",
                          [str(data / csv)])
                columns = [r[0] for r in c.execute(f'DESCRIBE "{name}"').fetchall()]
                c.close()
                hier = {q: str(data / hfile.format(q)) for q in qids} if variant == "hand" else {}
                path = Path(tmp) / f"{name}_{variant}.toml"
                path.write_text(spec(db, name, columns, qids, hier))
                t0 = time.perf_counter()
                result = api.run_release(path)
                seconds = time.perf_counter() - t0
                if result.status != "published":
                    out[variant] = {"error": result.error}
                    continue
                con = connect(f"duckdb://{db}")
                try:
                    loss, levels, certified, per_qid = arx_loss(con, path, name)
                finally:
                    con.close()
                out["rows"] = result.records
                out[variant] = {"loss": loss, "granularity": 1 - loss, "certified": certified, "levels": levels, "loss_per_qid": per_qid,
                                "suppressed": result.suppressed, "seconds": round(seconds, 2), "verified": result.verified}
            if "granularity" in out.get("hand", {}) and "granularity" in out.get("auto", {}):
                out["ratio"] = out["auto"]["granularity"] / out["hand"]["granularity"]
            rows.append(out)
    header = "| dataset | rows | QIDs | hand granularity | auto granularity | ratio auto/hand | certified (hand, auto) | suppressed (hand, auto) |"
    lines = [header, "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        h, a = r.get("hand", {}), r.get("auto", {})
        lines.append(f"| {r['dataset']} | {r.get('rows', '-')} | {r['qids']} | {h.get('granularity', float('nan')):.4f} | "
                     f"{a.get('granularity', float('nan')):.4f} | {r.get('ratio', float('nan')):.3f} | "
                     f"{h.get('certified')}, {a.get('certified')} | {h.get('suppressed')}, {a.get('suppressed')} |")
    print("\n".join(lines))
    outdir = Path(args.out)
    outdir.mkdir(parents=True, exist_ok=True)
    (outdir / "auto_hierarchies.json").write_text(json.dumps(rows, indent=2, default=str))
    (outdir / "auto_hierarchies.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
