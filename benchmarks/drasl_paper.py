"""The DRASL paper's own experiment, and the evidence for or against each of its three claims.

    NUMBA_NUM_THREADS=1 python benchmarks/drasl_paper.py first      # Fig. 5 / 9: the K sweep
    NUMBA_NUM_THREADS=1 python benchmarks/drasl_paper.py updates    # Fig. 6-8 / 10-12, Table 9
    NUMBA_NUM_THREADS=1 python benchmarks/drasl_paper.py tradeoff   # alpha / beta grid, Pareto front
    NUMBA_NUM_THREADS=1 python benchmarks/drasl_paper.py audit      # the open readings of the paper
    python benchmarks/drasl_paper.py report                         # report.md and the plots

Each part writes ``<part>.json`` under ``--out`` (default benchmarks/results/drasl/paper) and
takes a few minutes on one core; ``report`` composes benchmarks/results/drasl/report.md (the
verdicts first) and the PNGs from whatever parts exist. ``--methods``, ``--datasets``,
``--rows`` narrow a part; a part run on a subset merges into its JSON (rows of the same
dataset and method are replaced).

The setting is the paper's (section "Experimental Results"): adult (the UCI file, missing values
and duplicates removed: 30,139 rows) with the 7 QIDs Age, Workclass, Occupation, Education,
Capitalgain, Race, Gender and Disease drawn uniformly from the 32-disease catalogue with a fixed
seed (benchmarks/drasl.py's loader: the same rows and draws), alpha = 0.6, beta = 0.4; K in
{4, 8, 12, 16, 20} for Fig. 5 / 9 (the figures are missing from the text, so their K values are
not known; these are benchmarks/drasl.py's); 100 ... 500 records inserted, deleted, modified at
K = 8 for Fig. 6-8 / 10-12 (half the modifications change QIDs, half the SA, as the paper says).
SPARCS (the 10,000-row sample of benchmarks/drasl.py, real catalogue) is the second data set.

Algorithms: DRASL and the baselines the repository has (``ALGORITHMS``): dpp, mdav, ika, oka,
entropy-l, t-closeness. Every algorithm runs on the *same* rows. A dynamic algorithm (drasl,
dpp) applies the changes one at a time; a static one re-clusters the changed table, and since
its re-clustering depends only on the table, it is run once per checkpoint (the same groups as
one re-clustering per change, at a fraction of the cost).

``tradeoff`` and ``audit`` run on the first ``--rows`` (default 6,000) adult rows at K = 8, so
that the 72-point grid and the switches fit in minutes.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import drasl as bench  # noqa: E402
from ppdp.engine.core.hierarchy import read_arx_csv  # noqa: E402
from ppdp.engine.methods.microaggregation import _kernels, dynamic, metrics  # noqa: E402
from ppdp.engine.methods.microaggregation.algorithms import ALGORITHMS, Params  # noqa: E402
from ppdp.engine.methods.microaggregation.cluster import first_release as drasl_cluster  # noqa: E402
from ppdp.engine.methods.microaggregation.distances import QidKind, encode, encoded_centroid  # noqa: E402
from ppdp.engine.methods.microaggregation.dynamic import Modification, NewRecord  # noqa: E402
from ppdp.engine.methods.microaggregation.entropy import entropy_after_adding, entropy_of_counts  # noqa: E402
from ppdp.engine.methods.microaggregation.linkage import probability_after_adding  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "drasl" / "paper"
REPORT = ROOT / "benchmarks" / "results" / "drasl" / "report.md"
METHODS = ("drasl", "dpp", "mdav", "ika", "oka")
EXTRA = ("entropy-l", "t-closeness")  # the paper's other baselines: --methods adds them
BASELINES = tuple(m for m in METHODS + EXTRA if m != "drasl")
KS = (4, 8, 12, 16, 20)
SWEEP = (100, 200, 300, 400, 500)
UPDATE_K = 8
ALPHA, BETA = 0.6, 0.4
GRID = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
SUBSET_ROWS = 6000


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --- data --------------------------------------------------------------------------------------


def load(names: Sequence[str], data: Path) -> list[bench.Dataset]:
    out = []
    if "adult" in names:
        out.append(bench.load_adult(data))
    if "sparcs" in names:
        sp = bench.load_sparcs(data, 10_000)
        if sp is None:
            log(f"sparcs skipped: no files under {data / 'sparcs'}")
        else:
            out.append(sp)
    return out


def encoded(ds: bench.Dataset):
    return bench._encode(ds)


# --- what is measured of one published version -------------------------------------------------


def describe(state) -> dict:
    """The paper's metrics plus the Average_IL decomposition of one state.

    eq. 17 as printed: Average_IL = sum IL(G) / |T| = (groups / |T|) * mean IL(G); mean IL(G)
    is the plain mean of eq. 16 over the groups; the mean per-record distance is sum over rows
    of d(r, mu_G) / rows (eq. 17 if it averaged over records); ``average_il_real`` is eq. 17
    with the forged rows left out of every group (their distances and the centroid)."""
    il = metrics.information_loss(state)
    sizes = np.array([g.size for g in state.groups], dtype=np.int64)
    m = metrics.release_metrics(state)
    pool = state.pool
    real_il = []
    for g in state.groups:
        if g.forged:
            rows = np.asarray(g.real, dtype=np.int64)
            c = encoded_centroid(pool, rows)
            d = _kernels.distances_to_rows(c[0], c[1], c[2], c[3], pool.cont, pool.sem, pool.nom, pool.ordn,
                                           pool.sem_table, pool.n_qids, rows)
            real_il.append(float(d.mean()))
        else:
            real_il.append(None)
    real = np.array([r if r is not None else x for r, x in zip(real_il, il, strict=True)])
    hist = Counter(int(s) for s in sizes)
    return {"total_pr": m.total_pr, "average_il": m.average_il, "groups": m.groups, "records": m.real_records,
            "rows": int(sizes.sum()), "forged_rows": m.forged_rows, "forged_created": state.forged_created,
            "forged_rewrites": state.forged_rewrites, "mean_group_il": float(il.mean()),
            "mean_record_distance": float((il * sizes).sum() / sizes.sum()),
            "average_il_real": float(real.sum() / m.real_records),
            "size_min": int(sizes.min()), "size_median": float(np.median(sizes)), "size_max": int(sizes.max()),
            "size_hist": {str(s): c for s, c in sorted(hist.items())}}


# --- part 1: first release, K sweep ------------------------------------------------------------


def part_first(datasets, methods, ks) -> list[dict]:
    out = []
    for ds in datasets:
        _, enc = encoded(ds)
        sa = ds.catalogue.codes(ds.sa)
        for m in methods:
            algo = ALGORITHMS.get(m)
            for k in ks:
                t0 = time.perf_counter()
                state = algo.first_release(enc, sa, list(range(len(ds.rows))), ds.catalogue, Params(k=k, alpha=ALPHA,
                                                                                                   beta=BETA))
                row = {"dataset": ds.name, "method": m, "k": k, "seconds": time.perf_counter() - t0, **describe(state)}
                out.append(row)
                log(f"  {ds.name} {m} K={k}: Total_Pr {row['total_pr']:.2f} Average_IL {row['average_il']:.4e} "
                    f"groups {row['groups']} ({row['seconds']:.1f} s)")
    return out


# --- part 2: updates at K = 8 ------------------------------------------------------------------


def part_updates(datasets, methods, counts, seed: int) -> list[dict]:
    """Three sequences of changes from one first release at K = 8 of the rows minus the largest
    count (benchmarks/drasl.py's plan: inserts of the held-out rows, deletes and modifications of
    seeded random records; modification j changes the QIDs (to held-out row j) when j is even,
    the SA (to another random value) when odd)."""
    out = []
    most = max(counts)
    for ds in datasets:
        base_n, delete_ids, modify_ids, new_sa = bench.plan_changes(ds, most, seed)
        base = ds.head(base_n)
        held, held_sa = ds.rows[base_n:], ds.sa[base_n:]
        schema, enc = encoded(base)
        cat = ds.catalogue
        for m in methods:
            algo = ALGORITHMS.get(m)
            params = Params(k=UPDATE_K, alpha=ALPHA, beta=BETA, seed=seed)
            t0 = time.perf_counter()
            start = algo.first_release(enc, cat.codes(base.sa), list(range(base_n)), cat, params)
            rec = {"dataset": ds.name, "method": m, "k": UPDATE_K, "base_rows": base_n, "start": describe(start),
                   "first_seconds": time.perf_counter() - t0, "sweeps": {}}
            for kind in ("insert", "delete", "modify"):
                state, points, elapsed = start, [], 0.0
                if algo.dynamic:
                    for j in range(most):
                        t = time.perf_counter()
                        if kind == "insert":
                            state, row = dynamic.encode_record(state, schema, dict(zip(ds.columns, held[j], strict=True)))
                            state = algo.insert(state, NewRecord(base_n + j, row, cat.code(held_sa[j])))
                        elif kind == "delete":
                            state = algo.delete(state, delete_ids[j])
                        elif j % 2 == 0:
                            state, row = dynamic.encode_record(state, schema, dict(zip(ds.columns, held[j], strict=True)))
                            state = algo.modify(state, modify_ids[j], Modification(qids=row))
                        else:
                            state = algo.modify(state, modify_ids[j], Modification(sa=cat.code(new_sa[j])))
                        elapsed += time.perf_counter() - t
                        if j + 1 in counts:
                            points.append({"changes": j + 1, "seconds": elapsed, **describe(state)})
                else:
                    for c in counts:
                        t = time.perf_counter()
                        state = _static_checkpoint(algo, start, ds, schema, kind, c, base_n, held, held_sa, delete_ids,
                                                   modify_ids, new_sa, params)
                        points.append({"changes": c, "seconds": time.perf_counter() - t, **describe(state)})
                rec["sweeps"][kind] = points
                last = points[-1]
                log(f"  {ds.name} {m} {kind} x{most}: Total_Pr {last['total_pr']:.2f} Average_IL "
                    f"{last['average_il']:.4e} forged {last['forged_rows']} (created {last['forged_created']})")
            out.append(rec)
    return out


def _static_checkpoint(algo, start, ds, schema, kind, c, base_n, held, held_sa, delete_ids, modify_ids, new_sa,
                       params):
    """A static algorithm's state after the first ``c`` changes of ``kind``: the changed table,
    clustered once (what re-clustering after every change ends with)."""
    cat = ds.catalogue
    rows = list(ds.rows[:base_n])
    sas = list(ds.sa[:base_n])
    ids = list(range(base_n))
    if kind == "insert":
        rows += held[:c]
        sas += held_sa[:c]
        ids += list(range(base_n, base_n + c))
    elif kind == "delete":
        gone = set(delete_ids[:c])
        keep = [i for i in ids if i not in gone]
        rows, sas, ids = [rows[i] for i in keep], [sas[i] for i in keep], keep
    else:
        for j in range(c):
            i = modify_ids[j]
            if j % 2 == 0:
                rows[i] = held[j]
            else:
                sas[i] = new_sa[j]
    columns = {k.column: [r[q] for r in rows] for q, k in enumerate(ds.kinds)}
    enc = encode(schema, columns)
    return algo.first_release(enc, cat.codes(sas), ids, cat, params)


# --- part 3: alpha / beta trade-off ------------------------------------------------------------


def _random_groups(n: int, k: int, seed: int) -> list[list[int]]:
    order = np.random.default_rng(seed).permutation(n)
    groups = [order[i:i + k].tolist() for i in range(0, n - n % k, k)]
    for j, r in enumerate(order[n - n % k:]):
        groups[j].append(int(r))
    return groups


def part_tradeoff(ds: bench.Dataset, k: int) -> list[dict]:
    _, enc = encoded(ds)
    sa = ds.catalogue.codes(ds.sa)
    ids = list(range(len(ds.rows)))
    out = []
    for m in ("drasl", "dpp"):
        for a in GRID:
            for b in GRID:
                state = ALGORITHMS.get(m).first_release(enc, sa, ids, ds.catalogue, Params(k=k, alpha=a, beta=b))
                out.append({"method": m, "alpha": a, "beta": b, **describe(state)})
                log(f"  {m} alpha={a} beta={b}: Total_Pr {out[-1]['total_pr']:.2f} Average_IL {out[-1]['average_il']:.4e}")
    for m in BASELINES[1:]:
        state = ALGORITHMS.get(m).first_release(enc, sa, ids, ds.catalogue, Params(k=k))
        out.append({"method": m, "alpha": None, "beta": None, **describe(state)})
    state = dynamic.from_grouping(enc, sa, ids, _random_groups(len(ids), k, 0), ds.catalogue, k=k)
    out.append({"method": "random", "alpha": None, "beta": None, **describe(state)})
    return out


# --- part 4: the audit's switches --------------------------------------------------------------

Score = Callable[..., np.ndarray]


def _score_ours(hb, ha, d, pr, a, b):  # eq. 14 read as f - alpha Pr (entropy.py)
    return -a * (hb - ha) - b * d - a * pr


def _score_literal(hb, ha, d, pr, a, b):  # eq. 14 as printed: -alpha (H_hat - beta d + alpha Pr)
    return -a * ((hb - ha) - b * d + a * pr)


def _score_plus(hb, ha, d, pr, a, b):  # eq. 14's "f + alpha Pr", maximised
    return -a * (hb - ha) - b * d + a * pr


def _score_ln(hb, ha, d, pr, a, b):  # natural-log entropy (Example 2 fixes base 10)
    return -a * (hb - ha) * math.log(10.0) - b * d - a * pr


SCORES: dict[str, Score] = {"ours": _score_ours, "literal": _score_literal, "plus": _score_plus, "ln": _score_ln}


def greedy(enc, sa_codes, catalogue, k: int, seed: int, score: Score, alpha=ALPHA, beta=BETA) -> list[list[int]]:
    """Alg. 1 exactly as cluster.first_release (same seeds, ties, leftovers) with a pluggable
    eq. 14; with ``_score_ours`` it returns cluster.first_release's groups (checked in ``audit``)."""
    n = enc.n
    sa_codes = np.asarray(sa_codes, dtype=np.int64)
    nv = len(catalogue.values)
    all_codes = np.arange(nv)
    rng = np.random.default_rng(seed)
    unassigned = np.ones(n, dtype=bool)
    groups, counts_of = [], []

    def scores(members, counts, rows):
        c = encoded_centroid(enc, np.asarray(members))
        d = _kernels.distances_to_rows(c[0], c[1], c[2], c[3], enc.cont, enc.sem, enc.nom, enc.ordn, enc.sem_table,
                                       enc.n_qids, rows)
        hb = entropy_of_counts(counts)
        ha = entropy_after_adding(counts, all_codes)[sa_codes[rows]]
        pr = probability_after_adding(counts, all_codes, catalogue)[sa_codes[rows]]
        return score(hb, ha, d, pr, alpha, beta)

    def best(s):
        s = np.asarray(s, dtype=np.float64)
        return int(np.flatnonzero(s >= s.max() - 1e-12)[0])

    remaining = n
    while remaining >= k:
        free = np.flatnonzero(unassigned)
        start = int(free[rng.integers(free.size)])
        members, counts = [start], np.zeros(nv, dtype=np.int64)
        unassigned[start] = False
        counts[sa_codes[start]] += 1
        while len(members) < k:
            free = np.flatnonzero(unassigned)
            pick = int(free[best(scores(members, counts, free))])
            members.append(pick)
            unassigned[pick] = False
            counts[sa_codes[pick]] += 1
        groups.append(members)
        counts_of.append(counts)
        remaining -= k
    for r in np.flatnonzero(unassigned):
        rows = np.array([r], dtype=np.int64)
        j = best([scores(g, c, rows)[0] for g, c in zip(groups, counts_of, strict=True)])
        groups[j].append(int(r))
        counts_of[j][sa_codes[r]] += 1
    return groups


