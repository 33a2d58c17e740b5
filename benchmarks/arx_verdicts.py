"""Same verdict as ARX (issue #25, acceptance 1): ppdp's and ARX's verdict per lattice node.

    PYTHONPATH=src .venv/bin/python benchmarks/arx_verdicts.py [--cases NAME,...] [--max-nodes N]
                                                               [--data DIR] [--out benchmarks/results/arx_verdicts]

For each case (a privacy model with its parameters, on adult with one sensitive attribute) and
each lattice node (all of them unless ``--max-nodes`` samples fewer, see ``sample_nodes``), the
verdict is whether every equivalence class of the node, with nothing suppressed, satisfies the
model: ppdp's from the model's ``ad`` and ``feasible`` over the node's class statistics, ARX's
from benchmarks/arx/ArxVerdicts.java (ARX 3.9.2's own check of the node at a suppression limit
of 0). The script prints per case: nodes compared, nodes ARX calls anonymous, disagreements
(target 0), and writes benchmarks/results/arx_verdicts/arx_verdicts.json.

Data: ../shared/data/arx/adult.csv with ARX's hierarchies. SA salary-class: the 8 usual QIDs
(6,480 nodes). SA occupation: occupation is then not a QID, so the other 7 (2,160 nodes).

ARX: the classpath in /tmp/arx-build/classpath.txt (``ARX_CLASSPATH`` overrides; see
docs/design/arx.md); ArxVerdicts.java (with the harnesses' shared ArxSetup.java) is
compiled into a temporary folder on each run.

The cases are table-driven (``CASES``): one entry names the ppdp model(s) with their spec
parameters and ARX's criteria with their tokens (ArxVerdicts.CRITERIA on the Java side).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from ppdp.engine.core.encoding import (  # noqa: E402
    COUNT_COLUMN,
    EncodedTable,
    encode_histogram,
    encode_population,
)
from ppdp.engine.core.hierarchy import read_arx_csv  # noqa: E402
from ppdp.engine.methods.generalization.evaluators.numba_backend import NumbaEvaluator  # noqa: E402
from ppdp.engine.privacy import ModelContext, build_model  # noqa: E402

ADULT_QIDS = ["age", "education", "marital-status", "native-country", "occupation", "race", "sex", "workclass"]
SENSITIVE = ("salary-class", "occupation")


@dataclass(frozen=True)
class Case:
    """One model under both tools: ppdp's spec models and ARX's criteria tokens."""

    key: str
    ppdp: tuple[tuple[str, dict[str, Any]], ...]
    arx: dict[str, str]  # ArxVerdicts tokens: criteria=NAME[+NAME] and the parameters
    needs_sa_hierarchy: bool = False
    sensitive: tuple[str, ...] = field(default=SENSITIVE)
    # A research subset (delta-presence; k-map's sample): a SQL predicate over adult's columns.
    # ppdp's table is then those rows with all of adult as its population; ARX gets the rows'
    # indices (subset=PATH) and the whole data as the population.
    research: str | None = None


# One entry per model, parameter setting and SA; the ArxVerdicts criterion names are its CRITERIA
# keys. With nothing suppressed a node passes only when its smallest classes do, so the parameters
# are chosen per SA where some nodes pass and some fail (a threshold all nodes miss tests nothing).
def _t(distance: str, sa: str, t: float) -> Case:
    return Case(f"t-closeness {distance} t={t:g}", (("t-closeness", {"t": t, "distance": distance}),),
                {"criteria": f"t-closeness-{distance}", "t": repr(t)}, needs_sa_hierarchy=distance == "hierarchical",
                sensitive=(sa,))


def _rcl(sa: str, c: float, l_min: int) -> Case:
    return Case(f"recursive-cl-diversity c={c:g} l={l_min}", (("recursive-cl-diversity", {"c": c, "l": l_min}),),
                {"criteria": "recursive-cl-diversity", "c": repr(c), "l": str(l_min)}, sensitive=(sa,))


def _beta(sa: str, beta: float, enhanced: bool) -> Case:
    kind = "enhanced" if enhanced else "basic"
    return Case(f"beta-likeness {kind} beta={beta:g}", (("beta-likeness", {"beta": beta, "enhanced": enhanced}),),
                {"criteria": f"{kind}-beta-likeness", "beta": repr(beta)}, sensitive=(sa,))


def _dd(sa: str, delta: float) -> Case:
    return Case(f"delta-disclosure delta={delta:g}", (("delta-disclosure", {"delta": delta}),),
                {"criteria": "delta-disclosure", "delta": repr(delta)}, sensitive=(sa,))


# The research subset / sample of the population-based cases: a deterministic part of adult.
RESEARCH = "\"salary-class\" = '>50K' OR (age >= 60 AND sex = 'Female')"


def _dp(sa: str, dmin: float, dmax: float) -> Case:
    return Case(f"delta-presence dmin={dmin:g} dmax={dmax:g}",
                (("delta-presence", {"dmin": dmin, "dmax": dmax, "research": RESEARCH}),),
                {"criteria": "d-presence", "dmin": repr(dmin), "dmax": repr(dmax)}, sensitive=(sa,), research=RESEARCH)


def _kmap(sa: str, k: int) -> Case:
    return Case(f"k-map population k={k}", (("k-map", {"k": k, "population": "adult"}),),
                {"criteria": "k-map", "k": str(k)}, sensitive=(sa,), research=RESEARCH)


def _kmap_est(sa: str, k: int, estimator: str, size: int, alpha: float) -> Case:
    return Case(f"k-map {estimator} k={k} N={size} a={alpha:g}",
                (("k-map", {"k": k, "estimator": estimator, "population_size": size, "significance": alpha}),),
                {"criteria": f"k-map-{estimator}", "k": str(k), "population_size": str(size), "significance": repr(alpha)},
                sensitive=(sa,))


CASES: list[Case] = [
    Case("k-anonymity k=5", (("k-anonymity", {"k": 5}),), {"criteria": "k-anonymity", "k": "5"}, sensitive=("salary-class",)),
    Case("distinct-l-diversity l=2", (("distinct-l-diversity", {"l": 2}),), {"criteria": "distinct-l-diversity", "l": "2"}),
    *[_t(dist, "salary-class", t) for dist in ("equal", "ordered", "hierarchical") for t in (0.45, 0.6)],
    _t("equal", "occupation", 0.9), _t("ordered", "occupation", 0.35), _t("ordered", "occupation", 0.45),
    _t("hierarchical", "occupation", 0.8),
    _rcl("salary-class", 4.0, 2), _rcl("salary-class", 50.0, 2), _rcl("occupation", 1.0, 2), _rcl("occupation", 2.0, 3),
    _beta("salary-class", 2.0, False), _beta("salary-class", 2.0, True), _beta("occupation", 60.0, False),
    _beta("occupation", 1.5, True),
    *[_dd(sa, delta) for sa, delta in (("salary-class", 2.5), ("salary-class", 5.0), ("occupation", 5.0),
                                       ("occupation", 9.0))],
    *[_dp(sa, lo, hi) for sa in SENSITIVE for lo, hi in ((0.05, 0.6), (0.0, 0.5))],
    *[_kmap(sa, k) for sa in SENSITIVE for k in (10, 40)],
    *[_kmap_est(sa, k, est, size, alpha) for sa in SENSITIVE
      for k, est, size, alpha in ((10, "poisson", 300_000, 0.01), (20, "zero-truncated-poisson", 100_000, 0.05),
                                  (50, "poisson", 60_000, 0.001))],
]


def load_adult(root: Path, sa: str) -> tuple[EncodedTable, list[str]]:
    """adult's histogram with ARX's hierarchies; the SA is not a QID."""
    qids = [q for q in ADULT_QIDS if q != sa]
    folder = root / "arx"
    hierarchies = [read_arx_csv(folder / f"adult_hierarchy_{q}.csv", q) for q in qids]
    frame = pl.read_csv(folder / "adult.csv", separator=";", infer_schema=False)
    hist = frame.group_by(qids + [sa]).agg(pl.len().cast(pl.Int64).alias(COUNT_COLUMN))
    return encode_histogram(hist, qids, [sa], hierarchies), qids


def research_table(root: Path, sa: str, research: str) -> tuple[EncodedTable, list[int]]:
    """adult's research rows (``research``, checked and written by ppdp's own predicate module)
    as the table, all of adult as its population; and the rows' 0-based indices for ARX."""
    import duckdb

    from ppdp.sql.dialect import DUCKDB
    from ppdp.sql.predicate import parse_predicate, predicate_sql

    qids = [q for q in ADULT_QIDS if q != sa]
    folder = root / "arx"
    hierarchies = [read_arx_csv(folder / f"adult_hierarchy_{q}.csv", q) for q in qids]
    frame = pl.read_csv(folder / "adult.csv", separator=";", infer_schema=False).with_row_index("__row")
    # adult.csv read as text; age is numeric in the SQL tables (the predicate compares it as a number).
    typed = duckdb.sql("SELECT * REPLACE (CAST(age AS INTEGER) AS age) FROM frame")  # noqa: F841 (read by name below)
    where = predicate_sql(parse_predicate(research, "research", DUCKDB), "r", DUCKDB)
    rows = sorted(int(r[0]) for r in duckdb.sql(f"SELECT __row FROM typed AS r WHERE {where}").fetchall())
    subset = frame.filter(pl.col("__row").is_in(rows))
    hist = subset.group_by(qids + [sa]).agg(pl.len().cast(pl.Int64).alias(COUNT_COLUMN))
    table = encode_histogram(hist, qids, [sa], hierarchies)
    everyone = frame.group_by(qids).agg(pl.len().cast(pl.Int64).alias(COUNT_COLUMN))
    return replace(table, population=encode_population(everyone, table, "adult")), rows


