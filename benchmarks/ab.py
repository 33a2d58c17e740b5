"""Old against new: one benchmark script run on two commits, interleaved, in one session.

    .venv/bin/python benchmarks/ab.py --old 1175431 --new HEAD --rounds 3 \
        -- vs_arx.py --quick --no-arx --reps 3 --warmups 1
    .venv/bin/python benchmarks/ab.py --old 1175431 --new HEAD --rounds 3 -- evaluator.py --seconds 1

Each commit is checked out in its own worktree under ``--work``; both sides run with the same
interpreter (this one) and the same installed packages, with ``PYTHONPATH`` pointing at the
side's ``src/``, and each side keeps its own Numba cache (warmed by one untimed run first, so
neither side pays for compilation). Rounds alternate the order (old, new), (new, old), ... so
that a drift in machine load hits both sides alike. The script under test writes its JSON with
``--out``; this harness reads the figures it knows how to compare:

- ``vs_arx.py``: ``rows[].ppdp_ms`` (median of its own rounds) and the result columns that must
  not change (``td``, ``levels``, ``suppressed``, ``nodes_evaluated``, ``certified``);
- ``evaluator.py``: ``results[].evals_per_s`` per backend.

Prints one table (median over rounds of each side, the new/old ratio, and the spread of the
ratio over rounds, which is the noise to judge it by) and writes it as JSON to ``--out``.
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
SAME = ("td", "levels", "suppressed", "nodes_evaluated", "certified", "feasible")


def worktree(rev: str, work: Path) -> Path:
    sha = subprocess.run(["git", "-C", str(REPO), "rev-parse", rev], check=True, capture_output=True, text=True).stdout.strip()
    tree = work / sha[:12]
    if not tree.exists():
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree), sha], check=True, capture_output=True)
    return tree


def run(tree: Path, script: str, args: list[str], out: Path, cache: Path) -> None:
    env = {"PPDP_DATA": str(REPO.parent / "shared" / "data"), **os.environ, "PYTHONPATH": str(tree / "src"), "NUMBA_CACHE_DIR": str(cache)}
    flag = "--out"
    target = out if script.startswith("vs_arx") else out / "result.json"
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, str(tree / "benchmarks" / script), *args, flag, str(target)], check=True, env=env,
                   cwd=tree, stdout=subprocess.DEVNULL)


def figures(script: str, out: Path) -> tuple[dict[str, float], dict[str, object]]:
    """(timed figures by name, result columns that must be equal on both sides)."""
    if script.startswith("vs_arx"):
        doc = json.loads((out / "vs_arx.json").read_text())
        times = {row["key"]: row["ppdp_ms"] for row in doc["rows"]}
        same = {row["key"]: {k: row.get(k) for k in SAME} for row in doc["rows"]}
        return times, same
    doc = json.loads((out / "result.json").read_text())
    times = {}
    for r in doc["results"]:
        for backend, value in r["evals_per_s"].items():
            times[f"{r['data']} {r['models']} {r['batch']} P={r['P']} {backend}"] = value
    return times, {}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", default="HEAD")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", type=Path, default=Path("/tmp/ppdp-ab"))
    ap.add_argument("--out", type=Path, help="JSON of the comparison (default benchmarks/results/ab/<script>.json)")
    ap.add_argument("script", help="a script of benchmarks/, then its arguments after --")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    sides = {"old": worktree(a.old, a.work), "new": worktree(a.new, a.work)}
    caches = {s: a.work / f"numba-{s}" for s in sides}
    for side, tree in sides.items():  # untimed: compile (or load) every kernel once
        run(tree, a.script, a.args, a.work / "warm" / side, caches[side])
    times: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
    same: dict[str, dict[str, object]] = {}
    for r in range(a.rounds):
        order = ("old", "new") if r % 2 == 0 else ("new", "old")
        for side in order:
            out = a.work / f"round{r}" / side
            run(sides[side], a.script, a.args, out, caches[side])
            t, s = figures(a.script, out)
            times[side].append(t)
            same[side] = s
    higher_is_better = not a.script.startswith("vs_arx")
    rows = []
    print(f"{'case':<58} {'old':>11} {'new':>11} {'new/old':>8} {'spread':>15}")
    for key in times["old"][0]:
        old = [t[key] for t in times["old"]]
        new = [t[key] for t in times["new"]]
        ratios = [n / o for n, o in zip(new, old, strict=True)]
        row = {"case": key, "old": statistics.median(old), "new": statistics.median(new),
               "ratio": statistics.median(new) / statistics.median(old), "ratio_min": min(ratios), "ratio_max": max(ratios),
               "same_result": same["old"].get(key) == same["new"].get(key) if same.get("old") else None}
        rows.append(row)
        print(f"{key[:58]:<58} {row['old']:>11.1f} {row['new']:>11.1f} {row['ratio']:>8.2f} "
              f"{row['ratio_min']:>7.2f}-{row['ratio_max']:<7.2f}" + ("" if row["same_result"] in (None, True) else "  RESULT DIFFERS"))
    out = a.out or REPO / "benchmarks" / "results" / "ab" / f"{Path(a.script).stem}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meta": {"old": a.old, "new": a.new, "rounds": a.rounds, "script": a.script, "args": a.args,
                                        "higher_is_better": higher_is_better, "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                                        "load_average": os.getloadavg()},
                               "rows": rows}, indent=1))
    print(f"\nwritten {out}")


if __name__ == "__main__":
    main()
