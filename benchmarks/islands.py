"""Island speedup and communication cost of ID-DGA (ID-DGA §6.3-6.4, Fig. 7, Table 5).

    python benchmarks/islands.py            # the 400-record instances, 5 runs, budgets x1 and x10
    python benchmarks/islands.py --quick    # T8 T16, 3 runs, budget x1
    python benchmarks/islands.py --first-run   # the default executor's first run (issue #17), see below
    python benchmarks/islands.py --heavy       # id-dga+oracle on all SPARCS records (issue #17 item 4)

For each ID-DGA instance with nR = 400 (T3 T4 T7 T8 T11 T12 T15 T16, benchmarks/instances.py),
ID-DGA runs with 1, 2 and 4 islands (population 40 in total, MI = 5, seeds 1000 * i + r, the
same for every island count), at the paper's budget nQID * nR and at a larger one (x10,
``--budget-scales``). One island runs in this process (``executor = "local"``: the sequential
ID-GA of Table 5); two and four islands run one worker process per island, each with the
paper's synchronous migration (``migration_lag`` 0) and with a lag of one epoch (ours: an island
takes its predecessor's best of one epoch earlier, so it need not wait for it; the run is still
fixed by the seed). The population diversity is not recorded (``diversity_every`` 0, the
default: it is an instrument for HAEF Fig. 9, not part of ID-DGA).

Two run times, both medians over the runs (the runs of the island counts are interleaved so that
the machine's other load hits them alike):

* RT  = ``algorithm_seconds``: the algorithm, without starting the workers. The workers come
  from a persistent pool (an ``IslandRuntime`` of its own: started once, warmed up by
  one unmeasured run per island count) - the paper's islands are long-lived processes. SR and CR
  use RT: SR = RT(1 island) / RT(n islands), CR = CT / RT.
* RT+s = ``run_seconds`` of separate runs that start fresh worker processes (spawn, imports,
  loading the Numba kernels) and stop them at the end; SR+s = RT(1 island) / RT+s.

CT = ``comm_seconds``: the islands phase's wall time minus the compute time of the busiest island
(messages, waiting for the ring predecessor, the master's bookkeeping on the islands' path).

The speedup can only reach the number of cores this machine gives the process, less what other
processes take (the load average before and after each instance is printed and written); the
paper's node had 16 cores. Output: islands.md and islands.json in benchmarks/results (quick:
benchmarks/results/quick).

``--first-run`` (issue #17: "a new user meets the 133 s"): ID-DGA with default settings on a
1,000-row, 10-QID SPARCS instance (k = 2, budget 100,000), each run in a fresh Python process:
with default settings and with ``executor = "local"``, each first with an empty Numba cache
directory (NUMBA_CACHE_DIR: the first run, kernels compiled) and then again in another fresh
process on the cache the first one filled (the second run); ``--with-process`` adds
``executor = "process"`` (4 islands, fresh workers) on an empty cache, and ``--code-root DIR``
runs another checkout's code (e.g. the one before the change) the same way. Prints the ratios
first run (default) / first run (local) and first run (default) / second run (local); writes
islands_first_run.md and .json in benchmarks/results.

``--heavy`` (issue #17 item 4: a heavy instance, where islands should pay): H1 = all 63,733
SPARCS records over the 14 QIDs and hierarchies of the sparcs14 instances (49,099 distinct QID
combinations), k-anonymity k = 5, ``id-dga+oracle``, seed 17, budget 20,000 evaluations in
total (about 30 s for one island on this 2-core machine; ``--quick``: 3,000, 1 run). Cells (see
``HEAVY_CELLS``): 1 island in this process; 2 islands in worker processes and as actors of a
local one-node Ray cluster (2 CPUs, 127.0.0.1, started here and stopped at the end), each with
the paper's synchronous migration and with lag 1; 2 islands one after the other in this process
(the split ceiling, and the reference of the same-seed check). Same total work: two islands get
half the budget and half the population each. Warm workers and actors (one unmeasured run per
cell), a new Problem per run (the oracle's S*(G) cache lives one run, as in a worker), cells
interleaved, medians of ``--runs`` (3). The cores' worth is probed before and after with two
processes running one id-dga+oracle island of H1 each. Writes islands_heavy.md and .json
(quick: in benchmarks/results/quick). The paper instances (the default mode) stay the record
of why islands do not pay at 50-1,000 ms runs.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import instances as inst_mod  # noqa: E402

from ppdp.engine.core.encoding import encode_histogram  # noqa: E402
from ppdp.engine.methods.generalization.optimizers import OPTIMIZERS, run_optimizer  # noqa: E402
from ppdp.engine.methods.generalization.optimizers.evolutionary.runtime import IslandRuntime  # noqa: E402
from ppdp.engine.methods.generalization.optimizers.remote import ProblemSpec  # noqa: E402
from ppdp.engine.methods.generalization.problem import Problem  # noqa: E402
from ppdp.engine.privacy import build_model  # noqa: E402

ISLANDS = (1, 2, 4)
LAGS = (0, 1)  # migration_lag: the paper's synchronous ring, and ours
# (islands, migration_lag) measured; one island has no migration
CONFIGS = [(1, 0)] + [(n, lag) for n in ISLANDS[1:] for lag in LAGS]


def label(n: int, lag: int) -> str:
    return f"{n}" if n == 1 else f"{n}/lag {lag}"
QUICK = ["T8", "T16"]


def cores() -> tuple[int, int]:
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return os.cpu_count() or 1, usable


def load() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def _kernel_worker(conn, pspec, budget: int, optimizer: str = "id-dga", fresh: bool = False) -> None:
    """Runs ``optimizer`` (one island, in this process) on the instance ``reps`` times when sent
    ``reps`` and answers with the wall time; None stops it. The islands' own workload, for
    ``kernel_capacity``. ``fresh``: a new Problem for every run (the oracle's S*(G) cache of one
    run would make the next runs of the same seeds cheaper: an island's Problem lives one run)."""
    OPTIMIZERS.names()  # imports the built-in optimizers
    problem = pspec.build()
    run_optimizer(optimizer, problem, budget=budget, seed=0, params={"islands": 1})  # load the kernels
    while (reps := conn.recv()) is not None:
        t = time.perf_counter()
        for seed in range(reps):
            run_optimizer(optimizer, pspec.build() if fresh else problem, budget=budget, seed=seed,
                          params={"islands": 1})
        conn.send(time.perf_counter() - t)


def kernel_capacity(problem, budget: int, probes: int = 3, seconds: float = 0.3, optimizer: str = "id-dga",
                    fresh: bool = False) -> float:
    """How many cores' worth two processes running the islands' own kernels get right now (2.0 =
    two full cores): ``optimizer`` (ID-GA by default) on the instance, repeated for about
    ``seconds``, in one process alone over the slower of two running at once, median of
    ``probes``. No messages: this is the most that two islands' compute can gain on this machine
    (a pure-Python loop gets more out of two busy virtual CPUs than these Numba kernels do, so
    the probe runs the kernels themselves)."""
    ctx = mp.get_context("spawn")
    pspec = ProblemSpec.of(problem)
    pipes = [ctx.Pipe() for _ in range(2)]
    procs = [ctx.Process(target=_kernel_worker, args=(child, pspec, budget, optimizer, fresh), daemon=True)
             for _, child in pipes]
    for p in procs:
        p.start()
    try:
        ends = [parent for parent, _ in pipes]
        ends[0].send(1)
        one = ends[0].recv()
        reps = max(1, int(np.ceil(seconds / max(one, 1e-6))))
        ratios = []
        for _ in range(probes):
            ends[0].send(reps)
            alone = ends[0].recv()
            for end in ends:
                end.send(reps)
            together = max(end.recv() for end in ends)
            ratios.append(2 * alone / together)
    finally:
        for parent, _ in pipes:
            try:
                parent.send(None)
            except OSError:
                pass
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.kill()
    return float(np.median(ratios))


def run(inst, n: int, lag: int, budget: int, seed: int, local: bool = False) -> dict:
    params = {"islands": n, "executor": "local" if n == 1 or local else "process", "migration_lag": lag}
    res = run_optimizer("id-dga", inst.problem(), budget=budget, seed=seed, params=params)
    i = res.info
    return {"rt": i["algorithm_seconds"], "run": i["run_seconds"], "startup": i["startup_seconds"],
            "shutdown": i["shutdown_seconds"], "ct": i["comm_seconds"], "cr": i["comm_ratio"],
            "compute": max(i["compute_seconds_per_island"]), "compute_sum": sum(i["compute_seconds_per_island"]),
            "epochs": i["epochs"], "td": res.td,
            "feasible": res.feasible, "pooled": i["worker_pool"]}


def med(xs: list[float]) -> float:
    return float(np.median(xs)) if xs else float("nan")


def measure(inst, budget: int, runs: int, cold_runs: int) -> dict:
    number = int(inst.name[1:])  # the same seeds as benchmarks/papers.py
    warm: dict[tuple[int, int], list[dict]] = {c: [] for c in CONFIGS}
    cold: dict[tuple[int, int], list[dict]] = {c: [] for c in CONFIGS if c[0] > 1}
    # The same two islands (lag 0) one after the other in this process: their compute without
    # communication or a second process, i.e. how far splitting the population alone lets SR go.
    split: list[dict] = []
    load_before, capacity_before = load(), kernel_capacity(inst.problem(), budget)
    with IslandRuntime():  # workers of its own, started once
        for n, lag in CONFIGS:  # start and warm up the workers; not measured
            run(inst, n, lag, budget, seed=1000 * number + 999)
        for r in range(runs):
            for n, lag in CONFIGS:
                warm[n, lag].append(run(inst, n, lag, budget, seed=1000 * number + r))
            split.append(run(inst, 2, 0, budget, seed=1000 * number + r, local=True))
    with IslandRuntime(pooled=False):  # no warm pool: start-up and shut-down included
        for r in range(cold_runs):
            for n, lag in cold:
                cold[n, lag].append(run(inst, n, lag, budget, seed=1000 * number + r))
    out = {"instance": inst.name, "nQID": inst.n_qids, "nR": inst.n_records, "budget": budget,
           "load_before": load_before, "load_after": load(), "capacity_before": capacity_before,
           "capacity_after": kernel_capacity(inst.problem(), budget), "islands": {}}
    rt1 = med([x["rt"] for x in warm[1, 0]])
    out["split"] = {"busiest": med([x["compute"] for x in split]), "sum": med([x["compute_sum"] for x in split]),
                    "raw": split}
    out["split"]["ceiling"] = rt1 / out["split"]["busiest"]
    for c in CONFIGS:
        w = warm[c]
        cell = {k: med([x[k] for x in w]) for k in ("rt", "run", "startup", "shutdown", "ct", "cr", "compute",
                                                    "epochs", "td")}
        cell["sr"] = rt1 / cell["rt"]
        cell["sr_no_ct"] = rt1 / cell["compute"]  # SR had communication cost nothing
        cell["feasible"] = all(x["feasible"] for x in w)
        if c in cold:
            cell["rt_cold"] = med([x["run"] for x in cold[c]])
            cell["startup_cold"] = med([x["startup"] for x in cold[c]])
            cell["shutdown_cold"] = med([x["shutdown"] for x in cold[c]])
            cell["sr_cold"] = rt1 / cell["rt_cold"]
        cell["raw"] = w
        if c in cold:
            cell["raw_cold"] = cold[c]
        out["islands"][label(*c)] = cell
    return out


def cores_worth(row: dict) -> float:
    """The parallelism the machine offered around an instance's runs (the smaller of the probes
    before and after, at most 2)."""
    return min(row["capacity_before"], row["capacity_after"], 2.0)


def table5(rows: list[dict], key: str) -> list[str]:
    L = ["| Test instance | ID-GA RT (ms) | ID-DGA RT (ms) | CT (ms) | SR | CR | ID-DGA RT+s (ms) | SR+s "
         "| cores' worth | SR / cores' worth | SR at CT = 0 | split ceiling | ceiling × cores' worth / 2 |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        a, b = row["islands"]["1"], row["islands"][key]
        ceiling = row["split"]["ceiling"] if key.startswith("2/") else float("nan")
        L.append(f"| {row['instance']} | {1000 * a['rt']:.2f} | {1000 * b['rt']:.2f} | {1000 * b['ct']:.2f} | "
                 f"{b['sr']:.2f} | {100 * b['cr']:.2f}% | {1000 * b['rt_cold']:.1f} | {b['sr_cold']:.2f} | "
                 f"{cores_worth(row):.2f} | {b['sr'] / cores_worth(row):.2f} | {b['sr_no_ct']:.2f} | "
                 + (f"{ceiling:.2f} | {ceiling * cores_worth(row) / 2:.2f} |" if ceiling == ceiling else " | |"))
    srs = [row["islands"][key]["sr"] for row in rows]
    crs = [row["islands"][key]["cr"] for row in rows]
    srs_c = [row["islands"][key]["sr_cold"] for row in rows]
    caps = [cores_worth(row) for row in rows]
    eff = [s / c for s, c in zip(srs, caps, strict=True)]
    no_ct = [row["islands"][key]["sr_no_ct"] for row in rows]
    ceil = [row["split"]["ceiling"] for row in rows] if key.startswith("2/") else []
    bound = [c * w / 2 for c, w in zip(ceil, caps, strict=True)] if ceil else []
    L.append(f"| median | | | | {med(srs):.2f} | {100 * med(crs):.2f}% | | {med(srs_c):.2f} | {med(caps):.2f} "
             f"| {med(eff):.2f} | {med(no_ct):.2f} | " + (f"{med(ceil):.2f} | {med(bound):.2f} |" if ceil else " | |"))
    L.append(f"| min | | | | {min(srs):.2f} | | | {min(srs_c):.2f} | {min(caps):.2f} | {min(eff):.2f} "
             f"| {min(no_ct):.2f} | " + (f"{min(ceil):.2f} | {min(bound):.2f} |" if ceil else " | |"))
    return L


# The child of ``--first-run``: a fresh interpreter that builds the instance and runs ID-DGA once.
# Self-contained (only the code root's engine and benchmarks/instances.py), so that it runs any
# checkout's code. Prints one JSON line.
_FIRST_RUN_CHILD = """
import json, sys, time
root, data, rows, budget, seed, params = json.loads(sys.argv[1])
sys.path[:0] = [root, root + "/benchmarks"]
t0 = time.perf_counter()
import numpy as np
import instances as I
from ppdp.engine.core.encoding import encode_histogram
from ppdp.engine.privacy import build_model
from ppdp.engine.methods.generalization.optimizers import run_optimizer
from ppdp.engine.methods.generalization.problem import Problem
frame, hs = I._sparcs(data)
sample = np.sort(np.random.default_rng([seed, 3, 1]).choice(frame.height, size=rows, replace=False))
q = I.SPARCS_QIDS
table = encode_histogram(I._histogram(frame[sample.tolist()], q), q, [], [hs[x] for x in q])
problem = Problem(table, [build_model("k-anonymity", {"k": 2})])
t1 = time.perf_counter()
res = run_optimizer("id-dga", problem, budget=budget, seed=seed, params=params)
t2 = time.perf_counter()
i = res.info
print(json.dumps({"setup_seconds": t1 - t0, "run_seconds": t2 - t1, "td": res.td, "feasible": res.feasible,
                  "n_qids": len(q), "n_records": int(table.n_records), "executor": i.get("executor"),
                  "why": i.get("executor_why", ""), "startup_seconds": i.get("startup_seconds"),
                  "choice_seconds": i.get("executor_choice_seconds"),
                  "algorithm_seconds": i.get("algorithm_seconds")}))
"""


def first_run_child(root: Path, data: Path, rows: int, budget: int, seed: int, params: dict, cache: Path) -> dict:
    """One ID-DGA run in a fresh interpreter with NUMBA_CACHE_DIR = ``cache``; its figures, and
    the wall time of the whole process."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _FIRST_RUN_CHILD,
                          json.dumps([str(root), str(data), rows, budget, seed, params])],
                         cwd=root, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t
    if out.returncode != 0:
        raise RuntimeError(f"first-run child failed ({out.returncode}):\n{out.stderr[-3000:]}")
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row["process_seconds"] = wall
    return row


def first_run(args: argparse.Namespace) -> int:
    """``--first-run``: see the module's docstring."""
    import shutil
    import tempfile

    root = Path(args.code_root).resolve() if args.code_root else Path(__file__).resolve().parents[1]
    data = inst_mod.data_dir(args.data)
    inst_mod._require(data, "sparcs")
    out = Path(args.out) if args.out else Path(__file__).resolve().parent / "results"
    out.mkdir(parents=True, exist_ok=True)
    n_cpu, usable = cores()
    rows, budget, seed = args.rows, args.budget, args.seed
    cases = [("default", {}), ("local", {"executor": "local"})]
    if args.with_process:
        cases.append(("process", {"executor": "process"}))
    results: dict[str, dict] = {}
    tmp = Path(tempfile.mkdtemp(prefix="ppdp-numba-first-run-"))
    try:
        for name, params in cases:
            cache = tmp / name  # empty: nothing compiled yet
            warm_up_s = None
            if args.after_install:  # what `make` does after installing: ppdp warm-up fills the cache
                t0 = time.perf_counter()
                subprocess.run([sys.executable, "-m", "ppdp.engine.app.cli", "warm-up"], cwd=root, check=True,
                               env={**os.environ, "NUMBA_CACHE_DIR": str(cache)}, stdout=subprocess.DEVNULL)
                warm_up_s = time.perf_counter() - t0
            load_before = load()
            first = first_run_child(root, data, rows, budget, seed, params, cache)
            second = first_run_child(root, data, rows, budget, seed, params, cache) if name != "process" else None
            results[name] = {"params": params, "first": first, "second": second, "load_before": load_before,
                             "load_after": load(), "warm_up_seconds": warm_up_s}
            print(f"{name}: first run {first['run_seconds']:.2f} s ({first['executor']}; {first['why']}), "
                  + (f"second run {second['run_seconds']:.2f} s, " if second else "")
                  + f"TD {first['td']:.1f}; load {load_before:.2f} -> {load():.2f}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    d, lo = results["default"], results["local"]
    ratio_first = d["first"]["run_seconds"] / lo["first"]["run_seconds"]
    ratio_warm = d["first"]["run_seconds"] / lo["second"]["run_seconds"]
    ratio_second = d["second"]["run_seconds"] / lo["second"]["run_seconds"]
    same = len({r["first"]["td"] for r in results.values()} | {r["second"]["td"] for r in results.values() if r["second"]}) == 1
    print(f"ratio first run default / first run local: {ratio_first:.2f}; first run default / second run local: "
          f"{ratio_warm:.2f}; second runs default / local: {ratio_second:.2f}; same TD everywhere: {same}", flush=True)
    cmd = " ".join(["python benchmarks/islands.py"] + (args.argv or []))
    L = ["# ID-DGA's first run with default settings (issue #17, item 1)\n",
         f"Generated by `{cmd}` (code: {'this checkout' if not args.code_root else args.code_root}); machine with "
         f"{n_cpu} cores, {usable} usable, shared with other work (load averages below). SPARCS 2015 (8 facility "
         f"files), {rows} records drawn with `default_rng([{seed}, 3, 1])`, the 10 QIDs of benchmarks/instances.py "
         f"(HAEF family hierarchies), k-anonymity k = 2, ID-DGA (4 islands, population 40, MI 5), budget "
         f"{budget:,}, seed {seed}. Every run is a fresh Python process; \"first run\" = "
         + ("the first run after installing: an empty Numba cache directory filled by `ppdp warm-up`, as `make` "
            "does after `pip install` (its time in the last column), " if args.after_install else
            "empty Numba cache directory (every kernel compiled), ")
         + "\"second run\" = a new process on the cache the first one filled. "
         "Run time = `run_optimizer` wall time (compilation, the executor choice and worker start-up included; "
         "imports and the instance build excluded).\n",
         "| settings | executor that ran | why | first run (s) | second run (s) | TD | load before -> after "
         "| install warm-up (s) |",
         "|---|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        f, s2 = r["first"], r["second"]
        w = r.get("warm_up_seconds")
        L.append(f"| {name} | {f['executor']} | {f['why']} | {f['run_seconds']:.2f} | "
                 f"{'' if s2 is None else format(s2['run_seconds'], '.2f')} | {f['td']:.1f} | "
                 f"{r['load_before']:.2f} -> {r['load_after']:.2f} | {'' if w is None else format(w, '.0f')} |")
    L += ["", f"- first run with default settings / first run with executor = \"local\": **{ratio_first:.2f}**",
          f"- first run with default settings / second run with executor = \"local\" (the issue's 3.5 s "
          f"comparison, compile time included on one side only): **{ratio_warm:.2f}**",
          f"- second runs, default / local: {ratio_second:.2f}", f"- same TD in every run: {same}"]
    if "process" in results:
        p = results["process"]["first"]
        L.append(f"- executor = \"process\" on an empty cache: {p['run_seconds']:.2f} s, of which start-up "
                 f"{p['startup_seconds']:.2f} s (the master compiles, then 4 fresh workers load the kernels)")
    text = "\n".join(L) + "\n"
    print("\n" + text, flush=True)
    stem = args.first_run_name or "islands_first_run"
    (out / f"{stem}.md").write_text(text, encoding="utf-8")
    (out / f"{stem}.json").write_text(json.dumps({"cores": n_cpu, "usable_cores": usable, "rows": rows,
                                                  "budget": budget, "seed": seed, "code_root": str(root),
                                                  "ratio_first_over_local_first": ratio_first,
                                                  "ratio_first_over_local_second": ratio_warm,
                                                  "ratio_second_over_local_second": ratio_second,
                                                  "same_td": same, "results": results}, indent=1) + "\n",
                                      encoding="utf-8")
    print(f"wrote {out / (stem + '.md')} and .json", flush=True)
    return 0


# -- --heavy: ID-DGA+oracle on every SPARCS record (issue #17 item 4) -----------------------

HEAVY_OPTIMIZER = "id-dga+oracle"
HEAVY_K = 5
HEAVY_BUDGET = 20_000  # evaluations in total, whatever the island count (~30 s for one island here)
HEAVY_QUICK_BUDGET = 3_000
HEAVY_SEED = 17
# Below this many cores' worth for two processes the machine is too busy for the run to say
# anything about two islands' speedup: the verdict says so.
HEAVY_QUIET_WORTH = 1.5


@dataclass(frozen=True)
class HeavyCell:
    """One way of running the heavy instance: island count, executor and migration lag."""

    label: str
    islands: int
    executor: str
    lag: int = 0


HEAVY_CELLS = (
    HeavyCell("1 island, local", 1, "local"),
    HeavyCell("2 islands, process", 2, "process"),
    HeavyCell("2 islands, process, lag 1", 2, "process", 1),
    HeavyCell("2 islands, ray", 2, "ray"),
    HeavyCell("2 islands, ray, lag 1", 2, "ray", 1),
    # The same two islands one after the other in this process: the split ceiling (no second
    # process, no messages) and the reference of the same-seed determinism check.
    HeavyCell("2 islands, local", 2, "local"),
)


def heavy_table(data: Path):
    """H1: every SPARCS record (8 facility files) over the 14 QIDs and hierarchies of the
    sparcs14 instances, encoded as the histogram of distinct QID combinations."""
    frame, hs, qids = inst_mod.sparcs14_data(str(data))
    table = encode_histogram(inst_mod._histogram(frame, qids), qids, [], [hs[q] for q in qids])
    return table, frame.height, qids


def heavy_problem(table) -> Problem:
    """A new Problem for every run: the oracle's S*(G) cache and the class cache live in the
    Problem, and a worker builds its own for every run; reusing one here would hand the in-process
    runs the previous run's S*(G) of the same seed."""
    return Problem(table, [build_model("k-anonymity", {"k": HEAVY_K})])


def _cpu_of_descendants() -> dict[int, tuple[str, float]]:
    """pid -> (command name, CPU seconds used so far) of this process and every process below it
    (island workers, the local Ray cluster's raylet, GCS and actors), from /proc; {} elsewhere.
    CPU seconds do not grow while a process waits for a core, so they show the islands' work
    and the overheads whatever the machine's other load does to the wall times."""
    proc = Path("/proc")
    if not proc.is_dir():
        return {}
    tick = os.sysconf("SC_CLK_TCK")
    stats: dict[int, tuple[int, str, float]] = {}
    for d in proc.iterdir():
        if not d.name.isdigit():
            continue
        try:
            head, rest = (d / "stat").read_text().rsplit(")", 1)
            cmd = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        f = rest.split()
        name = "ray actor" if cmd and cmd[0].startswith(b"ray::") else head.split("(", 1)[1]
        stats[int(d.name)] = (int(f[1]), name, (int(f[11]) + int(f[12])) / tick)
    mine = {os.getpid()}
    grew = True
    while grew:
        below = {pid for pid, (ppid, _, _) in stats.items() if ppid in mine} - mine
        grew = bool(below)
        mine |= below
    return {pid: (stats[pid][1], stats[pid][2]) for pid in mine if pid in stats}


def heavy_run(table, cell: HeavyCell, budget: int, seed: int) -> dict:
    """One run of ``cell``; the figures the report needs (timings from ``run_islands``'s info)."""
    params = {"islands": cell.islands, "executor": cell.executor, "migration_lag": cell.lag}
    problem = heavy_problem(table)
    before = _cpu_of_descendants()
    cpu = time.process_time()
    res = run_optimizer(HEAVY_OPTIMIZER, problem, budget=budget, seed=seed, params=params)
    cpu = time.process_time() - cpu
    after = _cpu_of_descendants()
    used = {pid: (name, c - before.get(pid, (name, 0.0))[1]) for pid, (name, c) in after.items() if pid != os.getpid()}
    # The island processes are the busy ones (a worker or actor per island, started before the
    # run); the rest of the processes below this one is overhead (Ray's raylet, GCS, idle ones).
    busy = sorted((c for _, c in used.values()), reverse=True)
    islands_cpu = busy[:cell.islands] if cell.executor != "local" else [cpu]
    other_cpu = sum(busy[cell.islands:]) if cell.executor != "local" else sum(busy)
    i = res.info
    # master_cpu: this process's CPU time over the whole run (start-up included); with workers it
    # is the master's serial share (collecting reports, the tracker, sending the setup).
    return {"rt": i["algorithm_seconds"], "run": i["run_seconds"], "startup": i["startup_seconds"], "master_cpu": cpu,
            "island_cpu": max(islands_cpu), "islands_cpu": sum(islands_cpu), "other_cpu": other_cpu,
            "shutdown": i["shutdown_seconds"], "ct": i["comm_seconds"], "cr": i["comm_ratio"],
            "islands_seconds": i["islands_seconds"], "compute": max(i["compute_seconds_per_island"]),
            "compute_sum": sum(i["compute_seconds_per_island"]),
            "compute_per_island": i["compute_seconds_per_island"], "epochs": i["epochs"],
            "evaluations_per_island": i["evaluations_per_island"], "executor": i["executor"],
            "td": res.td, "g": [int(x) for x in res.g], "feasible": res.feasible, "evaluations": res.evaluations}


def wire_sizes(table, epochs: int = 3) -> dict:
    """What travels per run and per epoch with two islands of H1 (bytes), and an island's epoch
    time here: the Problem as a ``ProblemSpec`` (once per run, to each worker or the object
    store), an epoch's migrant on the ring of pipes (``encode_migrant``: S as bits) and as Ray
    passes it (the pickled Individual), an epoch's report to the master (``pack_reports``)."""
    import pickle

    from ppdp.engine.methods.generalization.optimizers.evolutionary.executors.wire import (
        encode_migrant,
        pack_reports,
    )
    from ppdp.engine.methods.generalization.optimizers.evolutionary.island import IslandSpec
    from ppdp.engine.methods.generalization.optimizers.evolutionary.params import parse_params
    from ppdp.engine.methods.generalization.optimizers.id_dga import ID_DGA_DEFAULTS, IDDGAIsland

    problem = heavy_problem(table)
    config = parse_params(HEAVY_OPTIMIZER, {"islands": 2, "oracle": True}, ID_DGA_DEFAULTS)
    island = IslandSpec(IDDGAIsland, config, HEAVY_BUDGET // 2, np.random.SeedSequence(0), 0, 20).build(problem)
    island.run(int(config["migration_interval"]), None)  # the initial population: not a typical epoch
    rows = []
    for _ in range(epochs):
        t = time.perf_counter()
        r = island.run(int(config["migration_interval"]), None)
        seconds = time.perf_counter() - t
        best, r.best = r.best, None
        rows.append((seconds, len(encode_migrant(best, None, 0)), len(pickle.dumps(best)),
                     len(pickle.dumps(pack_reports([r])))))
    return {"problem_spec_bytes": len(pickle.dumps(ProblemSpec.of(problem))),
            "epoch_seconds": med([x[0] for x in rows]), "ring_migrant_bytes": rows[-1][1],
            "ray_migrant_bytes": rows[-1][2], "report_bytes": med([x[3] for x in rows])}


def _start_ray() -> tuple[object | None, str]:
    """A local one-node Ray cluster of 2 CPUs on 127.0.0.1 for this process (None and why when
    Ray is missing or already running here)."""
    try:
        import ray
    except ImportError:
        return None, "Ray is not installed (pip install 'ppdp[ray]')"
    if ray.is_initialized():
        return None, "Ray is already initialized in this process"
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
             _node_ip_address="127.0.0.1")
    return ray, ""


def heavy(args: argparse.Namespace) -> int:
    """``--heavy``: see the module's docstring."""
    from contextlib import ExitStack

    quick = args.quick
    runs = args.runs or (1 if quick else 3)
    budget = args.heavy_budget or (HEAVY_QUICK_BUDGET if quick else HEAVY_BUDGET)
    seed = HEAVY_SEED if args.heavy_seed is None else args.heavy_seed
    out = Path(args.out) if args.out else Path(__file__).resolve().parent / "results" / ("quick" if quick else "")
    out.mkdir(parents=True, exist_ok=True)
    stem = "islands_heavy"
    n_cpu, usable = cores()
    data = inst_mod.data_dir(args.data)
    inst_mod._require(data, "sparcs")
    OPTIMIZERS.names()  # imports the built-in optimizers
    table, n_rows, qids = heavy_table(data)
    lattice = int(np.prod(table.heights + 1))
    print(f"H1: {n_rows:,} SPARCS records, {len(qids)} QIDs, {len(table.counts):,} distinct QID combinations, "
          f"lattice {lattice:,} nodes; {HEAVY_OPTIMIZER}, k = {HEAVY_K}, budget {budget:,} evaluations in total, "
          f"seed {seed}; cores {n_cpu} ({usable} usable), load {load():.2f}", flush=True)
    cells = [c for c in HEAVY_CELLS if not (args.no_ray and c.executor == "ray")]
    wire = wire_sizes(table)
    # The probe runs the islands' own kernels: one island of the heavy instance at a small budget,
    # a fresh Problem per run (as a worker's), for about probe_seconds per repetition.
    probe_budget = max(budget // 20, 100)
    probe_seconds = 2.0 if quick else 4.0
    t_start = time.perf_counter()
    load_before = load()
    capacity_before = kernel_capacity(heavy_problem(table), probe_budget, seconds=probe_seconds,
                                      optimizer=HEAVY_OPTIMIZER, fresh=True)
    print(f"cores' worth before: {capacity_before:.2f}", flush=True)
    raw: dict[str, list[dict]] = {c.label: [] for c in cells}
    warm_budget = max(budget // 10, 200)
    ray_note = ""
    with ExitStack() as stack:
        stack.enter_context(IslandRuntime())
        ray = None
        if any(c.executor == "ray" for c in cells):
            ray, ray_note = _start_ray()
            if ray is None:
                print(f"no Ray cells: {ray_note}", flush=True)
                cells = [c for c in cells if c.executor != "ray"]
            else:
                from ppdp.engine.methods.generalization.optimizers.ray_executor import (
                    ray_actor_pool,
                )
                stack.callback(ray.shutdown)
                stack.enter_context(ray_actor_pool())  # closed before the cluster stops
        for c in cells:  # start and warm up the workers and actors; not measured
            heavy_run(table, c, warm_budget, seed + 999)
        for r in range(runs):  # interleaved: the machine's other load hits every cell alike
            for c in cells:
                x = heavy_run(table, c, budget, seed)
                raw[c.label].append(x)
                print(f"run {r + 1}/{runs} {c.label}: RT {x['rt']:.2f} s, busiest island {x['compute']:.2f} s, "
                      f"islands' compute {x['compute_sum']:.2f} s, CT {x['ct']:.2f} s (CR {100 * x['cr']:.1f}%), "
                      f"epochs {x['epochs']}, TD {x['td']:.1f}, load {load():.2f}", flush=True)
    capacity_after = kernel_capacity(heavy_problem(table), probe_budget, seconds=probe_seconds,
                                     optimizer=HEAVY_OPTIMIZER, fresh=True)
    wall = time.perf_counter() - t_start
    worth = min(capacity_before, capacity_after, 2.0)
    raw = {c.label: raw[c.label] for c in cells}
    rt1 = med([x["rt"] for x in raw[HEAVY_CELLS[0].label]])
    cpu1 = med([x["island_cpu"] for x in raw[HEAVY_CELLS[0].label]])
    summary: dict[str, dict] = {}
    for c in cells:
        xs = raw[c.label]
        cell = {k: med([x[k] for x in xs]) for k in ("rt", "ct", "cr", "compute", "compute_sum", "epochs", "startup",
                                                     "master_cpu", "island_cpu", "islands_cpu", "other_cpu")}
        cell["sr"] = rt1 / cell["rt"]
        cell["sr_over_worth"] = cell["sr"] / worth
        cell["sr_no_ct"] = rt1 / cell["compute"]
        # Load-proof: one island's CPU seconds over the busier island's (two free cores, free messages)
        cell["sr_cpu"] = cpu1 / cell["island_cpu"] if cell["island_cpu"] > 0 else float("nan")
        cell["tds"] = sorted({x["td"] for x in xs})
        cell["feasible"] = all(x["feasible"] for x in xs)
        summary[c.label] = cell

    def same(a: str, b: str) -> bool | None:
        if a not in raw or b not in raw:
            return None
        return all(x["td"] == y["td"] and x["g"] == y["g"] for x, y in zip(raw[a], raw[b], strict=True))

    determinism = {
        "process == local (2 islands, lag 0)": same("2 islands, process", "2 islands, local"),
        "ray == local (2 islands, lag 0)": same("2 islands, ray", "2 islands, local"),
        "ray == process (2 islands, lag 1)": same("2 islands, ray, lag 1", "2 islands, process, lag 1"),
    }
    two = [c.label for c in cells if c.islands == 2 and c.executor != "local"]
    verdict = " ".join(f"{lab}: SR {summary[lab]['sr']:.2f} = {summary[lab]['sr_over_worth']:.2f} of the cores' "
                       f"worth ({'meets' if summary[lab]['sr_over_worth'] >= 0.85 else 'misses'} 0.85)." for lab in two)
    if worth < HEAVY_QUIET_WORTH:
        verdict += (f" **Not evidence**: two processes got only {worth:.2f} cores' worth here (load {load_before:.1f} "
                    f"before the runs), below {HEAVY_QUIET_WORTH}: the other load, not the islands, set these times "
                    "(an SR / cores' worth above 1 says the probes and the runs met different load). Rerun on a "
                    "quiet machine.")
    cmd = " ".join(["python benchmarks/islands.py"] + (args.argv or []))
    L = [f"# ID-DGA+oracle islands on a heavy instance ({'quick' if quick else 'full'} mode)\n",
         f"Generated by `{cmd}`; machine with {n_cpu} cores, {usable} usable by this process, shared with other "
         f"work (load {load_before:.2f} before, {load():.2f} after). Total {wall:.0f} s.\n",
         f"Instance H1: all {n_rows:,} SPARCS 2015 records (8 facility files) over the 14 QIDs and hierarchies of "
         f"the sparcs14 instances (benchmarks/instances.py `sparcs14_data`): {len(table.counts):,} distinct QID "
         f"combinations (the histogram the Problem is built over), lattice {lattice:,} nodes. k-anonymity k = "
         f"{HEAVY_K}; optimizer `{HEAVY_OPTIMIZER}` (every evaluated solution repaired with the exact suppression "
         f"oracle S*(G)), population 40 in total, MI = 5 (one island: epochs of 50 generations, no migration); "
         f"seed {seed} in every cell.\n",
         f"Same total work: the budget is {budget:,} evaluations in total in every cell; with 2 islands each "
         f"island gets half of it ({budget // 2:,}) and half of the population (20), as `run_islands` splits "
         f"both. Every run builds a new Problem (the S*(G) cache lives one run, as in a worker). "
         f"{runs} measured run(s) per cell after one unmeasured warm-up run per cell at budget {warm_budget:,} "
         f"(workers from a persistent pool, Ray actors from `ray_actor_pool`); medians; cells interleaved.\n",
         "RT = `algorithm_seconds` (the run without starting or stopping the workers); SR = RT(1 island) / RT; "
         "CT = `comm_seconds` (islands phase wall time minus the busiest island's compute: messages, waiting for "
         "the ring predecessor, the master's work); CR = CT / RT. \"cores' worth\" = the parallelism two processes "
         f"running one {HEAVY_OPTIMIZER} island of H1 each (budget {probe_budget:,}, a fresh Problem per run, no "
         f"messages) got alone versus together, probed before ({capacity_before:.2f}) and after "
         f"({capacity_after:.2f}) the runs; the smaller, at most 2, is used: **{worth:.2f}**. "
         "\"SR at CT = 0\" = RT(1) / busiest island's compute. \"islands' compute\" = the sum over islands "
         "(against RT(1): the work two half-populations did for the same budget). Ray: a local one-node cluster "
         f"of 2 CPUs on 127.0.0.1 started by the benchmark and stopped after it. {ray_note}\n",
         "| cell | RT (s) | SR | SR / cores' worth | CT (s) | CR | busiest island (s) | islands' compute (s) "
         "| SR at CT = 0 | master CPU (s) | busier island CPU (s) | islands' CPU (s) | other CPU (s) | SR in CPU "
         "| epochs | TD |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in cells:
        x = summary[c.label]
        L.append(f"| {c.label} | {x['rt']:.2f} | {x['sr']:.2f} | {x['sr_over_worth']:.2f} | {x['ct']:.2f} | "
                 f"{100 * x['cr']:.1f}% | {x['compute']:.2f} | {x['compute_sum']:.2f} | {x['sr_no_ct']:.2f} | "
                 f"{x['master_cpu']:.2f} | {x['island_cpu']:.2f} | {x['islands_cpu']:.2f} | {x['other_cpu']:.2f} | "
                 f"{x['sr_cpu']:.2f} | {x['epochs']:.0f} | {', '.join(f'{t:.1f}' for t in x['tds'])} |")
    L += ["", "master CPU = this process's CPU time over the run (start-up included): with workers, the master's "
          "serial share. The CPU columns (from /proc; they do not grow while a process waits for a core, so the "
          "machine's other load leaves them alone): busier island CPU = the CPU seconds (start-up included) of the busier island's "
          "process (this process for the local cells, both islands together for \"2 islands, local\"), islands' "
          "CPU = over all islands, other CPU = the other processes below this one (Ray's raylet, GCS, idle "
          "workers); \"SR in CPU\" = one island's CPU / the busier island's CPU: the speedup two free cores would "
          "give with free messages (the split ceiling in CPU time, imbalance of the halves included). What travels (one island of two, MI = 5, after its first epoch): the Problem as a "
          f"ProblemSpec {wire['problem_spec_bytes'] / 1e6:.1f} MB once per run (start-up, not RT); per epoch and "
          f"island a migrant of {wire['ring_migrant_bytes'] / 1e3:.1f} KB on the ring of pipes (S as bits; "
          f"its header alone when the best did not change) or {wire['ray_migrant_bytes'] / 1e3:.1f} KB through "
          f"Ray (the pickled Individual), and a report of {wire['report_bytes'] / 1e3:.1f} KB to the master "
          f"(the new local bests' retained counts); an epoch's compute {1000 * wire['epoch_seconds']:.0f} ms."]
    L += ["", "Same seed, same result (TD and G of every run):"]
    L += [f"- {k}: {'yes' if v else 'no' if v is not None else 'not measured'}" for k, v in determinism.items()]
    L += ["", f"**Verdict** (target: 2 islands reach at least 0.85 of the cores' worth): {verdict}", ""]
    text = "\n".join(L) + "\n"
    print("\n" + text, flush=True)
    (out / f"{stem}.md").write_text(text, encoding="utf-8")
    (out / f"{stem}.json").write_text(json.dumps({
        "command": cmd, "cores": n_cpu, "usable_cores": usable, "records": n_rows, "qids": qids,
        "distinct_rows": len(table.counts), "lattice": lattice, "k": HEAVY_K, "optimizer": HEAVY_OPTIMIZER,
        "budget": budget, "seed": seed, "runs": runs, "warm_budget": warm_budget, "probe_budget": probe_budget,
        "wire": wire,
        "load_before": load_before, "load_after": load(), "capacity_before": capacity_before,
        "capacity_after": capacity_after, "cores_worth": worth, "seconds": wall, "summary": summary,
        "determinism": determinism, "raw": raw}, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out / (stem + '.md')} and .json in {wall:.0f} s", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--first-run", action="store_true",
                    help="first run of ID-DGA with default settings vs executor local, fresh processes (issue #17)")
    ap.add_argument("--rows", type=int, default=1000, help="--first-run: SPARCS records (default 1000)")
    ap.add_argument("--budget", type=int, default=100_000, help="--first-run: evaluations (default 100000)")
    ap.add_argument("--with-process", action="store_true", help="--first-run: also executor = 'process'")
    ap.add_argument("--after-install", action="store_true",
                    help="--first-run: fill each empty cache with `ppdp warm-up` first, as make does after installing")
    ap.add_argument("--code-root", help="--first-run: run this checkout's code (default: this one)")
    ap.add_argument("--first-run-name", help="--first-run: output file stem (default islands_first_run)")
    ap.add_argument("--quick", action="store_true", help="instances T8 T16, 3 runs, budget x1")
    ap.add_argument("--runs", type=int, help="measured runs per (instance, islands) with warm workers (default 5, quick 3)")
    ap.add_argument("--cold-runs", type=int, help="runs with fresh worker processes (default 3, quick 1)")
    ap.add_argument("--instances", nargs="+", help="ID-DGA instances (default: the nR = 400 ones; quick T8 T16)")
    ap.add_argument("--budget-scales", type=float, nargs="+", help="factors on nQID * nR (default 1 10; quick 1)")
    ap.add_argument("--data", help="data directory (default: $PPDP_DATA or ../shared/data)")
    ap.add_argument("--seed", type=int, default=inst_mod.DEFAULT_SEED, help="instance sampling seed")
    ap.add_argument("--out", help="output folder (default benchmarks/results, quick: benchmarks/results/quick)")
    ap.add_argument("--heavy", action="store_true",
                    help="id-dga+oracle on all 63,733 SPARCS records, 14 QIDs: 1 vs 2 islands, process and Ray")
    ap.add_argument("--heavy-budget", type=int, help=f"--heavy: evaluations in total (default {HEAVY_BUDGET}, "
                    f"quick {HEAVY_QUICK_BUDGET})")
    ap.add_argument("--heavy-seed", type=int, help=f"--heavy: the runs' seed (default {HEAVY_SEED})")
    ap.add_argument("--no-ray", action="store_true", help="--heavy: leave out the Ray cells")
    args = ap.parse_args(argv)
    if args.heavy:
        args.argv = argv if argv is not None else sys.argv[1:]
        return heavy(args)
    if args.first_run:
        args.argv = argv if argv is not None else sys.argv[1:]
        return first_run(args)
    runs = args.runs or (3 if args.quick else 5)
    cold_runs = args.cold_runs if args.cold_runs is not None else (1 if args.quick else 3)
    scales = args.budget_scales or ([1.0] if args.quick else [1.0, 10.0])
    out = Path(args.out) if args.out else Path(__file__).resolve().parent / "results" / ("quick" if args.quick else "")
    out.mkdir(parents=True, exist_ok=True)
    n_cpu, usable = cores()
    print(f"cores: {n_cpu} on the machine, {usable} usable by this process; load average {load():.2f} "
          f"(cores' worth is probed around each instance's runs)", flush=True)
    OPTIMIZERS.names()  # imports the built-in optimizers
    if "id-dga" not in OPTIMIZERS:
        print("id-dga is not registered (engine/methods/generalization/optimizers/id_dga.py missing): nothing to measure", flush=True)
        return 1
    every = inst_mod.build("id-dga", inst_mod.data_dir(args.data), args.seed)
    wanted = args.instances or (QUICK if args.quick else [i.name for i in every if i.n_records == 400])
    insts = [i for i in every if i.name in wanted]
    t_start = time.perf_counter()
    results: dict[str, list[dict]] = {}
    for scale in scales:
        key = f"x{scale:g}"
        results[key] = []
        for inst in insts:
            budget = max(int(round(inst.budget * scale)), 1)
            row = measure(inst, budget, runs, cold_runs)
            results[key].append(row)
            for n, lag in CONFIGS:
                c = row["islands"][label(n, lag)]
                cold = (f", RT+s {1000 * c['rt_cold']:.0f} ms (start-up {1000 * c['startup_cold']:.0f}, shut-down "
                        f"{1000 * c['shutdown_cold']:.0f}) SR+s {c['sr_cold']:.2f}") if n > 1 else ""
                print(f"budget {key} {inst.name} islands={label(n, lag)}: RT {1000 * c['rt']:.1f} ms, CT {1000 * c['ct']:.1f} ms, "
                      f"busiest island {1000 * c['compute']:.1f} ms, SR {c['sr']:.2f}, CR {100 * c['cr']:.1f}%{cold}, "
                      f"TD {c['td']:.1f}", flush=True)
            print(f"  two islands one after the other in this process: busiest {1000 * row['split']['busiest']:.1f} ms, "
                  f"split ceiling {row['split']['ceiling']:.2f}", flush=True)
            print(f"  (load average {row['load_before']:.2f} -> {row['load_after']:.2f}; two processes got "
                  f"{row['capacity_before']:.2f} -> {row['capacity_after']:.2f} cores' worth)", flush=True)
    wall = time.perf_counter() - t_start

    L = [f"# ID-DGA island speedup and communication ({'quick' if args.quick else 'full'} mode)\n",
         f"Generated by `python benchmarks/islands.py {' '.join(argv if argv is not None else sys.argv[1:])}`; "
         f"machine with {n_cpu} cores, {usable} usable by this process (the paper: 16 cores), shared with other "
         f"work: \"cores' worth\" is the parallelism two processes running the islands' own kernels (ID-GA on "
         f"the instance at that budget, no messages) got around each instance's runs (the smaller of before and "
         f"after; 2.00 = two full cores; load averages in islands.json). "
         f"{runs} run(s) per cell with warm workers, "
         f"{cold_runs} with fresh ones; medians. Population 40, MI = 5; 1 island in-process (ID-GA), 2 and 4 "
         f"islands one worker process each, with the paper's synchronous migration (lag 0) and with a migration "
         f"lag of one epoch (lag 1, ours); diversity recording off. Total {wall:.0f} s.\n",
         "RT = the algorithm's run time without worker start-up (workers from a persistent pool); SR = RT(1) / "
         "RT(n) and CR = CT / RT use it. CT = islands phase wall time minus the busiest island's compute. "
         "RT+s = run time with fresh worker processes (start-up and shut-down included); SR+s = RT(1) / RT+s. "
         "With more islands than usable cores the islands time-share the cores. \"SR / cores' worth\" is the "
         "share of the parallelism on offer that two islands turned into speedup (1.00 = all of it). "
         "\"SR at CT = 0\" = RT(1) / the busiest island's compute: the speedup had communication cost nothing. "
         "\"split ceiling\" = RT(1) / the busier of the same two islands (lag 0) run one after the other in this "
         "process: no messages and no second process, only the population split in two; it stays below 2 where a "
         "generation's fixed costs (an evaluation call, pairing, the epoch's report) do not halve with the "
         "sub-population, and where one half costs more than the other (the busier one sets the pace). "
         "\"ceiling × cores' worth / 2\" is then about the most two islands can reach here with free "
         "communication: the split ceiling, at the speed two busy processes run the kernels.\n"]
    for key, rows in results.items():
        budget_note = "the paper's budget nQID·nR" if key == "x1" else f"budget nQID·nR {key.replace('x', '× ')}"
        for n, lag in CONFIGS[1:]:
            how = "synchronous migration (the paper)" if lag == 0 else f"migration lag {lag} (ours)"
            L += [f"## Table 5 layout, {budget_note}, NSP = {n}, {how} (ID-GA = 1 island)\n"]
            L += table5(rows, label(n, lag)) + [""]
    L += ["## All island counts\n",
          "| budget | Test instance | nQID | nR | budget (evals) | islands/lag | RT (ms) | busiest island (ms) | CT (ms) | SR | CR "
          "| RT+s (ms) | start-up (ms) | SR+s | epochs | TD | cores' worth |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for key, rows in results.items():
        for row in rows:
            for n, lag in CONFIGS:
                c = row["islands"][label(n, lag)]
                cold = (f"{1000 * c['rt_cold']:.1f} | {1000 * c['startup_cold']:.1f} | {c['sr_cold']:.2f}" if n > 1
                        else "| | ")
                L.append(f"| {key} | {row['instance']} | {row['nQID']} | {row['nR']} | {row['budget']} | "
                         f"{label(n, lag)} | "
                         f"{1000 * c['rt']:.2f} | {1000 * c['compute']:.2f} | {1000 * c['ct']:.2f} | {c['sr']:.2f} | "
                         f"{100 * c['cr']:.2f}% | {cold} | {c['epochs']:.0f} | {c['td']:.1f} | "
                         f"{cores_worth(row):.2f} |")
    text = "\n".join(L) + "\n"
    print("\n" + text, flush=True)
    (out / "islands.md").write_text(text, encoding="utf-8")
    (out / "islands.json").write_text(json.dumps({"cores": n_cpu, "usable_cores": usable, "runs": runs,
                                                  "cold_runs": cold_runs, "budget_scales": scales,
                                                  "seconds": wall, "results": results}, indent=1) + "\n",
                                      encoding="utf-8")
    print(f"cores: {n_cpu} on the machine, {usable} usable; wrote {out / 'islands.md'} and islands.json in {wall:.0f} s",
          flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
