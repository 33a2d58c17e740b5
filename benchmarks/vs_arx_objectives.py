"""One table of ``vs_arx.py --objective NAME`` runs for ARX's six metrics (issue #38).

    .venv/bin/python benchmarks/vs_arx_objectives.py [--results benchmarks/results/vs_arx] [--run NAME]

Reads ``objective_<name>/vs_arx.json`` (one round per row), ``objective_<name>/large/`` (the
issue family's large data sets) and ``objective_<name>/recheck/`` (rows timed again with more
rounds; their median replaces the one-round figure); with ``--run NAME``, only the runs
``objective_<name>/NAME/`` (all six metrics' rows from one commit, e.g. ``--out
objective_<name>/<commit>`` of vs_arx.py), and the summary is written as
``objective_summary_NAME.{md,json}``; ``--run A,B`` reads both (a row of B replacing A's) and writes ``objective_summary_A_B``. With
``--storage`` (runs of ``vs_arx.py --arx-load``) the table's ratio is ``ratio_from_storage``: both
sides timed from their data at rest. Prints a markdown table: per row and
objective the ratio ppdp / ARX and whether ppdp's node is ARX's (``=``), another node with ARX's
node's score (``tie``) or neither (``≠``); writes ``objective_summary.json`` and
``objective_summary.md`` beside them.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

OBJECTIVES = ["loss", "nu-entropy", "aecs", "discernibility", "precision", "height"]
REPO = Path(__file__).resolve().parents[1]


def collect(root: Path, run: str | None = None, storage: bool = False) -> tuple[list[str], dict[tuple[str, str], dict], list[dict]]:
    keys: list[str] = []
    cells: dict[tuple[str, str], dict] = {}
    runs: list[dict] = []
    for o in OBJECTIVES:
        for sub in (tuple(run.split(",")) if run else ("", "large", "recheck")):
            f = root / f"objective_{o}" / sub / "vs_arx.json"
            if not f.exists():
                continue
            doc = json.loads(f.read_text())
            m = doc["meta"]
            runs.append({"objective": o, "part": sub or "main", "commit": m["commit"], "date": m["date"],
                         "reps": m["reps"], "load_average": m["load_average"]})
            for r in doc["rows"]:
                if "skipped" in r or r.get("ratio") is None or (storage and r.get("ratio_from_storage") is None):
                    continue
                if r["key"] not in keys:
                    keys.append(r["key"])
                cells[(r["key"], o)] = {"ratio": r["ratio_from_storage"] if storage else r["ratio"],
                                        "plain_ratio": r["ratio"], "arx_load_ms": r.get("arx_load_ms"),
                                        "arx_ms": r["arx_ms"], "ppdp_ms": r["ppdp_ms"],
                                        "ppdp_prepare_ms": r["ppdp_prepare_ms"], "ppdp_read_ms": r.get("ppdp_read_ms"),
                                        "ratio_from_memory": r.get("ratio_from_memory"),
                                        # rounds of this row (vs_arx.py --min-ms adds some), else the run's
                                        "reps": r.get("rounds", m["reps"]), "same_node": r.get("same_node"),
                                        "same_score": r.get("same_score"), "certified": r["certified"],
                                        "nodes": r["nodes_evaluated"], "arx_checked": r.get("arx_checked")}
    return keys, cells, runs


def cell(c: dict | None) -> str:
    if c is None:
        return ""
    node = "=" if c["same_node"] else ("tie" if c["same_score"] else "≠")
    return f"{c['ratio']:.2f} {node}" + ("" if c["certified"] else " (not certified)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, default=REPO / "benchmarks" / "results" / "vs_arx")
    ap.add_argument("--run", help="only the runs in objective_<metric>/RUN/ (one commit's; A,B: both, B's rows first)")
    ap.add_argument("--storage", action="store_true", help="the ratio from storage (runs of vs_arx.py --arx-load)")
    args = ap.parse_args(argv)
    keys, cells, runs = collect(args.results, args.run, args.storage)
    lines = ["| row | " + " | ".join(OBJECTIVES) + " |", "|---|" + "---:|" * len(OBJECTIVES)]
    lines += [f"| {k} | " + " | ".join(cell(cells.get((k, o))) for o in OBJECTIVES) + " |" for k in keys]
    timed = [c for c in cells.values()]
    over = sorted(((k, o, c) for (k, o), c in cells.items() if c["ratio"] > 1), key=lambda x: -x[2]["ratio"])
    lines += ["", f"{len(timed)} rows timed; node = ARX's or a tie on {sum(1 for c in timed if c['same_node'] or c['same_score'])}; "
                  f"certified {sum(1 for c in timed if c['certified'])}; ratio > 1 on {len(over)}:"]
    if args.storage and cells:
        lines[-1] = lines[-1].replace("ratio > 1", "ratio from storage (ppdp / (ARX's loading + anonymize)) > 1")
        top = max(cells.items(), key=lambda kv: kv[1]["ratio"])
        lines += [f"- highest: {top[0][0]}, {top[0][1]}: {top[1]['ratio']:.2f} (ARX {top[1]['arx_load_ms']:,.1f} ms loading + "
                  f"{top[1]['arx_ms']:,.1f} ms anonymize, ppdp {top[1]['ppdp_ms']:,.1f} ms)"]
    lines += [f"- {k}, {o}: {c['ratio']:.2f} (ARX {c['arx_ms']:,.1f} ms, ppdp {c['ppdp_ms']:,.1f} ms of which "
              f"prepare {c['ppdp_prepare_ms']:,.1f} ms"
              + ("" if c.get("ratio_from_memory") is None else
                 f", the source's rows read {c['ppdp_read_ms']:,.1f} ms; from memory {c['ratio_from_memory']:.2f}")
              + f", median of {c['reps']} rounds)" for k, o, c in over]
    measured = [c["ratio_from_memory"] for c in cells.values() if c.get("ratio_from_memory") is not None]
    if measured and not args.storage:  # --arx-load runs: ARX's loading slows the next run, not this measure's
        lines += ["", f"From memory (ppdp's time without reading the source's rows out of the database, as ARX's "
                      f"timing starts from its data in memory), on the {len(measured)} rows that recorded it: "
                      f"ratio > 1 on {sum(1 for x in measured if x > 1)}, maximum {max(measured):.2f}."]
    text = "\n".join(lines) + "\n"
    print(text)
    stem = f"objective_summary_{args.run.replace(',', '_')}" if args.run else "objective_summary"
    (args.results / f"{stem}.md").write_text(text)
    (args.results / f"{stem}.json").write_text(json.dumps(
        {"runs": runs, "cells": [{"key": k, "objective": o, **c} for (k, o), c in cells.items()]}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