def all_nodes(table: EncodedTable) -> np.ndarray:
    """Every lattice node (level vectors), in lexicographic order."""
    grids = np.meshgrid(*[np.arange(int(h) + 1) for h in table.heights], indexing="ij")
    return np.stack([g.ravel() for g in grids], axis=1).astype(np.int64)


def sample_nodes(nodes: np.ndarray, table: EncodedTable, size: int) -> np.ndarray:
    """``size`` nodes, fixed seed: half drawn from the whole lattice, half from its upper part
    (level sum at least 60 % of the top's), where with nothing suppressed the verdicts turn from
    fail to pass; a uniform sample alone would hold few passing nodes."""
    rng = np.random.default_rng(0)
    upper = np.flatnonzero(nodes.sum(axis=1) >= 0.6 * int(table.heights.sum()))
    top = rng.choice(upper, size=min(len(upper), size // 2), replace=False)
    rest = np.setdiff1d(np.arange(len(nodes)), top)
    pick = np.concatenate([top, rng.choice(rest, size=size - len(top), replace=False)])
    return nodes[np.sort(pick)]


def ppdp_verdicts(case: Case, table: EncodedTable, sa_hierarchy: Path, nodes: np.ndarray) -> str:
    """'1' where every class of the node (nothing suppressed) satisfies every model of the case."""
    ctx = ModelContext(table.sensitive, table.sa_values, str(sa_hierarchy.parent), str(sa_hierarchy),
                       source_rows=table.n_records)
    models = [build_model(name, dict(params)).bind(ctx) for name, params in case.ppdp]
    ev = NumbaEvaluator(table, models)
    retained = table.counts.astype(np.int64)
    out = []
    for g in nodes:
        _, stats, _ = ev.class_stats(g, retained)
        out.append("1" if all(m.feasible(m.ad(stats)) for m in models) else "0")
    return "".join(out)


def arx_verdicts(case: Case, data: Path, qids: list[str], sa: str, nodes: np.ndarray, classpath: str, work: Path,
                 subset: list[int] | None = None) -> dict[str, Any]:
    node_file = work / "nodes.txt"
    node_file.write_text("\n".join(",".join(str(int(x)) for x in g) for g in nodes) + "\n")
    tokens = [f"data={data}", f"qids={','.join(qids)}", f"sensitive={sa}", f"nodes={node_file}",
              *[f"{k}={v}" for k, v in case.arx.items()]]
    if subset is not None:
        subset_file = work / "subset.txt"
        subset_file.write_text("\n".join(map(str, subset)) + "\n")
        tokens.append(f"subset={subset_file}")
    run = subprocess.run(["java", "-cp", f"{work / 'classes'}:{classpath}", "ArxVerdicts", *tokens],
                         capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise RuntimeError(f"ArxVerdicts failed: {run.stderr.strip()[:600]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", help="comma-separated case keys (prefix match); default all")
    ap.add_argument("--sensitive", help="comma-separated SAs; default salary-class,occupation")
    ap.add_argument("--max-nodes", type=int, default=0, help="sample this many nodes per SA (0: all); see sample_nodes")
    ap.add_argument("--data", default=os.environ.get("PPDP_DATA") or str(REPO / ".." / "shared" / "data"))
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "arx_verdicts"))
    args = ap.parse_args(argv)
    root = Path(args.data).resolve()
    cp_file = Path(os.environ.get("ARX_CLASSPATH_FILE", "/tmp/arx-build/classpath.txt"))
    classpath = os.environ.get("ARX_CLASSPATH") or (cp_file.read_text().strip() if cp_file.exists() else "")
    if not classpath:
        print(f"ARX is not built ({cp_file} missing): see docs/design/arx.md", file=sys.stderr)
        return 2
    wanted = [c.strip() for c in args.cases.split(",")] if args.cases else None
    cases = [c for c in CASES if wanted is None or any(c.key.startswith(w) for w in wanted)]
    sas = args.sensitive.split(",") if args.sensitive else list(SENSITIVE)
    rows = []
    subsets: dict[tuple[str, str], tuple[EncodedTable, list[int]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        subprocess.run(["javac", "-encoding", "UTF-8", "-d", str(work / "classes"), "-cp", classpath,
                        *(str(REPO / "benchmarks" / "arx" / f) for f in ("ArxSetup.java", "ArxVerdicts.java"))], check=True)
        for sa in sas:
            table, qids = load_adult(root, sa)
            nodes = all_nodes(table)
            if args.max_nodes and args.max_nodes < len(nodes):
                nodes = sample_nodes(nodes, table, args.max_nodes)
            hierarchy = root / "arx" / f"adult_hierarchy_{sa}.csv"
            for case in cases:
                if sa not in case.sensitive:
                    continue
                case_table, subset = table, None
                if case.research is not None:
                    if (sa, case.research) not in subsets:
                        subsets[(sa, case.research)] = research_table(root, sa, case.research)
                    case_table, subset = subsets[(sa, case.research)]
                t0 = time.perf_counter()
                ours = ppdp_verdicts(case, case_table, hierarchy, nodes)
                ppdp_ms = (time.perf_counter() - t0) * 1e3
                theirs = arx_verdicts(case, root / "arx" / "adult.csv", qids, sa, nodes, classpath, work, subset)
                arx = theirs["verdicts"]
                if len(arx) != len(ours):
                    raise RuntimeError(f"{case.key}: ARX gave {len(arx)} verdicts for {len(ours)} nodes")
                bad = [i for i, (a, b) in enumerate(zip(ours, arx, strict=True)) if a != b]
                row = {"case": case.key, "sensitive": sa, "nodes": len(ours), "arx_anonymous": arx.count("1"),
                       "ppdp_anonymous": ours.count("1"), "disagreements": len(bad),
                       "disagreeing_nodes": [nodes[i].tolist() for i in bad[:20]],
                       "arx_decided_by_search": theirs["decided_by_search"],
                       "arx_search_conflicts": theirs["search_conflicts"], "arx_ms": theirs["ms"], "ppdp_ms": ppdp_ms}
                rows.append(row)
                print(f"{case.key:<34} SA {sa:<13} nodes {len(ours):>5}  anonymous ARX {row['arx_anonymous']:>5} "
                      f"ppdp {row['ppdp_anonymous']:>5}  disagreements {len(bad)}", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    doc = {"data": str(root / "arx" / "adult.csv"), "qids": ADULT_QIDS, "suppression": 0,
           "sampled": bool(args.max_nodes), "rows": rows}
    (out / "arx_verdicts.json").write_text(json.dumps(doc, indent=1) + "\n")
    total = sum(r["disagreements"] for r in rows)
    print(f"total disagreements: {total} over {sum(r['nodes'] for r in rows)} node verdicts; wrote {out / 'arx_verdicts.json'}")
    return 1 if total else 0


if __name__ == "__main__":
    raise SystemExit(main())