def _flat(column: str, values) -> object:
    """A one-level hierarchy value -> '*' (eq. 2 of it is eq. 3 of one attribute: 0 or 1)."""
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as fh:
        for v in sorted(set(values)):
            fh.write(f"{v};*\n")
        path = fh.name
    try:
        return read_arx_csv(path, column)
    finally:
        os.unlink(path)


def variant(ds: bench.Dataset, *, nominal: str = "together", capital: str = "continuous") -> bench.Dataset:
    kinds = []
    for q, k in enumerate(ds.kinds):
        if k.kind == "nominal" and nominal == "per-attribute":
            kinds.append(QidKind(k.column, "semantic", hierarchy=_flat(k.column, [r[q] for r in ds.rows])))
        elif k.column == "capital-gain" and capital == "ordinal":
            kinds.append(QidKind(k.column, "ordinal"))
        else:
            kinds.append(k)
    return dataclasses.replace(ds, kinds=tuple(kinds))


def part_audit(ds: bench.Dataset, k: int) -> dict:
    _, enc = encoded(ds)
    sa = ds.catalogue.codes(ds.sa)
    ids = list(range(len(ds.rows)))
    cat = ds.catalogue
    out: dict = {"eq14": [], "distance": []}
    reference = drasl_cluster(enc, sa, cat, k=k, alpha=ALPHA, beta=BETA, seed=0).groups
    for name, fn in SCORES.items():
        groups = greedy(enc, sa, cat, k, 0, fn)
        if name == "ours":
            same = [tuple(g) for g in groups] == [tuple(g) for g in reference]
            out["twin_matches_cluster_py"] = same
            log(f"  benchmark greedy with eq. 14 as implemented == cluster.first_release: {same}")
        state = dynamic.from_grouping(enc, sa, ids, groups, cat, k=k)
        out["eq14"].append({"reading": name, **describe(state)})
        log(f"  eq14 {name}: Total_Pr {out['eq14'][-1]['total_pr']:.2f} Average_IL {out['eq14'][-1]['average_il']:.4e}")
    for nominal, capital in (("together", "continuous"), ("per-attribute", "continuous"), ("together", "ordinal"),
                             ("per-attribute", "ordinal")):
        v = variant(ds, nominal=nominal, capital=capital)
        _, venc = encoded(v)
        for m in METHODS:
            state = ALGORITHMS.get(m).first_release(venc, sa, ids, cat, Params(k=k))
            out["distance"].append({"eq3": nominal, "capital_gain": capital, "method": m, **describe(state)})
            r = out["distance"][-1]
            log(f"  eq3 {nominal} capital-gain {capital} {m}: Total_Pr {r['total_pr']:.2f} Average_IL {r['average_il']:.4e}")
    return out


