"""Heterogeneous k-anonymity benchmark in the paper's Table 6 / Fig. 5-9 layout (issue #16 item 8).

    .venv/bin/python benchmarks/hetero.py --quick            # < 3 min on 2 cores (CI)
    .venv/bin/python benchmarks/hetero.py                    # full: hours, see "Time budget"
    .venv/bin/python benchmarks/hetero.py --rows 1000 5000 10000 --k 3 5 10 20 --seeds 1 \\
        --seconds 4 --out benchmarks/results/hetero/medium    # the committed medium run

For each dataset, tuple count n, k, initial heuristic (k-member, l-greedy, and the Hungarian
heuristic of Doka et al. only up to ``--hungarian-max`` = 2,000 tuples: O(k n^3) time, O(n^2)
memory), objective (GCP, SIL) and seed, the initial graph is built (seeded: k-member's first
tuple, the cluster-to-graph conversion), then ``iterated_local_search`` runs for ``--seconds``
on one core. RPI = 100 * (initial - LS) / initial (the paper's eq. 9). The final objective is
checked against a full recomputation (engine.methods.heterogeneous.metrics) and the check is in the JSON.

Datasets (``--datasets``; ``--data`` / ``PPDP_DATA``, default ../shared/data next to the repository):
  adult14 the paper's adult: the UCI adult.data (<data>/uci/adult.data, else the bundled
          benchmarks/data/adult.data.gz) with all 14 attributes as QIDs (6 numeric, 8
          categorical), seeded random order; 32,561 rows: larger n are skipped.
  adult-arx  arx/adult.csv (falls back to engine/data/adult/adult.csv), first n rows; 8 QIDs:
          age numeric; sex, race, marital-status, education, native-country, workclass,
          occupation categorical.
  sparcs  sparcs/*.csv (8 facility files, 63,733 rows), a seeded uniform sample of n rows
          (nested: the n = 1,000 sample is inside the 5,000 one). Census-like, mostly numeric
          QIDs as the paper's IPUMS: Length of Stay ("120 +" read as 120), Total Charges,
          Total Costs, APR Severity of Illness Code numeric; Age Group, Gender categorical.

Time budget: quick = k in {5, 10}, n = 1,000, 1 seed, 5 s per ILS run (about 2.5 min in all);
full = k in {3, 5, 10, 20}, n in {1,000, 5,000, 10,000, 20,000, 40,000}, 5 seeds and
``--seconds`` (default 30 s) per ILS run, i.e. about 2 datasets x 5 n x 4 k x 2-3 heuristics
x 2 objectives x 5 seeds x 30 s = 7 h on one core (the paper gave each run 300 s at 1,000
and 5,000 tuples and 1,200 s at 10,000: our budgets are far smaller, which lowers RPI mostly
at large n). Also measured: initial-solution times at 10,000 tuples, k = 5 (target < 10 s
each) and the move-evaluation rate of benchmarks/hetero_moves.py (target >= 1,000,000 in 60 s).

From ppdp's own releases (``--from-releases``, issue #16 items 5 and 8): adult's first ``--rows``
rows (default 2,000; the committed run: 5,000) with a synthetic disease column, k = 5; ppdp
publishes a lattice generalization and a DRASL microaggregation release, then heterogeneous
releases start from each (``initial = "release"``) with 5 s and 30 s of local search per
objective; GCP and SIL of the converted graph and after the search, the RPI, and whether the
pipeline's verification passed go to from_releases.{json,md} (about 4 min).

    .venv/bin/python benchmarks/hetero.py --from-releases --rows 5000

Outputs (``--out``, default benchmarks/results/hetero, or .../hetero/quick with --quick):
report.md (the exact command first), report.json, fig5_<dataset>_<objective>.png (objective
over time of each heuristic + LS, n = the smallest n, k = 5 or the first k: the paper's Fig. 5)
and rpi_<dataset>.png (mean RPI against k per n, the layout of Fig. 6-9). The Markdown tables
are printed on stdout as well.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import hetero_moves  # noqa: E402
from ppdp.engine.methods.heterogeneous import initial  # noqa: E402
from ppdp.engine.methods.heterogeneous.ils import iterated_local_search  # noqa: E402
from ppdp.engine.methods.heterogeneous.metrics import QidTable, gcp, sil  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "hetero"
BUNDLED_ADULT = ROOT / "src" / "ppdp" / "engine" / "data" / "adult" / "adult.csv"
ADULT_CATEGORICAL = ["sex", "race", "marital-status", "education", "native-country",
                     "workclass", "occupation"]
SPARCS_NUMERIC = ["Length of Stay", "Total Charges", "Total Costs",
                  "APR Severity of Illness Code"]
SPARCS_CATEGORICAL = ["Age Group", "Gender"]
FULL_METRIC = {"gcp": gcp, "sil": sil}
# The paper's RPI ranges (docs/design/paper_notes.md §7: IPUMS, 1k -> 40k tuples, over k-member and l-greedy).
PAPER_RPI = {"gcp": (5.0, 8.5), "sil": (30.0, 54.4)}
SAMPLE_SEED = 20260101


@dataclass(frozen=True)
class Dataset:
    """A benchmark dataset: its encoded QIDs (all rows, in sample order) and where it came from."""

    name: str
    source: str
    qids: str
    table: QidTable

    def head(self, n: int) -> QidTable:
        """The first ``n`` rows (file order for adult, the seeded sample order for SPARCS)."""
        t = self.table
        return QidTable(t.numeric[:n], t.categorical[:n], t.n_categories)


def data_dir(arg: str | None) -> Path:
    """``--data``, else ``PPDP_DATA``, else ../shared/data next to the repository."""
    return Path(arg or os.environ.get("PPDP_DATA") or (ROOT / ".." / "shared" / "data")).resolve()


def _encode(frame: pl.DataFrame, numeric: list[str], categorical: list[str]) -> QidTable:
    codes, sizes = [], []
    for name in categorical:
        values, inverse = np.unique(frame[name].to_numpy().astype(str), return_inverse=True)
        codes.append(inverse)
        sizes.append(values.size)
    num = np.column_stack([frame[c].to_numpy().astype(float) for c in numeric])
    cat = np.column_stack(codes) if codes else np.zeros((frame.height, 0), dtype=np.int64)
    return QidTable(num, cat, tuple(sizes))


def load_adult(root: Path) -> Dataset:
    """adult (ARX copy) from the data directory, else the copy bundled in engine/data."""
    path = root / "arx" / "adult.csv"
    if not path.exists():
        path = BUNDLED_ADULT
    frame = pl.read_csv(path, separator=";")
    table = _encode(frame, ["age"], ADULT_CATEGORICAL)
    return Dataset("adult-arx", str(path), "age (numeric); " + ", ".join(ADULT_CATEGORICAL), table)


UCI_COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
               "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country"]
UCI_NUMERIC = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
BUNDLED_UCI = ROOT / "benchmarks" / "data" / "adult.data.gz"


def load_adult14(root: Path) -> Dataset:
    """The UCI adult.data with all 14 attributes as QIDs, as the paper (6 numeric, 8 categorical;
    "?" is a category of its own), in a seeded random order (the paper "randomly selected up to
    10,000 tuples"): <data>/uci/adult.data when present, else benchmarks/data/adult.data.gz."""
    import gzip
    import io

    local = root / "uci" / "adult.data"
    text = local.read_text() if local.exists() else gzip.open(BUNDLED_UCI, "rt").read()
    frame = pl.read_csv(io.StringIO(text), has_header=False, new_columns=[*UCI_COLUMNS, "salary"],
                        infer_schema_length=0).with_columns(pl.all().str.strip_chars()).drop_nulls()
    frame = frame[np.random.default_rng(SAMPLE_SEED).permutation(frame.height)]
    categorical = [c for c in UCI_COLUMNS if c not in UCI_NUMERIC]
    table = _encode(frame, UCI_NUMERIC, categorical)
    qids = ", ".join(UCI_NUMERIC) + " (numeric); " + ", ".join(categorical)
    return Dataset("adult14", str(local if local.exists() else BUNDLED_UCI.relative_to(ROOT)), qids, table)


def load_sparcs(root: Path) -> Dataset | None:
    """The 8 SPARCS facility files, seeded shuffle; None when the files are absent."""
    files = sorted((root / "sparcs").glob("*.csv"))
    if not files:
        return None
    cols = SPARCS_NUMERIC + SPARCS_CATEGORICAL
    frame = pl.concat([pl.read_csv(f, columns=cols, infer_schema_length=0) for f in files])
    money = [pl.col(c).str.replace_all(r"[$,]", "").cast(pl.Float64) for c in
             ("Total Charges", "Total Costs")]
    frame = frame.with_columns(
        pl.col("Length of Stay").str.replace(r"\s*\+$", "").cast(pl.Float64),
        pl.col("APR Severity of Illness Code").cast(pl.Float64), *money,
    ).drop_nulls()
    order = np.random.default_rng(SAMPLE_SEED).permutation(frame.height)
    frame = frame[order]
    table = _encode(frame, SPARCS_NUMERIC, SPARCS_CATEGORICAL)
    qids = ", ".join(SPARCS_NUMERIC) + " (numeric); " + ", ".join(SPARCS_CATEGORICAL)
    return Dataset("sparcs", f"{root / 'sparcs'} ({len(files)} files)", qids, table)


def heuristics(n: int, hungarian_max: int) -> dict:
    """The initial heuristics run at ``n`` tuples (Hungarian only up to ``hungarian_max``)."""
    out = {
        "k-member": lambda table, k, seed: initial.k_member(table, k, seed=seed),
        "l-greedy": lambda table, k, seed: initial.l_greedy(table, k, seed=seed),
    }
    if n <= hungarian_max:
        out["hungarian"] = lambda table, k, seed: initial.hungarian(table, k)
    return out


def warm_up() -> None:
    """Compile (or load from cache) every Numba kernel so no timing includes JIT."""
    table = hetero_moves.adult_table(60)
    for build in heuristics(60, 60).values():
        g = build(table, 3, 0)
        for objective in FULL_METRIC:
            iterated_local_search(table, g, objective=objective, seconds=5, max_evaluations=2000)


def thin_history(history, ratio: float = 1.05) -> list[list]:
    """The (seconds, evaluations, objective) record with at most one point per 5 % of elapsed
    time (plus the first and last): the Fig. 5 curve on a log time axis looks the same, and the
    JSON stays small (one point per 10,000 evaluations would be ~1,000 points per run)."""
    kept = [history[0]]
    for h in history[1:-1]:
        if h[0] >= max(kept[-1][0] * ratio, 1e-3):
            kept.append(h)
    if len(history) > 1:
        kept.append(history[-1])
    return [[round(float(h[0]), 4), int(h[1]), float(h[2])] for h in kept]


def scan_name(neighbors: int) -> str:
    """How the local search picks a node's partners: the paper's full scan or our candidate lists."""
    return "paper" if neighbors == 0 else f"near-{neighbors}"


def run_case(ds: Dataset, n: int, k: int, seeds: int, seconds: float, hungarian_max: int,
             log, neighbor_counts: tuple[int, ...] = (0,), evaluations: int | None = None) -> list[dict]:
    """Every heuristic x objective x seed x scan at one (dataset, n, k)."""
    table = ds.head(n)
    runs = []
    for name, build in heuristics(n, hungarian_max).items():
        for seed in range(seeds):
            t0 = time.perf_counter()
            start = build(table, k, seed)
            build_s = time.perf_counter() - t0
            for objective, full in FULL_METRIC.items():
                for neighbors in neighbor_counts:
                    # Smaller chunks than the default 100,000 evaluations: the history (Fig. 5's
                    # curve) is recorded between chunks, so this only refines the curve.
                    r = iterated_local_search(table, start, objective=objective,
                                              seconds=0 if evaluations else seconds, max_evaluations=evaluations,
                                              seed=seed, chunk_evaluations=10_000, neighbors=neighbors,
                                              clock="cpu")
                    rpi = 100.0 * (r.initial_objective - r.objective) / r.initial_objective
                    check = abs(full(table, r.graph) - r.objective)
                    best_at = next(h[0] for h in r.history if h[2] <= r.objective + 1e-12)
                    runs.append({
                        "dataset": ds.name, "n": n, "k": k, "initial": name, "objective": objective,
                        "scan": scan_name(neighbors), "seed": seed, "build_seconds": round(build_s, 3),
                        "initial_value": r.initial_objective, "ls_value": r.objective, "rpi": rpi,
                        "evaluations": r.evaluations, "local_optima": r.local_optima,
                        "ls_seconds": round(r.seconds, 3), "best_found_at_s": round(best_at, 3),
                        "full_recompute_diff": check,
                        "history": thin_history(r.history),
                    })
                    log(f"  {ds.name} n={n} k={k} {name:<9} {objective} {scan_name(neighbors)} seed {seed}: "
                        f"{r.initial_objective:.5f} -> {r.objective:.5f} RPI {rpi:6.2f} % "
                        f"({r.evaluations:,} evals, check {check:.1e})")
    return runs


LOADERS = {"adult14": load_adult14, "adult-arx": load_adult, "sparcs": load_sparcs}


def _case_worker(root: str, name: str, n: int, k: int, seeds: int, seconds: float, hungarian_max: int,
                 neighbor_counts: tuple[int, ...], evaluations: int | None) -> list[dict]:
    """One (dataset, n, k) case in a worker process (spawned: it loads the dataset itself)."""
    warm_up()
    return run_case(LOADERS[name](Path(root)), n, k, seeds, seconds, hungarian_max,
                    lambda msg: print(msg, file=sys.stderr, flush=True), neighbor_counts, evaluations)


def run_cases(cases, datasets: dict, root: Path, seeds: int, seconds: float, hungarian_max: int,
              neighbor_counts: tuple[int, ...], jobs: int, log, evaluations: int | None = None) -> list[dict]:
    """Every case, in this process (jobs = 1) or ``jobs`` spawned workers, in case order."""
    if jobs <= 1:
        return [r for name, n, k in cases for r in run_case(datasets[name], n, k, seeds, seconds, hungarian_max,
                                                             log, neighbor_counts, evaluations)]
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(jobs, mp_context=mp.get_context("spawn")) as pool:
        futures = [pool.submit(_case_worker, str(root), name, n, k, seeds, seconds, hungarian_max, neighbor_counts,
                               evaluations)
                   for name, n, k in cases]
        return [r for f in futures for r in f.result()]


def _still_improving(run: dict) -> bool:
    """Whether the run's last improvement came in the final fifth of its time: the time limit,
    not convergence, ended it (the paper's runs had 300-1,200 s)."""
    return run["best_found_at_s"] >= 0.8 * run["ls_seconds"]


def summarize(runs: list[dict]) -> list[dict]:
    """Mean initial / LS objective and RPI over the seeds, one row per case."""
    keys = sorted({(r["dataset"], r["n"], r["k"], r["initial"], r["objective"], r["scan"]) for r in runs},
                  key=lambda t: (t[0], t[1], t[2], t[4], t[3], t[5]))
    out = []
    for ds, n, k, name, objective, scan in keys:
        sel = [r for r in runs if (r["dataset"], r["n"], r["k"], r["initial"],
                                   r["objective"], r["scan"]) == (ds, n, k, name, objective, scan)]
        rpis = np.array([r["rpi"] for r in sel])
        lo, hi = PAPER_RPI[objective]
        mean = float(rpis.mean())
        verdict = ("below the paper's range" if mean < lo else
                   "within the paper's range" if mean <= hi else "above the paper's range")
        if name == "hungarian":  # the paper's prose gives ranges over k-member and l-greedy only
            verdict += " (paper gives no range for this start)"
        out.append({
            "dataset": ds, "n": n, "k": k, "initial": name, "objective": objective, "scan": scan,
            "seeds": len(sel), "initial_value": float(np.mean([r["initial_value"] for r in sel])),
            "ls_value": float(np.mean([r["ls_value"] for r in sel])), "mean_rpi": mean,
            "min_rpi": float(rpis.min()), "max_rpi": float(rpis.max()),
            "build_seconds": float(np.mean([r["build_seconds"] for r in sel])),
            "best_found_at_s": float(np.mean([r["best_found_at_s"] for r in sel])),
            "still_improving": sum(_still_improving(r) for r in sel),
            "reaches_paper": mean >= lo, "verdict": verdict,
        })
    return out


def build_times(datasets: list[Dataset], n: int, k: int) -> list[dict]:
    """Seconds to build each initial graph (k-member, l-greedy) at ``n`` tuples."""
    out = []
    for ds in datasets:
        if ds.table.n < n:
            continue
        table = ds.head(n)
        for name, build in heuristics(n, 0).items():
            t0, c0 = time.perf_counter(), time.process_time()
            build(table, k, 0)
            s, cpu = time.perf_counter() - t0, time.process_time() - c0
            out.append({"dataset": ds.name, "n": n, "k": k, "initial": name, "seconds": round(s, 3),
                        "cpu_seconds": round(cpu, 3), "under_10s": s < 10.0})
    return out


def move_rates(datasets: list[Dataset], seconds: float, k: int) -> list[dict]:
    """benchmarks/hetero_moves.py's random-descent move rate at 10,000 tuples of each dataset
    (and its IPUMS-like numeric4 draws)."""
    instances = {ds.name: ds.head(10_000) for ds in datasets if ds.table.n >= 10_000}
    instances["numeric4"] = hetero_moves.numeric4_table(10_000)
    return [hetero_moves.run(table, name, k=k, objective=objective, seconds=seconds)
            for name, table in instances.items() for objective in ("gcp", "sil")]


def plot(out: Path, runs: list[dict], summary: list[dict], fig5_n: int, fig5_k: int) -> list[str]:
    """The Fig. 5 curves and the RPI-against-k panels; returns the file names written."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    for ds in sorted({r["dataset"] for r in runs}):
        for objective in FULL_METRIC:
            sel = [r for r in runs if r["dataset"] == ds and r["objective"] == objective
                   and r["n"] == fig5_n and r["k"] == fig5_k and r["seed"] == 0]
            if not sel:
                continue
            fig, ax = plt.subplots(figsize=(6, 4))
            for r in sel:
                h = np.array(r["history"], dtype=float)
                # A step curve: the best objective holds until the next improvement.
                ax.step(np.maximum(h[:, 0], 1e-3), h[:, 2], where="post",
                        label=f"{r['initial']} + LS ({r['scan']})")
                ax.axhline(r["initial_value"], ls=":", lw=0.8, color=ax.lines[-1].get_color())
            ax.set_xscale("log")
            ax.set_xlabel("seconds (log)")
            ax.set_ylabel(objective.upper())
            ax.set_title(f"{ds}, n = {fig5_n:,}, k = {fig5_k}: {objective.upper()} over time "
                         f"(dotted: initial)", fontsize=9)
            ax.legend(fontsize=8)
            name = f"fig5_{ds}_{objective}.png"
            fig.tight_layout()
            fig.savefig(out / name, dpi=110)
            plt.close(fig)
            written.append(name)
        rows = [s for s in summary if s["dataset"] == ds]
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for ax, objective in zip(axes, FULL_METRIC, strict=True):
            for n in sorted({s["n"] for s in rows}):
                for name in ("k-member", "l-greedy", "hungarian"):
                    for scan in sorted({s["scan"] for s in rows}):
                        pts = sorted((s["k"], s["mean_rpi"]) for s in rows if s["n"] == n and s["scan"] == scan
                                     and s["initial"] == name and s["objective"] == objective)
                        if pts:
                            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o" if scan == "paper" else "s",
                                    ls=":" if scan == "paper" else "-", label=f"{name} {scan}, n={n:,}")
            lo, hi = PAPER_RPI[objective]
            ax.axhspan(lo, hi, color="grey", alpha=0.2, label="paper's range")
            ax.set_xlabel("k")
            ax.set_ylabel("mean RPI of LS (%)")
            ax.set_title(f"{ds}: {objective.upper()}", fontsize=9)
            ax.legend(fontsize=6)
        name = f"rpi_{ds}.png"
        fig.tight_layout()
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        written.append(name)
    return written


def markdown(command: str, meta: dict, summary: list[dict], builds: list[dict],
             moves: list[dict], figures: list[str]) -> str:
    """The report: command, settings, Table 6 layout, paper-range verdicts, speed."""
    lines = [f"# Heterogeneous k-anonymity benchmark ({meta['mode']})", "",
             "```", command, "```", "",
             f"Machine: {meta['machine']['platform']}, Python {meta['machine']['python']}, "
             f"{meta['machine']['cpus']} CPUs shared with other jobs; ILS on one core. "
             f"Wall time {meta['wall_seconds']:.0f} s.", "",
             f"Settings: n in {meta['rows']}, k in {meta['k']}, {meta['seeds']} seed(s), "
             + (f"{meta['evaluations_per_run']:,} move evaluations per ILS run (an evaluation budget: the same "
                f"work and, for a seed, the same result however loaded the machine; \"last gain at s\" is CPU "
                f"time), " if meta.get("evaluations_per_run") else
                f"{meta['seconds_per_run']:g} s of CPU time per ILS run (the worker's process time, one thread; "
                f"the neighbour lists of the near-m scans are computed inside it), ")
             + f"{meta.get('jobs', 1)} run(s) at once; LS scans "
             f"{', '.join(meta.get('scans', ['paper']))} (paper = Alg. 2's scan of every node, near-m = "
             f"partners among the m nearest tuples, engine/methods/heterogeneous/neighbors.py); Hungarian only up to "
             f"{meta['hungarian_max']:,} tuples. The paper gave each run 300 s (1,000 and "
             f"5,000 tuples) and 1,200 s (10,000), and used IPUMS and a 14-attribute adult.", ""]
    for ds in meta["datasets"]:
        lines.append(f"- **{ds['name']}**: {ds['rows']:,} rows from {ds['source']}; QIDs: "
                     f"{ds['qids']}.")
    for note in meta["notes"]:
        lines.append(f"- {note}")
    lines += ["", "## Table 6 layout: mean objective of the initial solution and after LS, "
              "RPI (eq. 9)", ""]
    lines.append("| dataset | n | k | objective | initial | LS scan | init. value | LS value | "
                 "mean RPI % | min..max RPI % | last gain at s | still improving | "
                 "paper's range | verdict |")
    lines.append("|---|---:|---:|---|---|---|---:|---:|---:|---:|---:|---:|---|---|")
    for s in summary:
        lo, hi = PAPER_RPI[s["objective"]]
        lines.append(
            f"| {s['dataset']} | {s['n']:,} | {s['k']} | {s['objective'].upper()} | "
            f"{s['initial']} | {s['scan']} | {s['initial_value']:.4f} | {s['ls_value']:.4f} | "
            f"{s['mean_rpi']:.2f} | {s['min_rpi']:.2f}..{s['max_rpi']:.2f} | "
            f"{s['best_found_at_s']:.1f} | {s['still_improving']}/{s['seeds']} | {lo:g}-{hi:g} | "
            f"{s['verdict']} |")
    lines += ["", "## Does RPI reach the paper's ranges (GCP 5-8 %, SIL 30-54 %)?", ""]
    for objective in FULL_METRIC:
        for name in ("k-member", "l-greedy", "hungarian"):
            for scan in sorted({s["scan"] for s in summary}):
                sel = [s for s in summary if s["objective"] == objective and s["initial"] == name and s["scan"] == scan]
                if not sel:
                    continue
                low = [s for s in sel if not s["reaches_paper"]]
                if low:
                    cases = ", ".join(f"{s['dataset']} n={s['n']:,} k={s['k']} "
                                      f"({s['mean_rpi']:.1f} %)" for s in low)
                    lines.append(f"- {objective.upper()} over {name}, LS scan {scan}: reached in "
                                 f"{len(sel) - len(low)} of {len(sel)} cases; NOT reached in {cases}.")
                else:
                    lines.append(f"- {objective.upper()} over {name}, LS scan {scan}: reached in all {len(sel)} "
                                 f"cases (RPI {min(s['mean_rpi'] for s in sel):.1f}-"
                                 f"{max(s['mean_rpi'] for s in sel):.1f} %).")
    lines.append("- " + meta["rpi_reading"])
    lines.append("- \"last gain at s\": mean time of the last improvement; \"still improving\": "
                 "runs whose last improvement came in the final fifth of the time limit, i.e. "
                 "the limit rather than convergence ended them.")
    lines += ["", f"## Initial-solution time at {meta['build_n']:,} tuples (target < 10 s each)",
              "", "| dataset | n | k | initial | wall s | CPU s | < 10 s (wall) |", "|---|---:|---:|---|---:|---:|---|"]
    for b in builds:
        lines.append(f"| {b['dataset']} | {b['n']:,} | {b['k']} | {b['initial']} | "
                     f"{b['seconds']:.2f} | {b.get('cpu_seconds', float('nan')):.2f} | {'yes' if b['under_10s'] else 'NO'} |")
    if not builds:
        lines.append("| (no dataset has that many rows) | | | | | |")
    lines += ["", "## Move evaluations (benchmarks/hetero_moves.py's random descent from the "
              "circulant graph, 10,000 tuples, k = 5, one thread; target >= 1,000,000 in 60 s)",
              "",
              "| instance | objective | seconds | evaluations | evals/s | projected in 60 s | "
              "target | check |", "|---|---|---:|---:|---:|---:|---|---:|"]
    for m in moves:
        lines.append(f"| {m['instance']} | {m['objective'].upper()} | {m['seconds']:.1f} | "
                     f"{m['evaluations']:,} | {m['evals_per_s']:,} | {m['evals_in_60s']:,} | "
                     f"{'met' if m['evals_in_60s'] >= 1_000_000 else 'NOT met'} | "
                     f"{m['full_recompute_diff']:.1e} |")
    lines += ["", "## Figures", ""]
    lines += [f"![{f}]({f})" for f in figures]
    lines.append("")
    return "\n".join(lines)


# --- --from-releases: ppdp's own homogeneous releases converted and improved (#16 items 5, 8) ---

ADULT_COLUMNS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass",
                 "occupation", "salary-class"]
DISEASES32 = ROOT / "src" / "ppdp" / "engine" / "data" / "catalogues" / "diseases32.csv"


def _toml(value) -> str:
    return json.dumps(value)  # a JSON string or list of strings is a valid TOML value


def _release_spec(path: Path, db: Path, k: int, output: str, method: str, params: str, budget: int) -> Path:
    """A spec over the benchmark table: adult's 8 QIDs with ARX hierarchies, disease sensitive."""
    qids = ["age", *ADULT_CATEGORICAL]
    keep = [c for c in ADULT_COLUMNS if c not in qids]
    lines = ["[source]", f"database = {_toml('duckdb://' + str(db))}", 'table = "adult"', 'key = "id"',
             f"keep = {_toml(keep)}"]
    for q in qids:
        lines += ["[[quasi_identifiers]]", f"column = {_toml(q)}",
                  f"hierarchy = {_toml(str(BUNDLED_ADULT.parent / f'adult_hierarchy_{q}.csv'))}"]
    lines += ["[sensitive]", 'columns = ["disease"]', "[[privacy.models]]", 'name = "k-anonymity"', f"k = {k}",
              "[optimizer]", 'name = "lattice"', f"budget = {budget}", "seed = 1",
              "[output]", 'schema = "published"', f"name = {_toml(output)}",
              "[method]", f"name = {_toml(method)}", f"params = {{ {params} }}"]
    path.write_text("\n".join(lines) + "\n")
    return path


def from_releases(adult_csv: Path, rows: int, k: int, budgets: list[float], work: Path, log) -> dict:
    """Publish a generalization (lattice) and a DRASL microaggregation release of adult's first
    ``rows`` rows, then for each, each objective and each search budget a heterogeneous release
    started from it (initial = "release"): GCP and SIL of the converted graph and after the
    search, and the RPI (eq. 9) of the searched objective. Everything through run_release."""
    import duckdb

    from ppdp.engine.core.spec import load_spec
    from ppdp.engine.release.run import run_release

    db = work / "adult.duckdb"
    diseases = [line.split(";")[0] for line in DISEASES32.read_text().splitlines()]
    con = duckdb.connect(str(db))
    # adult has no disease column: a fixed hash of the key picks one of the catalogue's 32 (as the tests do)
    con.execute("CREATE TABLE adult AS SELECT CAST(row_number() OVER () AS BIGINT) AS id, * "
                f"FROM read_csv(?, delim = ';', header = true) LIMIT {int(rows)}", [str(adult_csv)])
    con.execute("ALTER TABLE adult ADD COLUMN disease VARCHAR")
    con.execute("UPDATE adult SET disease = list_extract(?, CAST(hash(id, 7) % 32 AS INTEGER) + 1)", [diseases])
    con.close()
    sources, cases = [], []
    for name, method, params in (("adult_lattice", "generalization", ""),
                                 ("adult_drasl", "microaggregation", 'algorithm = "drasl", catalogue = "diseases32"')):
        t0 = time.perf_counter()
        out = run_release(load_spec(_release_spec(work / f"{name}.toml", db, k, name, method, params, 100_000)),
                          progress=False)
        m = out.run.metrics
        sources.append({"release": f"published.{name}", "method": method, "seconds": round(time.perf_counter() - t0, 2),
                        "released_records": m.get("released_records"), "suppressed": m.get("suppressed", 0),
                        "classes": (m.get("class_sizes") or {}).get("classes")})
        log(f"published {name} ({method}) in {sources[-1]['seconds']} s")
        for objective in ("gcp", "sil"):
            for seconds in budgets:
                het = f"het_{name}_{objective}_{int(seconds)}"
                params = f'initial = "release", from = "published.{name}", objective = "{objective}", seconds = {seconds}'
                t0 = time.perf_counter()
                h = run_release(load_spec(_release_spec(work / f"{het}.toml", db, k, het, "heterogeneous", params, 10**12)),
                                progress=False)
                sol, hm = h.run.solution, h.run.metrics
                start = sol["from_release"]
                before, after = sol["initial_objective"], sol["final_objective"]
                checks = h.run.verification.get("method_checks", [])
                cases.append({
                    "release": f"published.{name}", "method": method, "objective": objective, "seconds": seconds,
                    "classes": start["classes"], "classes_kept": start["classes_kept"], "pooled": start["pooled"],
                    "gcp_before": start["converted_gcp"], "gcp_after": hm["gcp"],
                    "sil_before": start["converted_sil"], "sil_after": hm["sil"],
                    "rpi": 100.0 * (before - after) / before if before > 0 else 0.0,
                    "evaluations": sol["evaluations"], "verified": bool(checks) and all(c["passed"] for c in checks),
                    "wall_seconds": round(time.perf_counter() - t0, 2)})
                c = cases[-1]
                log(f"  {objective} {seconds:g} s: {objective} {before:.4f} -> {after:.4f} (RPI {c['rpi']:.1f} %), "
                    f"verified {c['verified']}")
    for src in sources:  # a microaggregation release reports no class sizes: its converted classes
        src["classes"] = src["classes"] or next(c["classes"] for c in cases if c["release"] == src["release"])
    return {"rows": rows, "k": k, "budgets": budgets, "sources": sources, "cases": cases}


def from_releases_markdown(command: str, meta: dict, res: dict) -> str:
    lines = ["# Heterogeneous k-anonymity from ppdp's own releases (#16 items 5, 8)", "", f"Command: `{command}`", "",
             f"adult ({meta['source']}), first {res['rows']:,} rows, k = {res['k']}; QIDs {meta['qids']}; sensitive: a "
             "synthetic disease column (a fixed hash of the key into the 32-disease catalogue, needed by DRASL). Each "
             "release is published by ppdp, then a heterogeneous release starts from its classes "
             "(`initial = \"release\"`; suppressed rows and classes below k are clustered apart by k-member, "
             "engine/methods/heterogeneous/convert.py) and the local search runs for the budget on the searched objective. "
             "Before = the converted graph (§5.5), after = the published heterogeneous release; "
             "RPI = 100 (before - after) / before of the searched objective (eq. 9). Every heterogeneous release "
             "passed the pipeline's verification where the column says so.", "",
             f"Machine: {meta['machine']['platform']}, {meta['machine']['cpus']} CPUs shared with other jobs, search on "
             "one core. Wall time " + f"{meta['wall_seconds']:.0f} s.", "",
             "| source release | method | released | suppressed | classes | publish s |", "|---|---|---:|---:|---:|---:|"]
    for s in res["sources"]:
        lines.append(f"| {s['release']} | {s['method']} | {s['released_records']} | {s['suppressed']:g} | "
                     f"{s['classes'] if s['classes'] is not None else '-'} | {s['seconds']} |")
    lines += ["", "| from | searched | LS s | classes kept / pooled rows | GCP before | GCP after | SIL before | "
              "SIL after | RPI % | evaluations | verified |", "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---|"]
    for c in res["cases"]:
        lines.append(f"| {c['release']} | {c['objective'].upper()} | {c['seconds']:g} | {c['classes_kept']} / {c['pooled']} | "
                     f"{c['gcp_before']:.4f} | {c['gcp_after']:.4f} | {c['sil_before']:.4f} | {c['sil_after']:.4f} | "
                     f"{c['rpi']:.1f} | {c['evaluations']:,} | {'yes' if c['verified'] else 'NO'} |")
    lines.append("")
    return "\n".join(lines)


def run_from_releases(args, argv) -> int:
    """``--from-releases``: publish, convert, search, write from_releases.{json,md}."""
    import tempfile

    rows = (args.rows or [2000])[0]
    k = (args.k or [5])[0]
    budgets = [args.seconds] if args.seconds else [5.0, 30.0]
    out = args.out or OUT
    out.mkdir(parents=True, exist_ok=True)
    command = "python benchmarks/hetero.py " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    path = data_dir(args.data) / "arx" / "adult.csv"
    path = path if path.exists() else BUNDLED_ADULT
    wall0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        res = from_releases(path, rows, k, budgets, Path(work), lambda msg: print(msg, file=sys.stderr, flush=True))
    meta = {"command": command, "source": str(path), "qids": "age (numeric); " + ", ".join(ADULT_CATEGORICAL),
            "machine": {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()},
            "wall_seconds": time.perf_counter() - wall0}
    report = from_releases_markdown(command, meta, res)
    print(report)
    (out / "from_releases.md").write_text(report)
    (out / "from_releases.json").write_text(json.dumps({**meta, **res}, indent=1) + "\n")
    return 0 if all(c["verified"] for c in res["cases"]) else 1


def main(argv=None) -> int:
    """Run the benchmark, print the Markdown, write report.md, report.json and the PNGs."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true",
                   help="k 5 10, 1,000 tuples, 1 seed, 5 s per run, 2 s move rate (< 3 min)")
    p.add_argument("--data", help="data directory holding arx/ and sparcs/ "
                                  "(default: $PPDP_DATA or ../shared/data)")
    p.add_argument("--datasets", nargs="+", default=["adult14", "sparcs"], choices=list(LOADERS))
    p.add_argument("--neighbors", nargs="+", type=int,
                   help="LS candidate-list sizes to run (0 = the paper's full scan; default 0 32: both)")
    p.add_argument("--evaluations", type=int,
                   help="an evaluation budget per ILS run instead of a time limit: the same work, and the same "
                        "result for a seed, however loaded the machine (about 1.3-1.4 million per second on one "
                        "quiet core here: 40,000,000 is about 30 s)")
    p.add_argument("--jobs", type=int, default=1,
                   help="cases run at once in worker processes, one core each (default 1)")
    p.add_argument("--rows", nargs="+", type=int, help="tuple counts n")
    p.add_argument("--k", nargs="+", type=int, help="k values")
    p.add_argument("--seeds", type=int)
    p.add_argument("--seconds", type=float, help="ILS time limit per run")
    p.add_argument("--hungarian-max", type=int, default=2000,
                   help="largest n for the Hungarian heuristic (O(k n^3))")
    p.add_argument("--move-seconds", type=float, help="timed move-rate run per configuration")
    p.add_argument("--out", type=Path)
    p.add_argument("--from-releases", action="store_true",
                   help="publish a lattice generalization and a DRASL microaggregation release of adult (--rows, "
                        "default 2,000; --k, default 5), start heterogeneous releases from each, 5 s and 30 s of LS "
                        "(--seconds: one budget); writes from_releases.{json,md}")
    args = p.parse_args(argv)
    if args.from_releases:
        return run_from_releases(args, argv)
    quick = {"rows": [1000], "k": [5, 10], "seeds": 1, "seconds": 5.0, "move_seconds": 2.0}
    full = {"rows": [1000, 5000, 10_000, 20_000, 40_000], "k": [3, 5, 10, 20], "seeds": 5,
            "seconds": 30.0, "move_seconds": 60.0}
    base = quick if args.quick else full
    rows = args.rows or base["rows"]
    ks = args.k or base["k"]
    seeds = args.seeds or base["seeds"]
    seconds = args.seconds or base["seconds"]
    move_seconds = args.move_seconds or base["move_seconds"]
    out = args.out or (OUT / "quick" if args.quick else OUT)
    out.mkdir(parents=True, exist_ok=True)
    env = " ".join(f"{v}={shlex.quote(os.environ[v])}" for v in ("PPDP_DATA", "NUMBA_NUM_THREADS")
                   if v in os.environ)
    command = (env + " " if env else "") + "python benchmarks/hetero.py " + " ".join(shlex.quote(a) for a in
                                                        (argv if argv is not None else sys.argv[1:]))
    custom = any(v is not None for v in (args.rows, args.k, args.seeds, args.seconds))
    mode = ("quick" if args.quick else "full") + (" with overrides" if custom else "")
    root = data_dir(args.data)
    wall0 = time.perf_counter()

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    datasets, notes = [], []
    for name in args.datasets:
        ds = LOADERS[name](root)
        if ds is None:
            notes.append(f"{name} skipped: no files under {root / name} (pass --data or "
                         f"set PPDP_DATA to the folder holding it).")
        else:
            datasets.append(ds)
    log(f"datasets: {', '.join(f'{d.name} ({d.table.n:,} rows)' for d in datasets)}")
    warm_up()
    neighbor_counts = tuple(args.neighbors if args.neighbors is not None else (0, 32))
    cases = []
    for ds in datasets:
        for n in rows:
            if n > ds.table.n:
                notes.append(f"{ds.name}: n = {n:,} skipped (the dataset has {ds.table.n:,} rows).")
                continue
            cases += [(ds.name, n, k) for k in ks]
    runs = run_cases(cases, {d.name: d for d in datasets}, root, seeds, seconds, args.hungarian_max,
                     neighbor_counts, args.jobs, log, args.evaluations)
    summary = summarize(runs)
    build_n = 10_000
    log(f"initial-solution times at {build_n:,} tuples, k = 5")
    builds = build_times(datasets, build_n, 5)
    log(f"move rate, {move_seconds:g} s per configuration")
    moves = move_rates(datasets, move_seconds, 5)
    fig5_n = min(rows)
    fig5_k = 5 if 5 in ks else ks[0]
    figures = plot(out, runs, summary, fig5_n, fig5_k)

    reached = sum(s["reaches_paper"] for s in summary if s["initial"] != "hungarian")
    total = sum(1 for s in summary if s["initial"] != "hungarian")
    short = [r for r in runs if r["initial"] != "hungarian"
             and r["rpi"] < PAPER_RPI[r["objective"]][0]]
    rpi_reading = (f"Over k-member and l-greedy, the mean RPI reaches the lower end of the "
                   f"paper's range in {reached} of {total} cases. The paper's ranges are for "
                   f"IPUMS with 300-1,200 s per run and are stated over k-member and l-greedy "
                   f"only; the Hungarian rows are shown against the same range for reference. "
                   f"Of the {len(short)} runs below the range, {sum(map(_still_improving, short))} "
                   f"were still improving when their "
                   + (f"{args.evaluations:,} evaluations" if args.evaluations else f"{seconds:g} s") + " ran out.")
    meta = {
        "mode": mode, "command": command,
        "machine": {"platform": platform.platform(), "python": platform.python_version(),
                    "cpus": os.cpu_count(), "threads": 1},
        "rows": rows, "k": ks, "seeds": seeds, "seconds_per_run": seconds, "scans": [scan_name(m) for m in neighbor_counts],
        "jobs": args.jobs, "evaluations_per_run": args.evaluations,
        "hungarian_max": args.hungarian_max, "move_seconds": move_seconds,
        "datasets": [{"name": d.name, "source": d.source, "qids": d.qids, "rows": d.table.n}
                     for d in datasets],
        "notes": notes, "build_n": build_n, "rpi_reading": rpi_reading,
        "paper_rpi": {k: list(v) for k, v in PAPER_RPI.items()},
        "wall_seconds": time.perf_counter() - wall0,
    }
    report = markdown(command, meta, summary, builds, moves, figures)
    print(report)
    (out / "report.md").write_text(report)
    (out / "report.json").write_text(json.dumps({
        **meta, "summary": summary, "build_times": builds, "move_rates": moves,
        "figures": figures, "runs": runs}, indent=1) + "\n")
    log(f"wrote {out}/report.md, report.json and {len(figures)} PNGs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
