"""Reproduce the experiments of the ID-DGA and HAEF papers on rebuilt instances.

    python benchmarks/papers.py            # full: R = 25 runs, every instance, t in {0.1, 0.2, 0.3}
    python benchmarks/papers.py --quick    # R = 3, t = 0.2 only, HAEF budgets x 0.1, lattice 120k nodes (a few minutes)

Instances (dataset, QIDs, rows, seed): see benchmarks/instances.py; data from ``--data`` or
``PPDP_DATA`` (default ../shared/data next to the repository).

Per instance (and t) and algorithm: R independent runs (run r has seed 1000 * i + r, i the
instance number, the same seeds for every algorithm); Flash and DFS are deterministic and run
once (their single result stands for all R in the statistics, as the papers' "Result" column).
Reported: mean and standard deviation of TD (a run that ends without a feasible solution
scores 0, the TD of the always-feasible empty release; the number of feasible runs is listed),
query precision 100 * TD / (nR * nQID) (ID-DGA Table 3, docs/design/paper_notes.md §1), the two-sided
Wilcoxon rank-sum test at 0.05 against the best mean of each table (normal approximation with
tie and continuity correction, implemented here: scipy is not a dependency), mean wall time per
run, the optimum from ``run_optimizer("lattice")`` (certified when its box branch and bound
finishes within ``--lattice-budget`` nodes; otherwise its best TD and a valid upper bound), and
each algorithm's gap to it. Budgets: ID-DGA nQID * nR, HAEF 10 * nQID * nR evaluations.

Algorithms are called by name through the optimizer registry; names not registered are skipped
and listed in the report. Evolutionary algorithms run with ``executor = "local"`` (identical
results to the process executor, without starting worker processes for every run; island
timing is benchmarks/islands.py's job). In the HAEF family ID-DGA uses HAEF §6.1.1's settings
(population 30, MR 0.2).

Outputs to ``--out`` (default benchmarks/results, quick mode benchmarks/results/quick):
papers.md (tables in the papers' layouts), papers.json (every run's TD, time, feasibility,
mean curves), idga_convergence.png (ID-DGA Fig. 6), haef_convergence_t<t>.png (HAEF Fig. 7),
haef_diversity_t<t>.png (HAEF Fig. 9).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import platform
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import instances as inst_mod  # noqa: E402

from ppdp.engine.methods.generalization.optimizers import OPTIMIZERS, run_optimizer  # noqa: E402
from ppdp.errors import SpecError  # noqa: E402


@dataclass(frozen=True)
class Algo:
    label: str  # column name in the tables
    name: str  # registry name
    params: dict = field(default_factory=dict)
    deterministic: bool = False
    alias_of: str | None = None  # same optimizer and preset as another label: reuse its runs


LOCAL = {"executor": "local"}
DIVERSITY = {"diversity_every": 1}  # record the population diversity each generation (HAEF Fig. 9)
HAEF_IDDGA = {**LOCAL, "pop_size": 30, "mr": 0.2}  # HAEF §6.1.1: NP = 30, MR_ga = 0.2 for all EAs

ALGOS: dict[str, list[Algo]] = {
    "id-dga": [
        Algo("GA", "ga", LOCAL),
        Algo("DE", "de", LOCAL),
        Algo("FLASH", "flash", {}, deterministic=True),
        Algo("ID-GA", "id-ga", LOCAL),
        Algo("ID-DGA", "id-dga", LOCAL),
        # ID-DGA Table 4; "without framework" is one population of 40 = ID-GA exactly.
        Algo("Without-framework", "id-dga-without-framework", LOCAL, alias_of="ID-GA"),
        Algo("Without-mutation", "id-dga-without-mutation", LOCAL),
        Algo("Without-improvement", "id-dga-without-improvement", LOCAL),
        Algo("ID-DGA+oracle", "id-dga+oracle", LOCAL),
    ],
    "haef": [
        Algo("DFS", "dfs", {}, deterministic=True),
        Algo("ID-DGA", "id-dga", {**HAEF_IDDGA, **DIVERSITY}),
        Algo("TLEF", "tlef", {**LOCAL, **DIVERSITY}),
        Algo("HAEF", "haef", {**LOCAL, **DIVERSITY}),
        Algo("Without priority strategy", "haef-without-priority", LOCAL),
        Algo("Without GA-DE adaptation", "haef-without-ga-de-adaptation", LOCAL),
        Algo("Without DEs adaptation", "haef-without-de-adaptation", LOCAL),
        Algo("ID-DGA+oracle", "id-dga+oracle", HAEF_IDDGA),
        Algo("HAEF+oracle", "haef+oracle", LOCAL),
    ],
}
# Table layouts: (title, columns); the significance test runs within each table.
TABLES = {
    "id-dga": [
        ("Table 2: comparison with existing approaches (TD)", ["GA", "DE", "FLASH", "ID-GA", "ID-DGA"]),
        ("Table 4: impact of the proposed operators (TD)",
         ["Without-framework", "Without-mutation", "Without-improvement", "ID-DGA"]),
        ("Beyond the paper: memetic ID-DGA with the exact suppression oracle (TD)", ["ID-DGA", "ID-DGA+oracle"]),
    ],
    "haef": [
        ("TD comparison", ["DFS", "ID-DGA", "TLEF", "HAEF"]),
        ("Table 5: HAEF ablation (TD)",
         ["HAEF", "Without priority strategy", "Without GA-DE adaptation", "Without DEs adaptation"]),
        ("Beyond the paper: memetic variants with the exact suppression oracle (TD)",
         ["HAEF", "ID-DGA", "HAEF+oracle", "ID-DGA+oracle"]),
    ],
}
CONVERGENCE = {"id-dga": ["GA", "DE", "FLASH", "ID-GA", "ID-DGA", "ID-DGA+oracle"],
               "haef": ["DFS", "ID-DGA", "TLEF", "HAEF", "HAEF+oracle"]}
DIVERSITY_CASES = ["D3", "D6", "D16"]  # HAEF Fig. 9
DIVERSITY_ALGOS = ["ID-DGA", "TLEF", "HAEF"]
CURVE_POINTS = 300
ALPHA = 0.05
# The papers' claims, checked pair by pair on every case: (proposed algorithm, rivals it is
# reported ahead of). ID-DGA Tables 2 and 4; HAEF Fig. 6 / Tables 3-5.
CLAIMS = {
    "id-dga": ("ID-DGA", ["ID-GA", "GA", "DE", "FLASH", "Without-mutation", "Without-improvement"]),
    "haef": ("HAEF", ["TLEF", "ID-DGA", "DFS", "Without priority strategy", "Without GA-DE adaptation",
                      "Without DEs adaptation"]),
}


# -- statistics -------------------------------------------------------------------------------


def rank_sum(x: Sequence[float], y: Sequence[float], *, continuity: bool = True) -> tuple[float, float]:
    """Two-sided Wilcoxon rank-sum (Mann-Whitney) test, normal approximation: (z, p).

    Ties get average ranks and the variance the tie correction
    ``n1 n2 / 12 * (n + 1 - sum(t^3 - t) / (n (n - 1)))``; ``continuity`` subtracts 0.5 from
    |U - n1 n2 / 2|. z > 0 when x tends to be larger. All values tied: z = 0, p = 1.

    >>> round(rank_sum([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])[1], 4)
    0.0122
    >>> rank_sum([1, 1], [1, 1])
    (0.0, 1.0)
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        return 0.0, 1.0
    allv = np.concatenate([x, y])
    n = n1 + n2
    order = np.argsort(allv, kind="mergesort")
    ranks = np.empty(n)
    sv = allv[order]
    i = 0
    ties = 0.0
    while i < n:
        j = i
        while j + 1 < n and sv[j + 1] == sv[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        t = j - i + 1
        ties += t**3 - t
        i = j + 1
    u = ranks[:n1].sum() - n1 * (n1 + 1) / 2.0
    mu = n1 * n2 / 2.0
    var = n1 * n2 / 12.0 * ((n + 1) - ties / (n * (n - 1)))
    if var <= 0:
        return 0.0, 1.0
    d = u - mu
    if continuity:
        d = math.copysign(max(abs(d) - 0.5, 0.0), d)
    z = d / math.sqrt(var)
    return z, math.erfc(abs(z) / math.sqrt(2.0))


def mean_std(v: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation; a spread below rounding noise of the mean is 0."""
    a = np.asarray(v, dtype=np.float64)
    m = float(a.mean())
    s = float(a.std(ddof=1)) if len(a) > 1 else 0.0
    return m, (0.0 if s <= 1e-9 * max(1.0, abs(m)) else s)


# -- running ----------------------------------------------------------------------------------

_INSTANCES: dict[tuple[str, str], inst_mod.Instance] = {}


def _init_worker(root: str, seed: int, families: list[str]) -> None:
    OPTIMIZERS.names()  # imports the built-in optimizers
    for fam in families:
        for inst in inst_mod.build(fam, Path(root), seed):
            _INSTANCES[(fam, inst.name)] = inst


def _grid(budget: int) -> np.ndarray:
    return np.unique(np.linspace(1, budget, min(CURVE_POINTS, budget)).round().astype(np.int64))


def run_task(task: dict[str, Any]) -> dict[str, Any]:
    """One optimizer run (or the lattice search) on one instance; executed in a worker or here."""
    inst = _INSTANCES[(task["family"], task["instance"])]
    problem = inst.problem(task["t"])
    budget = task["budget"]
    t0 = time.perf_counter()
    try:
        res = run_optimizer(task["name"], problem, budget=budget, seed=task["seed"], params=dict(task["params"]))
    except SpecError as exc:  # e.g. a lattice too large for Flash
        return {**task, "error": str(exc)}
    wall = time.perf_counter() - t0
    out = {**task, "td": res.td, "feasible": res.feasible, "evaluations": res.evaluations, "seconds": wall,
           "certified": res.certified, "suppressed": res.suppressed, "g": res.g.tolist()}
    if task["name"] == "lattice":
        out["upper_bound"] = res.info.get("remaining_upper_bound")
        out["nodes_evaluated"] = res.info.get("nodes_evaluated")
        out["boxes_bounded"] = res.info.get("boxes_bounded")  # box branch and bound (mode bound)
        return out
    grid = _grid(budget)
    curve = res.curve(budget)
    out["curve"] = curve[grid - 1].tolist()
    div = res.info.get("diversity")
    if div:
        d = np.asarray(div, dtype=np.float64)
        ok = grid <= d[-1, 0]
        out["diversity_g"] = np.where(ok, np.interp(grid, d[:, 0], d[:, 1]), np.nan).tolist()
        out["diversity_s"] = np.where(ok, np.interp(grid, d[:, 0], d[:, 2]), np.nan).tolist()
    for key in ("complete", "nodes_checked", "nodes_visited", "optimal_within_limit"):
        if key in res.info:
            out[key] = res.info[key]
    return out


def build_tasks(args: argparse.Namespace, families: list[str], registered: set[str],
                skipped: dict[str, str]) -> list[dict[str, Any]]:
    tasks = []
    for fam in families:
        insts = [i for (f, _), i in _INSTANCES.items() if f == fam]
        for number, inst in enumerate(insts, start=1):
            if args.instances and inst.name not in args.instances:
                continue
            ts = args.t if fam == "haef" else [None]
            for t in ts:
                base = {"family": fam, "instance": inst.name, "t": t}
                tasks.append({**base, "label": "lattice", "name": "lattice", "params": {}, "seed": 0, "run": 0,
                              "budget": args.lattice_budget})
                scale = args.budget_scale if fam == "haef" else args.idga_budget_scale
                budget = max(int(round(inst.budget * scale)), 1)
                for algo in ALGOS[fam]:
                    if args.algorithms and algo.label not in args.algorithms and algo.name not in args.algorithms:
                        continue
                    if algo.name not in registered:
                        skipped[algo.name] = "not registered"
                        continue
                    if algo.alias_of:
                        continue
                    runs = 1 if algo.deterministic else args.runs
                    for r in range(runs):
                        tasks.append({**base, "label": algo.label, "name": algo.name, "params": algo.params,
                                      "seed": 1000 * number + r, "run": r, "budget": budget})
    return tasks


# -- aggregation ------------------------------------------------------------------------------


def aggregate(results: list[dict[str, Any]], families: list[str], runs: int) -> dict[str, Any]:
    """results -> {family: {case key: {"lattice": ..., "algos": {label: stats}}}}."""
    out: dict[str, Any] = {}
    by_case: dict[tuple, list[dict]] = {}
    for r in results:
        by_case.setdefault((r["family"], r["instance"], r["t"]), []).append(r)
    for (fam, name, t), rs in by_case.items():
        inst = _INSTANCES[(fam, name)]
        key = name if t is None else f"{name}@t={t}"
        case: dict[str, Any] = {"instance": name, "t": t, "nR": inst.n_records, "nQID": inst.n_qids, "algos": {}}
        lat = [r for r in rs if r["name"] == "lattice"]
        if lat:
            lr = lat[0]
            case["lattice"] = {k: lr.get(k) for k in ("td", "certified", "feasible", "evaluations", "seconds",
                                                        "upper_bound", "error", "g")}
        labels = {}
        for r in rs:
            if r["name"] != "lattice":
                labels.setdefault(r["label"], []).append(r)
        for algo in ALGOS[fam]:
            src = algo.alias_of or algo.label
            if src not in labels:
                continue
            rr = sorted(labels[src], key=lambda r: r["run"])
            errors = [r["error"] for r in rr if "error" in r]
            if errors:
                case["algos"][algo.label] = {"error": errors[0]}
                continue
            score = [r["td"] if r["feasible"] else 0.0 for r in rr]
            if algo.deterministic:
                score = score * runs  # one deterministic result stands for every run
            m, s = mean_std(score)
            st: dict[str, Any] = {
                "mean": m, "std": s, "scores": score, "raw_td": [r["td"] for r in rr],
                "feasible_runs": sum(r["feasible"] for r in rr) * (runs if algo.deterministic else 1),
                "runs": runs, "seconds": float(np.mean([r["seconds"] for r in rr])),
                "evaluations": float(np.mean([r["evaluations"] for r in rr])),
                "qp": 100.0 * m / (inst.n_records * inst.n_qids), "alias_of": algo.alias_of,
                "deterministic": algo.deterministic,
            }
            for k in ("complete", "nodes_checked", "nodes_visited", "optimal_within_limit"):
                if k in rr[0]:
                    st[k] = rr[0][k]
            # Mean best-so-far TD with "no feasible solution yet" as 0, as in the tables: monotone.
            curves = np.nan_to_num(np.array([r["curve"] for r in rr], dtype=np.float64), nan=0.0)
            st["curve"] = np.round(curves.mean(axis=0), 3).tolist()
            with np.errstate(all="ignore"):
                for dk in ("diversity_g", "diversity_s"):
                    if all(dk in r for r in rr):
                        arr = np.array([r[dk] for r in rr], dtype=np.float64)
                        c2 = np.sum(~np.isnan(arr), axis=0)
                        st[dk] = np.round(np.where(c2 > 0, np.nansum(arr, axis=0) / np.maximum(c2, 1), np.nan), 1).tolist()
            st["curve_x"] = _grid(rr[0]["budget"]).tolist()
            case["algos"][algo.label] = st
        # Significance within each table: best mean vs every other column.
        case["tables"] = []
        for title, cols in TABLES[fam]:
            present = [c for c in cols if c in case["algos"] and "error" not in case["algos"][c]]
            if not present:
                case["tables"].append({"title": title, "best": None, "p": {}, "dagger": False})
                continue
            best = max(present, key=lambda c: case["algos"][c]["mean"])
            pv = {c: rank_sum(case["algos"][best]["scores"], case["algos"][c]["scores"])[1]
                  for c in present if c != best}
            dagger = bool(pv) and all(p < ALPHA and case["algos"][best]["mean"] > case["algos"][c]["mean"]
                                      for c, p in pv.items())
            case["tables"].append({"title": title, "best": best, "p": pv, "dagger": dagger})
        # Gap to the optimum (certified) or an upper bound of the gap (not certified).
        lat = case.get("lattice")
        best_known = max([a["mean"] for a in case["algos"].values() if "mean" in a]
                         + [max(a["scores"]) for a in case["algos"].values() if "scores" in a]
                         + ([lat["td"]] if lat and lat.get("feasible") else [0.0]))
        if lat and lat.get("certified"):
            opt, bound = lat["td"], lat["td"]
        else:
            opt = None
            ub = lat.get("upper_bound") if lat else None
            bound = max(best_known, ub) if ub is not None else float(inst.n_records * inst.n_qids)
        case["optimum"] = {"certified": opt is not None, "value": opt, "best_known": best_known, "bound": bound}
        if fam == "haef" and inst.positive_share is not None:
            # Binary SA with source share q: a class without positives is at distance q*sqrt(2)
            # (HAEF eq. 2-4), so when q*sqrt(2) <= t suppressing every SA = 1 record and
            # generalizing nothing is feasible, with TD = (nR - positives) * nQID.
            q = inst.positive_share
            case["trivial"] = {"feasible": q * math.sqrt(2.0) <= t + 1e-12,
                               "td": (inst.n_records - round(q * inst.n_records)) * inst.n_qids}
        for a in case["algos"].values():
            if "mean" in a:
                ref = opt if opt is not None else bound
                a["gap"] = _pct(ref - a["mean"], ref)
                # opt >= best known, so this is a lower bound of the gap (equal when certified)
                a["gap_lower"] = _pct(best_known - a["mean"], best_known)
        out.setdefault(fam, {})[key] = case
    return out


def _pct(diff: float, ref: float) -> float:
    """100 * diff / ref, with rounding noise (|diff| tiny against ref) reported as 0."""
    if ref <= 0 or abs(diff) <= 1e-9 * ref:
        return 0.0
    return 100.0 * diff / ref


# -- report -----------------------------------------------------------------------------------


def _e(v: float) -> str:
    return f"{v:.2E}"


def _cell(case: dict, label: str, table: dict, *, std: bool = True) -> list[str]:
    a = case["algos"].get(label)
    if a is None:
        return ["n/a"] + (["n/a"] if std else [])
    if "error" in a:
        return ["error"] + (["-"] if std else [])
    avg = _e(a["mean"])
    if table["best"] == label:
        avg = f"**{avg}**" + (" †" if table["dagger"] else "")
    if a["feasible_runs"] < a["runs"]:
        avg += f" ({a['feasible_runs']}/{a['runs']} feas.)"
    if a.get("deterministic"):
        return [avg] + (["-"] if std else [])
    return [avg] + ([_e(a["std"])] if std else [])


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _td_table(fam: str, cases: list[dict], ti: int) -> str:
    title, cols = TABLES[fam][ti]
    header = ["Case"]
    for c in cols:
        det = next((a.deterministic for a in ALGOS[fam] if a.label == c), False)
        header += [f"{c} Result"] if det else [f"{c} Avg", f"{c} Std"]
    rows = []
    for case in cases:
        tab = case["tables"][ti]
        row = [case["instance"]]
        for c in cols:
            det = next((a.deterministic for a in ALGOS[fam] if a.label == c), False)
            row += _cell(case, c, tab, std=not det)
        rows.append(row)
    return _md_table(header, rows)


def _qp_table(fam: str, cases: list[dict], cols: list[str]) -> str:
    rows = []
    for case in cases:
        vals = {c: case["algos"][c]["qp"] for c in cols if "qp" in case["algos"].get(c, {})}
        best = max(vals, key=vals.get) if vals else None
        rows.append([case["instance"]] + [("**%.2f**" if c == best else "%.2f") % vals[c] if c in vals else "n/a"
                                          for c in cols])
    return _md_table(["Case"] + cols, rows)


def _opt_table(fam: str, cases: list[dict]) -> str:
    cols = [a.label for a in ALGOS[fam] if not a.alias_of]
    header = ["Case", "lattice TD", "certified", "optimum / bound"] + [f"gap {c}" for c in cols]
    rows = []
    for case in cases:
        lat = case.get("lattice") or {}
        o = case["optimum"]
        if o["certified"]:
            ob = f"{o['value']:.1f}"
        else:
            ob = f"≤ {o['bound']:.1f} (best known {o['best_known']:.1f})"
        row = [case["instance"], f"{lat.get('td', float('nan')):.1f}" if lat else "n/a",
               "yes" if o["certified"] else f"no ({lat.get('evaluations', 0):,} nodes)", ob]
        for c in cols:
            a = case["algos"].get(c)
            if not a or "gap" not in a:
                row.append("n/a")
            else:
                row.append(f"{a['gap']:.1f}%" if o["certified"] else f"{a['gap_lower']:.1f}–{a['gap']:.1f}%")
        rows.append(row)
    return _md_table(header, rows)


def claim_tally(cases: list[dict], ours: str, rival: str) -> dict[str, Any]:
    """How often ``ours`` has the higher mean TD than ``rival``, split by significance.

    A difference counts as significant when the two-sided rank-sum test of the R scores gives
    p < ALPHA; equal means (to rounding) are ties. ``diff`` is 100 (ours - rival) / rival per case."""
    tally = {"cases": 0, "ahead_sig": 0, "ahead": 0, "tie": 0, "behind": 0, "behind_sig": 0, "diff": []}
    for case in cases:
        a, b = case["algos"].get(ours, {}), case["algos"].get(rival, {})
        if "mean" not in a or "mean" not in b:
            continue
        tally["cases"] += 1
        diff = a["mean"] - b["mean"]
        tally["diff"].append(_pct(diff, b["mean"]) if b["mean"] > 0 else (0.0 if diff == 0 else math.inf))
        if abs(diff) <= 1e-9 * max(1.0, abs(b["mean"])):
            tally["tie"] += 1
            continue
        significant = rank_sum(a["scores"], b["scores"])[1] < ALPHA
        side = "ahead" if diff > 0 else "behind"
        tally[side + ("_sig" if significant else "")] += 1
    return tally


def _claims_table(fam: str, cases: list[dict]) -> str:
    ours, rivals = CLAIMS[fam]
    rows = []
    for rival in rivals:
        t = claim_tally(cases, ours, rival)
        if not t["cases"]:
            continue
        finite = [d for d in t["diff"] if math.isfinite(d)]
        holds = t["ahead_sig"] + t["ahead"]
        verdict = ("holds" if holds == t["cases"] else "reversed" if t["behind_sig"] + t["behind"] == t["cases"]
                   else "holds on most cases" if holds > t["cases"] / 2 else "does not hold")
        rows.append([f"{ours} ahead of {rival}", str(t["cases"]), str(t["ahead_sig"]), str(t["ahead"]), str(t["tie"]),
                     str(t["behind"]), str(t["behind_sig"]),
                     (f"{np.median(finite):+.1f}% ({min(finite):+.1f} to {max(finite):+.1f})" if finite else "n/a"),
                     verdict])
    return _md_table(["claim", "cases", "ahead, significant", "ahead, n.s.", "tie", "behind, n.s.",
                      "behind, significant", "mean TD difference: median (range)", "on our data"], rows)


def _gap_summary(fam: str, cases: list[dict]) -> str:
    certified = [c for c in cases if c["optimum"]["certified"]]
    rows = []
    for a in ALGOS[fam]:
        if a.alias_of:
            continue
        gaps = [c["algos"][a.label]["gap"] for c in certified if "gap" in c["algos"].get(a.label, {})]
        if gaps:
            rows.append([a.label, str(len(gaps)), f"{np.median(gaps):.1f}%", f"{min(gaps):.1f}–{max(gaps):.1f}%",
                         str(sum(g <= 0.0 for g in gaps))])
    return (f"Over the {len(certified)} of {len(cases)} cases whose optimum the lattice search certified:\n\n"
            + _md_table(["algorithm", "cases", "median gap", "range", "mean = optimum"], rows))


def _time_table(fam: str, cases: list[dict]) -> str:
    cols = [a.label for a in ALGOS[fam] if not a.alias_of]
    rows = []
    for case in cases:
        lat = case.get("lattice") or {}
        rows.append([case["instance"]] + [f"{case['algos'][c]['seconds']:.2f}" if "seconds" in case["algos"].get(c, {})
                                          else "n/a" for c in cols] + [f"{lat.get('seconds', float('nan')):.2f}"])
    return _md_table(["Case"] + cols + ["lattice"], rows)


def _feasible_note(fam: str, cases: list[dict]) -> str:
    bad = []
    for case in cases:
        for c, a in case["algos"].items():
            if "feasible_runs" in a and a["feasible_runs"] < a["runs"]:
                bad.append(f"{case['instance']} {c}: {a['feasible_runs']}/{a['runs']}")
    return ("Algorithms with infeasible runs (feasible runs / R; an infeasible run scores 0): " + "; ".join(bad) + ".") if bad else \
        "Every run ended with a feasible solution."


def write_report(path: Path, agg: dict, meta: dict, figures: dict[str, list[str]]) -> None:
    L: list[str] = []
    w = L.append
    w(f"# Paper benchmarks: ID-DGA and HAEF ({meta['mode']} mode)\n")
    w(f"Generated by `{meta['command']}` on {meta['date']} ({meta['machine']}, {meta['cores']} cores, "
      f"{meta['jobs']} worker process(es)); total wall time {meta['wall_seconds']:.0f} s"
      + (f" in this invocation, which resumed {meta['resumed_runs']} runs journaled by an interrupted one"
         if meta.get("resumed_runs") else "")
      + (f"; the runs' own wall times sum to {meta['run_seconds']:.0f} s" if "run_seconds" in meta else "")
      + (f". Report re-rendered from the journal with `--report-only` on {meta['rendered']}" if meta.get("rendered")
         else "") + ".\n")
    w(f"- Runs per stochastic algorithm R = {meta['runs']}; run r of instance i has seed 1000·i + r (the same "
      "for every algorithm). FLASH and DFS are deterministic: run once, their result stands for all R runs in the "
      "statistics (the papers' *Result* column).")
    w(f"- Instances: `benchmarks/instances.py` (seed {meta['seed']}, data `{meta['data']}`); sampled row numbers in "
      "papers.json.")
    w(f"- Budgets: ID-DGA family nQID·nR × {meta['idga_budget_scale']}, HAEF family 10·nQID·nR × "
      f"{meta['budget_scale']} evaluations. HAEF t values: {', '.join(map(str, meta['t']))}.")
    w("- A run that ends without a feasible solution scores TD 0 (the empty release, always feasible).")
    w("- ID-DGA *Without-framework* (one population of 40) is the same optimizer and preset as *ID-GA*: its "
      "column repeats ID-GA's runs.")
    w("- **bold** = best mean of the table; † = the best is significantly better than every other column "
      f"(two-sided Wilcoxon rank-sum, normal approximation with tie and continuity correction, α = {ALPHA}). "
      + (f"With R = {meta['runs']} the smallest attainable p is "
         f"{rank_sum(range(meta['runs']), range(meta['runs'], 2 * meta['runs']))[1]:.3f}, so † cannot appear."
         if rank_sum(range(meta['runs']), range(meta['runs'], 2 * meta['runs']))[1] >= ALPHA else ""))
    w("- Optimum: `run_optimizer(\"lattice\")` (box branch and bound over the lattice with the exact suppression "
      "oracle and the partner bound of engine/methods/generalization/optimizers/bounds.py, "
      f"budget {meta['lattice_budget']:,} nodes). Certified = proven maximal over all (G, S). Gap = 100·(optimum − "
      "mean TD)/optimum. When not certified the gap is given as a range: from the gap to the best TD known (any "
      "run of any algorithm, or the lattice search) to the gap to an upper bound, max(best known, the lattice "
      "search's largest remaining bound).")
    if meta["skipped"]:
        w("- Skipped (not registered in engine/methods/generalization/optimizers): " + ", ".join(f"`{k}`" for k in sorted(meta["skipped"])) + ".")
    w("")
    if "id-dga" in agg:
        cases = [agg["id-dga"][k] for k in sorted(agg["id-dga"], key=lambda s: int(s[1:]))]
        w("## ID-DGA family (k-anonymity, k = 2)\n")
        w(_md_table(["Case", "nA", "nQID", "nR", "lattice nodes", "budget"],
                    [[c["instance"], str(_INSTANCES[("id-dga", c["instance"])].n_attributes), str(c["nQID"]),
                      str(c["nR"]), f"{int(np.prod(_INSTANCES[('id-dga', c['instance'])].table.heights + 1)):,}",
                      str(max(int(round(c['nQID'] * c['nR'] * meta['idga_budget_scale'])), 1))] for c in cases]))
        w("\nTable 1 analogue: dataset arx/genetic-benchmark/mach2019_int (see benchmarks/instances.py).\n")
        w("### Do the paper's orderings hold?\n")
        w(_claims_table("id-dga", cases))
        w("\n### Distance to the certified optimum (summary)\n")
        w(_gap_summary("id-dga", cases) + "\n")
        for ti, (title, _) in enumerate(TABLES["id-dga"]):
            w(f"### {title}\n")
            w(_td_table("id-dga", cases, ti))
            w("")
        w("### Table 3: query precision (%) = 100·TD/(nR·nQID)\n")
        w(_qp_table("id-dga", cases, ["GA", "DE", "FLASH", "ID-GA", "ID-DGA", "ID-DGA+oracle"]))
        w("\n### Optimum and gaps\n")
        w(_opt_table("id-dga", cases))
        w("\n" + _feasible_note("id-dga", cases) + "\n")
        w("### Mean wall time per run (s)\n")
        w(_time_table("id-dga", cases))
        w("")
        for f in figures.get("id-dga", []):
            w(f"![{f}]({f})\n")
    if "haef" in agg:
        w("## HAEF family (t-closeness, Euclidean distance)\n")
        insts = [i for (f, _), i in _INSTANCES.items() if f == "haef"]
        w(_md_table(["Case", "dataset (SA)", "nQID", "nSA", "nR", "share SA = 1 (Fig. 5)", "lattice nodes", "budget"],
                    [[i.name, f"{i.sensitive[0]}: {i.sa_description}", str(i.n_qids), "1", str(i.n_records),
                      f"{i.positive_share:.2f}", f"{int(np.prod(i.table.heights + 1)):,}",
                      str(max(int(round(i.budget * meta['budget_scale'])), 1))] for i in insts]))
        w("")
        ts = sorted({c["t"] for c in agg["haef"].values()})
        every = sorted(agg["haef"].values(), key=lambda c: (c["t"], int(c["instance"][1:])))
        w(f"### Do the paper's orderings hold? (all {len(every)} cases: D1-D16 × t)\n")
        w(_claims_table("haef", every))
        w("\n### Distance to the certified optimum (summary, all t)\n")
        w(_gap_summary("haef", every) + "\n")
        for t in ts:
            cases = sorted([c for c in agg["haef"].values() if c["t"] == t], key=lambda c: int(c["instance"][1:]))
            w(f"### t = {t}\n")
            for ti, (title, _) in enumerate(TABLES["haef"]):
                w(f"#### {title}, t = {t}\n")
                w(_td_table("haef", cases, ti))
                w("")
            sums = {a.label: sum(c["algos"][a.label]["mean"] for c in cases if "mean" in c["algos"].get(a.label, {}))
                    for a in ALGOS["haef"] if all("mean" in c["algos"].get(a.label, {}) for c in cases)}
            if "HAEF" in sums:
                w(f"Overall (Fig. 6 analogue, sum of mean TD over the {len(cases)} cases): "
                  + "; ".join(f"HAEF vs {k}: {100 * (sums['HAEF'] - v) / v:+.2f}%" for k, v in sums.items()
                              if k != "HAEF" and v > 0) + ".\n")
            w(f"#### Optimum and gaps, t = {t}\n")
            w(_opt_table("haef", cases))
            triv = [f"{c['instance']} (TD {c['trivial']['td']})" for c in cases if c.get("trivial", {}).get("feasible")]
            if triv:
                w(f"\nNear-trivial cases at t = {t}: with a binary SA of source share q, a class without SA = 1 records "
                  f"is at distance q·√2 ≤ t, so suppressing every SA = 1 record and generalizing nothing is feasible: "
                  + ", ".join(triv) + ". The paper's D15 (2.83E+03 of 3,000) shows the same effect.")
            w("\n" + _feasible_note("haef", cases) + "\n")
            w(f"#### Mean wall time per run (s), t = {t}\n")
            w(_time_table("haef", cases))
            w("")
        for f in figures.get("haef", []):
            w(f"![{f}]({f})\n")
    path.write_text("\n".join(L) + "\n", encoding="utf-8")


# -- plots ------------------------------------------------------------------------------------

COLORS = {"GA": "tab:gray", "DE": "tab:brown", "FLASH": "tab:purple", "ID-GA": "tab:orange", "ID-DGA": "tab:blue",
          "ID-DGA+oracle": "tab:cyan", "DFS": "tab:gray", "TLEF": "tab:green", "HAEF": "tab:red",
          "HAEF+oracle": "tab:pink"}
MARKERS = {"GA": "s", "DE": "^", "FLASH": "D", "ID-GA": "v", "ID-DGA": "o", "ID-DGA+oracle": "x", "DFS": "s",
           "TLEF": "^", "HAEF": "o", "HAEF+oracle": "x"}


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_convergence(path: Path, fam: str, cases: list[dict], title: str) -> None:
    plt = _plt()
    n = len(cases)
    cols = 4 if n > 6 else min(n, 3)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.3 * rows), squeeze=False)
    handles = {}
    for ax, case in zip(axes.ravel(), cases, strict=False):
        for label in CONVERGENCE[fam]:
            a = case["algos"].get(label)
            if not a or "curve" not in a:
                continue
            x = np.asarray(a["curve_x"])
            y = np.asarray(a["curve"], dtype=np.float64)
            (h,) = ax.plot(x, y, color=COLORS.get(label), marker=MARKERS.get(label), markevery=max(len(x) // 8, 1),
                           markersize=4, linewidth=1.3, label=label)
            handles[label] = h
        o = case["optimum"]
        if o["certified"]:
            h = ax.axhline(o["value"], color="black", linestyle=":", linewidth=1, label="certified optimum")
            handles["certified optimum"] = h
        ax.set_title(case["instance"] + (f" (t = {case['t']})" if case["t"] is not None else "")
                     + f"  nQID={case['nQID']} nR={case['nR']}", fontsize=9)
        ax.tick_params(labelsize=7)
        ax.ticklabel_format(axis="x", style="sci", scilimits=(0, 3))
        ax.grid(alpha=0.3)
    for ax in axes.ravel()[n:]:
        ax.axis("off")
    fig.supxlabel("fitness evaluations", fontsize=10)
    fig.supylabel("mean best TD (0 until feasible)", fontsize=10)
    _title_and_legend(fig, title, handles, rows)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _title_and_legend(fig, title: str, handles: dict, rows: int) -> None:
    """Title on top, one-row legend under it, panels below (nothing overlaps the axis labels)."""
    top = 1.0 - 0.55 / (3.3 * rows)  # leave ~0.55 inch for title and legend
    fig.suptitle(title, y=0.995, fontsize=11)
    fig.legend(list(handles.values()), list(handles), loc="upper center", bbox_to_anchor=(0.5, 1.0 - 0.3 / (3.3 * rows)),
               ncol=len(handles), fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, top - 0.01))


def plot_diversity(path: Path, cases: list[dict], title: str) -> bool:
    plt = _plt()
    cases = [c for c in cases if any("diversity_g" in c["algos"].get(a, {}) for a in DIVERSITY_ALGOS)]
    if not cases:
        return False
    fig, axes = plt.subplots(2, len(cases), figsize=(4.6 * len(cases), 6.4), squeeze=False)
    handles = {}
    for j, case in enumerate(cases):
        for i, (key, name) in enumerate((("diversity_g", "G: sum of pairwise Euclidean distances"),
                                         ("diversity_s", "S: sum of pairwise Hamming distances"))):
            ax = axes[i, j]
            for label in DIVERSITY_ALGOS:
                a = case["algos"].get(label)
                if not a or key not in a:
                    continue
                (h,) = ax.plot(a["curve_x"], a[key], color=COLORS.get(label), marker=MARKERS.get(label),
                               markevery=max(len(a["curve_x"]) // 8, 1), markersize=4, linewidth=1.3, label=label)
                handles[label] = h
            ax.set_title(f"({'abcdef'[i * len(cases) + j]}) {case['instance']}, {name.split(':')[0]}", fontsize=9)
            ax.set_ylabel(name, fontsize=8)
            ax.tick_params(labelsize=7)
            ax.ticklabel_format(axis="x", style="sci", scilimits=(0, 3))
            ax.grid(alpha=0.3)
    fig.supxlabel("fitness evaluations", fontsize=10)
    _title_and_legend(fig, title, handles, 2)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# -- main -------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="R = 3, t = 0.2 only, HAEF budgets x 0.1, lattice 120k nodes")
    ap.add_argument("--family", choices=["id-dga", "haef", "all"], default="all")
    ap.add_argument("--runs", type=int, help="runs per stochastic algorithm (default 25, quick 3)")
    ap.add_argument("--t", type=float, nargs="+", help="HAEF t values (default 0.1 0.2 0.3, quick 0.2)")
    ap.add_argument("--instances", nargs="+", help="only these instances, e.g. T1 T15 D4")
    ap.add_argument("--algorithms", nargs="+", help="only these table labels or registry names")
    ap.add_argument("--budget-scale", type=float, help="factor on the HAEF budgets (default 1, quick 0.1)")
    ap.add_argument("--idga-budget-scale", type=float, default=1.0, help="factor on the ID-DGA budgets (default 1)")
    ap.add_argument("--lattice-budget", type=int, help="nodes for the certifying lattice search (default 1,100,000, "
                    "quick 120,000)")
    ap.add_argument("--data", help="data directory (default: $PPDP_DATA or ../shared/data)")
    ap.add_argument("--seed", type=int, default=inst_mod.DEFAULT_SEED, help="instance sampling seed")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    ap.add_argument("--out", help="output folder (default benchmarks/results, quick: benchmarks/results/quick)")
    ap.add_argument("--resume", action="store_true",
                    help="keep the runs already in <out>/runs.jsonl (an interrupted run) and do only the rest")
    ap.add_argument("--report-only", action="store_true",
                    help="run nothing: re-render the report, JSON and plots from <out>/runs.jsonl(.gz), keeping the "
                    "command, date and wall time recorded in <out>/papers.json by the invocation that ran them")
    args = ap.parse_args(argv)
    q = args.quick
    args.runs = args.runs or (3 if q else 25)
    args.t = args.t or ([0.2] if q else list(inst_mod.T_VALUES))
    args.budget_scale = args.budget_scale if args.budget_scale is not None else (0.1 if q else 1.0)
    args.lattice_budget = args.lattice_budget or (120_000 if q else 1_100_000)
    out = Path(args.out) if args.out else Path(__file__).resolve().parent / "results" / ("quick" if q else "")
    out.mkdir(parents=True, exist_ok=True)
    families = ["id-dga", "haef"] if args.family == "all" else [args.family]
    root = inst_mod.data_dir(args.data)

    t_start = time.perf_counter()
    _init_worker(str(root), args.seed, families)
    registered = set(OPTIMIZERS.names())
    skipped: dict[str, str] = {}
    tasks = build_tasks(args, families, registered, skipped)
    print(f"{len(tasks)} runs on {len(_INSTANCES)} instances; data {root}; output {out}", flush=True)
    if skipped:
        print("skipped (not registered): " + ", ".join(sorted(skipped)), flush=True)
    results: list[dict[str, Any]] = []
    # Every finished run is appended to runs.jsonl at once, so an interrupted benchmark (hours
    # for the full HAEF family) loses nothing: --resume reads it back and runs only the rest.
    journal = out / "runs.jsonl"
    done = _read_journal(journal) if (args.resume or args.report_only) else {}
    if args.report_only:
        missing = [t for t in tasks if _task_key(t) not in done]
        if missing:
            print(f"--report-only: {len(missing)} of {len(tasks)} runs are not in {journal}(.gz); "
                  "finish them with --resume", file=sys.stderr)
            return 2
    if done:
        results = [done[k] for k in map(_task_key, tasks) if k in done]
        tasks = [t for t in tasks if _task_key(t) not in done]
        print(f"resuming: {len(results)} runs from {journal}, {len(tasks)} to go", flush=True)
    total = len(results) + len(tasks)
    if args.report_only:
        tasks = []
    log = journal.open("w", encoding="utf-8")
    for key, r in done.items():  # rewritten clean: a torn last line would swallow the next record
        log.write(json.dumps({"key": key, "result": r}, default=_json_default, allow_nan=True) + "\n")

    def report(r: dict[str, Any]) -> None:
        results.append(r)
        log.write(json.dumps({"key": _task_key(r), "result": r}, default=_json_default, allow_nan=True) + "\n")
        log.flush()
        if r["run"] == 0 or r.get("error"):
            tag = f"{r['instance']}" + (f" t={r['t']}" if r["t"] is not None else "")
            msg = r.get("error") or f"TD {r['td']:.1f} feasible={r['feasible']} {r['seconds']:.2f}s"
            print(f"[{len(results)}/{total} {time.perf_counter() - t_start:6.0f}s] {tag} {r['label']}: {msg}",
                  flush=True)

    try:
        if args.jobs > 1:
            import multiprocessing as mp

            with ProcessPoolExecutor(args.jobs, mp_context=mp.get_context("spawn"), initializer=_init_worker,
                                     initargs=(str(root), args.seed, families)) as pool:
                for r in pool.map(run_task, tasks, chunksize=1):
                    report(r)
        else:
            for task in tasks:
                report(run_task(task))
    finally:
        log.close()

    agg = aggregate(results, families, args.runs)
    figures: dict[str, list[str]] = {}
    if "id-dga" in agg:
        cases = [agg["id-dga"][k] for k in sorted(agg["id-dga"], key=lambda s: int(s[1:]))]
        plot_convergence(out / "idga_convergence.png", "id-dga", cases,
                         "ID-DGA family (k = 2): convergence, TD vs fitness evaluations (cf. ID-DGA Fig. 6)")
        figures["id-dga"] = ["idga_convergence.png"]
    if "haef" in agg:
        figures["haef"] = []
        for t in args.t:
            cases = sorted([c for c in agg["haef"].values() if c["t"] == t], key=lambda c: int(c["instance"][1:]))
            if not cases:
                continue
            f = f"haef_convergence_t{t}.png"
            plot_convergence(out / f, "haef", cases,
                             f"HAEF family (t = {t}): convergence, TD vs fitness evaluations (cf. HAEF Fig. 7)")
            figures["haef"].append(f)
            dcases = [c for c in cases if c["instance"] in DIVERSITY_CASES]
            f = f"haef_diversity_t{t}.png"
            if plot_diversity(out / f, dcases, f"HAEF family (t = {t}): population diversity (cf. HAEF Fig. 9)"):
                figures["haef"].append(f)
    meta = {
        "mode": "quick" if q else "full", "command": "python benchmarks/papers.py " + " ".join(argv or sys.argv[1:]),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "machine": platform.machine(),
        "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "jobs": args.jobs, "runs": args.runs, "t": args.t, "budget_scale": args.budget_scale,
        "idga_budget_scale": args.idga_budget_scale, "lattice_budget": args.lattice_budget, "seed": args.seed,
        "data": str(root), "skipped": skipped, "wall_seconds": time.perf_counter() - t_start,
        "resumed_runs": len(done), "run_seconds": float(sum(r.get("seconds", 0.0) for r in results)),
    }
    previous = out / "papers.json"
    if args.report_only and previous.exists():
        # The report describes the invocation that made the runs, not this re-rendering.
        old_meta = json.loads(previous.read_text(encoding="utf-8"))["meta"]
        for k in ("mode", "command", "date", "machine", "cores", "jobs", "wall_seconds", "resumed_runs"):
            if k in old_meta:
                meta[k] = old_meta[k]
        meta["rendered"] = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    write_report(out / "papers.md", agg, meta, figures)
    payload = {"meta": meta, "instances": [i.describe() for i in _INSTANCES.values()], "results": agg}
    (out / "papers.json").write_text(json.dumps(payload, default=_json_default, allow_nan=True) + "\n",
                                     encoding="utf-8")
    print(f"wrote {out / 'papers.md'}, {out / 'papers.json'} and {sum(map(len, figures.values()))} figure(s) "
          f"in {meta['wall_seconds']:.0f} s", flush=True)
    return 0


def _task_key(task: dict[str, Any]) -> str:
    """What makes a run: the same key means the same result (seeded, deterministic)."""
    fields = ("family", "instance", "t", "label", "name", "params", "seed", "run", "budget")
    return json.dumps([task[f] for f in fields], sort_keys=True, default=_json_default)


def _read_journal(path: Path) -> dict[str, dict[str, Any]]:
    """runs.jsonl -> {task key: result}; a torn last line (the process was killed) is ignored.

    A gzipped copy beside it (``runs.jsonl.gz``: a checkpoint committed by a session that ran out
    of time before the benchmark finished) is read first; the live journal's runs come on top."""
    out: dict[str, dict[str, Any]] = {}
    checkpoint = path.with_name(path.name + ".gz")
    texts = []
    if checkpoint.exists():
        texts.append(gzip.decompress(checkpoint.read_bytes()).decode("utf-8"))
    if path.exists():
        texts.append(path.read_text(encoding="utf-8"))
    for line in (line for text in texts for line in text.splitlines()):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        out[rec["key"]] = rec["result"]
    return out


def _json_default(o: Any) -> Any:
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(type(o))


if __name__ == "__main__":
    raise SystemExit(main())