# --- storage -----------------------------------------------------------------------------------


def _merge(path: Path, rows: list[dict], key: Callable[[dict], tuple]) -> list[dict]:
    old = json.loads(path.read_text())["rows"] if path.exists() else []
    new_keys = {key(r) for r in rows}
    return [r for r in old if key(r) not in new_keys] + rows


def _save(path: Path, rows, command: str, wall: float) -> None:
    runs = json.loads(path.read_text()).get("runs", []) if path.exists() else []
    runs = [r for r in runs if r["command"] != command] + [{"command": command, "wall_seconds": wall}]
    meta = {"command": command, "runs": runs, "platform": platform.platform(), "python": platform.python_version(),
            "cpus": os.cpu_count(), "threads": os.environ.get("NUMBA_NUM_THREADS", "default"), "wall_seconds": wall}
    path.write_text(json.dumps({**meta, "rows": rows}, indent=1) + "\n")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("part", choices=["first", "updates", "tradeoff", "audit", "report"])
    p.add_argument("--data", help="data directory (default: $PPDP_DATA or ../shared/data)")
    p.add_argument("--datasets", nargs="+", default=["adult", "sparcs"], choices=["adult", "sparcs"])
    p.add_argument("--methods", nargs="+", default=list(METHODS))
    p.add_argument("--k", nargs="+", type=int, default=list(KS))
    p.add_argument("--sweep", nargs="+", type=int, default=list(SWEEP))
    p.add_argument("--rows", type=int, help="first rows of adult (tradeoff, audit: default 6,000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--report", type=Path, default=REPORT)
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    argv_list = argv if argv is not None else sys.argv[1:]
    command = ("NUMBA_NUM_THREADS=1 " if os.environ.get("NUMBA_NUM_THREADS") == "1" else "") + \
        "python benchmarks/drasl_paper.py " + " ".join(argv_list)
    if args.part == "report":
        from benchmarks import drasl_paper_report
        return drasl_paper_report.write(args.out, args.report)
    for m in args.methods:
        ALGORITHMS.get(m)
    root = bench.data_dir(args.data)
    wall0 = time.perf_counter()
    if args.part in ("tradeoff", "audit"):
        ds = bench.load_adult(root)
        ds = ds.head(args.rows or SUBSET_ROWS)
        bench.warm_up(ds)
        if args.part == "tradeoff":
            rows = part_tradeoff(ds, UPDATE_K)
        else:
            rows = part_audit(ds, UPDATE_K)
        (args.out / f"{args.part}.json").write_text(json.dumps(
            {"command": command, "rows_of_adult": len(ds.rows), "k": UPDATE_K, "wall_seconds": time.perf_counter() - wall0,
             "rows": rows}, indent=1) + "\n")
        return 0
    datasets = load(args.datasets, root)
    if args.rows:
        datasets = [d.head(args.rows) if d.name == "adult" else d for d in datasets]
    bench.warm_up(datasets[0])
    path = args.out / f"{args.part}.json"
    if args.part == "first":
        rows = part_first(datasets, args.methods, args.k)
        rows = _merge(path, rows, lambda r: (r["dataset"], r["method"], r["k"]))
    else:
        rows = part_updates(datasets, args.methods, sorted(args.sweep), args.seed)
        rows = _merge(path, rows, lambda r: (r["dataset"], r["method"]))
    _save(path, rows, command, time.perf_counter() - wall0)
    log(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
