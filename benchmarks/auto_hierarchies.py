"""Auto hierarchies against ARX's hand-made ones: the certified optimum's granularity.

    PYTHONPATH=src .venv/bin/python benchmarks/auto_hierarchies.py [--data /work/shared/data/arx] [--rows N]
                                                                   [--out benchmarks/results/auto_hierarchies] [--objective td|loss|both]

For adult (8 QIDs, the ARX files), cup (the 7 QIDs ARX has files for) and fars (8 QIDs), one
release with ARX's hand-made hierarchies and one with ``hierarchy = "auto"`` for every QID, both
k-anonymity k = 5 with the lattice search (the certified optimum when it finishes in budget),
each into its own DuckDB file. Measured on each published optimum:

- granularity: ppdp's utility measure (``ppdp.engine.utility``, measures/granularity.py, equal
  to ARX's StatisticsQuality ``getGranularity``) on the published version: 1 - ARX's Loss, per
  QID the mean domain share of the published values (a withheld row counting 1) normalized
  between 1/|domain| and 1, the QIDs aggregated by ARX's arithmetic mean (normalized after
  aggregation). The same leaf-share formula applies to both hierarchies (ARX's files carry no
  intervals).
- a cross-check: ``leaf_share_loss`` recomputes each QID's normalized Loss from the published
  view, ``(|leaves below| - 1) / (|leaves| - 1)`` per record and 1 per suppressed record; it must
  equal 1 - the utility package's per-QID granularity to 1e-9 (``check`` in the JSON).
- the ratio auto / hand of the granularity (>= 0.9: within 10 %; > 1: auto better).

``--objective td|loss|both`` (default both, one table each): what the lattice optimizes,
``[utility] objective``: ``td`` is ppdp's default, ``loss`` is ARX's Loss metric, the fair
objective when granularity is what is compared.

Prints a table per objective and writes ``auto_hierarchies_<objective>.{json,md}`` to ``--out``.
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
from ppdp.engine import utility  # noqa: E402
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


def spec(db: Path, table: str, columns: list[str], qids: list[str], hierarchies: dict[str, str], objective: str) -> str:
    others = [c for c in columns if c not in qids and c != "id"]
    lines = ["[source]", f"database = {_toml_str('duckdb://' + str(db))}", f"table = {_toml_str(table)}", 'key = "id"',
             "drop = [" + ", ".join(_toml_str(c) for c in others) + "]", ""]
    for q in qids:
        h = hierarchies.get(q)
        lines += ["[[quasi_identifiers]]", f"column = {_toml_str(q)}",
                  # ARX keeps the last row of a leaf its file repeats (cup's AGE file repeats five)
                  f"hierarchy = {{ type = \"arx\", file = {_toml_str(h)}, duplicates = \"keep-last\" }}" if h
                  else 'hierarchy = "auto"', ""]
    lines += ["[[privacy.models]]", 'name = "k-anonymity"', "k = 5", "", "[utility]", f"objective = {_toml_str(objective)}", "",
              "[optimizer]", 'name = "lattice"',
              "budget = 200000", "seed = 1", "", "[output]", 'schema = "published"', f"name = {_toml_str(table)}", ""]
    return "\n".join(lines)


def measure(con, spec_path: Path, table: str) -> dict:
    """The published optimum's granularity (utility package), its levels, certified, and the
    per-QID cross-check against ``leaf_share_loss`` (module docstring)."""
    s = load_spec(spec_path)
    rid = resolve_release(con, table)
    run = catalog.published_runs(con, rid)[-1]
    levels = run.solution["levels"]
    source = Q.Source(None, table, None, con.dialect)

    def load(r):
        return {q.column: load_hierarchy(s, q, source, con, None, r) for q in s.quasi_identifiers}

    g = dict(utility.assess(con, table, load=load).measures)["granularity"]
    n = int(con.query(f'SELECT COUNT(*) AS n FROM "main"."{table}"')["n"][0])
    view = con.query(f'SELECT * FROM "published"."{table}"')
    suppressed = n - view.height
    hier = load(run)
    check: dict[str, float] = {}
    for q in s.quasi_identifiers:
        h = hier[q.column]
        lvl = int(levels[q.column])
        leaves = len(h.rows)
        share = {v: (int(c) - 1) / max(leaves - 1, 1) for v, c in zip(h.level_values[lvl], h.leaf_counts[lvl], strict=True)}
        published = view[q.column].cast(pl.String).to_list()
        leaf_share_loss = (sum(share[v] for v in published) + suppressed) / n
        check[q.column] = abs((1.0 - g["columns"][q.column]) - leaf_share_loss)
    return {"granularity": g["value"], "loss": g["loss"], "granularity_per_qid": {k: round(v, 4) for k, v in g["columns"].items()},
            "levels": levels, "certified": bool(run.solution.get("certified")),
            "check_max_abs_diff": max(check.values()), "check_ok": max(check.values()) <= 1e-9,
            "check_abs_diff_per_qid": check}


def run_one(name: str, data: Path, tmp: Path, rows_limit: int | None, objective: str) -> dict:
    csv, hfile, qids = DATASETS[name]
    out: dict = {"dataset": name, "objective": objective, "qids": len(qids)}
    for variant in ("hand", "auto"):
        db = tmp / f"{name}_{objective}_{variant}.duckdb"
        c = duckdb.connect(str(db))
        limit = f" LIMIT {int(rows_limit)}" if rows_limit else ""
        c.execute(f"CREATE TABLE \"{name}\" AS SELECT row_number() OVER () AS id, * FROM "
                  f"(SELECT * FROM read_csv(?, delim = ';', header = true){limit})",
                  [str(data / csv)])
        columns = [r[0] for r in c.execute(f'DESCRIBE "{name}"').fetchall()]
        c.close()
        hier = {q: str(data / hfile.format(q)) for q in qids} if variant == "hand" else {}
        path = tmp / f"{name}_{objective}_{variant}.toml"
        path.write_text(spec(db, name, columns, qids, hier, objective))
        t0 = time.perf_counter()
        result = api.run_release(path)
        seconds = time.perf_counter() - t0
        if result.status != "published":
            out[variant] = {"error": result.error}
            continue
        con = connect(f"duckdb://{db}")
        try:
            m = measure(con, path, name)
        finally:
            con.close()
        out["rows"] = result.records
        out[variant] = m | {"suppressed": result.suppressed, "seconds": round(seconds, 2), "verified": result.verified}
        print(f"  {name} {objective} {variant}: granularity {m['granularity']:.4f}, {seconds:.1f} s", file=sys.stderr, flush=True)
    if "granularity" in out.get("hand", {}) and "granularity" in out.get("auto", {}):
        out["ratio"] = out["auto"]["granularity"] / out["hand"]["granularity"]
    return out


def table(rows: list[dict]) -> list[str]:
    header = ("| dataset | rows | QIDs | hand granularity | auto granularity | ratio auto/hand | certified (hand, auto) "
              "| suppressed (hand, auto) | check |")
    lines = [header, "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        h, a = r.get("hand", {}), r.get("auto", {})
        ok = h.get("check_ok") and a.get("check_ok")
        diff = max(h.get("check_max_abs_diff", float("nan")), a.get("check_max_abs_diff", float("nan")))
        lines.append(f"| {r['dataset']} | {r.get('rows', '-')} | {r['qids']} | {h.get('granularity', float('nan')):.4f} | "
                     f"{a.get('granularity', float('nan')):.4f} | {r.get('ratio', float('nan')):.4f} | "
                     f"{h.get('certified')}, {a.get('certified')} | {h.get('suppressed')}, {a.get('suppressed')} | "
                     f"{'ok' if ok else 'FAIL'} ({diff:.1e}) |")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/work/shared/data/arx")
    ap.add_argument("--only", help="one dataset: adult, cup or fars")
    ap.add_argument("--rows", type=int, default=None, help="first N rows of each dataset (default: all)")
    ap.add_argument("--objective", choices=["td", "loss", "both"], default="both",
                    help="what the lattice optimizes ([utility] objective); both: one table each (default)")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "auto_hierarchies"))
    args = ap.parse_args()
    data = Path(args.data)
    objectives = ["td", "loss"] if args.objective == "both" else [args.objective]
    results: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory(prefix="ppdp-autoh-") as tmp:
        for objective in objectives:
            results[objective] = [run_one(name, data, Path(tmp), args.rows, objective)
                                  for name in DATASETS if not args.only or name == args.only]
    md = []
    for objective, rows in results.items():
        md += [f"objective = \"{objective}\"" + (f" (first {args.rows} rows)" if args.rows else ""), ""] + table(rows) + [""]
    print("\n".join(md))
    outdir = Path(args.out)
    outdir.mkdir(parents=True, exist_ok=True)
    for objective, rows in results.items():  # one file pair per objective, so runs of each can be separate
        (outdir / f"auto_hierarchies_{objective}.json").write_text(
            json.dumps({"objective": objective, "rows_limit": args.rows, "datasets": rows}, indent=2, default=str))
        (outdir / f"auto_hierarchies_{objective}.md").write_text(
            "\n".join([f"objective = \"{objective}\"" + (f" (first {args.rows} rows)" if args.rows else ""), ""] + table(rows)) + "\n")
    return 0 if all(r.get(v, {}).get("check_ok", True) for rows in results.values() for r in rows for v in ("hand", "auto")) else 1


if __name__ == "__main__":
    sys.exit(main())
