"""ppdp against ARX 3.9.2, both run here in one session, interleaved (issues #18 and #25).

    .venv/bin/python benchmarks/vs_arx.py [--quick] [--reps 6] [--warmups 3] [--data DIR]
                                          [--only KEY] [--family issue,small,models]
                                          [--out benchmarks/results/vs_arx] [--compare OLD.json]
                                          [--no-arx] [--arx-classpath CP]

ARX runs in one JVM kept warm (benchmarks/arx/ArxBench.java in ``serve`` mode, compiled on the
fly against ARX's classpath, by default /tmp/arx-build/classpath.txt; how to build ARX:
docs/design/arx.md). Its time is the wall time of ``ARXAnonymizer.anonymize`` (ARX's
encoding of the data, its search and its result; the CSV and the hierarchies are read once,
outside the timing). ppdp runs in this process; its time is what ARX's covers: the histogram
query (DuckDB, in memory), the encoding (leaf codes, SA codes), both as a release's
``stages.validate.read_encoded`` does them (a small table's rows read and grouped by their
encoding, else the GROUP BY and ``encode_histogram``), and the optimizer run on a fresh
``Problem``. The hierarchies are read inside the timing the way a job that runs again reads
them (``read_arx_csv``: each file read, its parse reused while its content is unchanged, the
warm path of ``ppdp run`` in a long-lived process); the source's column types and row count are
read once, outside, as ARX's data is loaded (the validate stage reads them before the histogram,
to check the columns and the key). Each case runs ``--warmups`` untimed rounds on both sides (Numba
compilation, the JIT), then ``--reps`` rounds, each timing ARX and then ppdp (the order
alternates round by round), so both see the same load. Reported: medians, ratio = ppdp / ARX
(< 1: ppdp faster), ppdp's nodes evaluated, TD, certification, ARX's transformations checked;
and ``ratio_from_memory``, the ratio with ppdp's rows read out of DuckDB (``ppdp_read_ms``) taken
off round by round: ARX's timing starts from its data in memory, ppdp's from the database.
``--arx-load``: ARX reads its data and hierarchies from their files in every round too, timed apart
(``arx_load_ms``), and ``ratio_from_storage`` compares both sides from their data at rest.
Without ARX (not built, ``--no-arx``) the ARX columns stay empty.

Families (``--family``, default all):
- ``issue``: the table of issue #25 (adult, 8 QIDs: k=5 with no / 5 % / 0 % suppression limit,
  t-closeness ARX EMD 0.2 against ppdp Euclidean 0.2828 and 0.2, + k=2; fars, cup, mach2019,
  creditcard k=5 with the issue's 8 QIDs each; cup's ZIP gets a generated 5-digit masking
  hierarchy, written next to the samples).
- ``small``: seeded samples of 1,000 and 5,000 records of adult (8 QIDs, SA salary-class),
  mach2019 (10, 11 and 12 QIDs: 52,488 / 157,464 / 472,392 nodes) and creditcard (9 and 10 QIDs:
  73,728 / 368,640 nodes, SA default-payment-next-month): k=5 no limit, k=5 0 % limit, and
  t = 0.2 EMD / Euclidean 0.2828 + k=2 on the binary SAs. ARX refuses its optimal search on a
  lattice above its heuristic threshold (ARXConfiguration.setHeuristicSearchThreshold, 100,000
  nodes by default); a lattice above it gets the token threshold=<its nodes>, so ARX runs the same
  optimal search there (its time is that search's, not a heuristic's).
- ``models``: one row per privacy model on adult (SA occupation where the model needs a
  sensitive attribute, k=2 alongside): the models ppdp has (distinct/entropy l-diversity, ARX's
  same models) and those of issue #25 (spec names of the issue); the population-based ones on
  adult's 8 QIDs with no SA: delta-presence (ARX DPresence; ARX's data is adult, the population,
  and its DataSubset the rows of ppdp's research predicate, ``RESEARCH``), k-map against a
  population table (ppdp: a table of those rows as the source and adult as the population; ARX:
  KMap with adult and the same rows as its subset) and k-map with the Poisson and zero-truncated
  Poisson estimators (ARX KMap with its CellSizeEstimator, the same k, population size and
  significance). A model this ppdp does not register yet is reported as skipped with ppdp's
  one-line error.

ARX's setup (data, hierarchies, research subsets, DPresence/KMap from tokens) is
benchmarks/arx/ArxSetup.java, shared with ArxVerdicts.java and ArxPopVerdicts.java. The
``node = ARX's`` column says whether ppdp chose ARX's node (ARX's Loss and ppdp's TD differ).

- ``issue40``: the table of issue #40: EMD t-closeness as the same model on both sides (adult,
  equal and ordered; creditcard 1,000 records, 10 QIDs), that table with k=10 and a 5 % limit,
  and the rows of the other families it repeats (``ISSUE40_KEYS``). Not run by default.
- ``--drawn N --seeds 1,2,3``: N cases per seed drawn by ``drawn_cases`` (a base data set, a
  seeded sample of 1,000-5,000 records, 8-12 of its QIDs, k in 2-20, a suppression limit of
  0-10 % or none, k-anonymity alone or with equal / ordered EMD t-closeness), timed as the others;
  each row also holds ppdp's TD at ARX's node (``ppdp_td_at_arx_node``) and whether ppdp's node is
  at least as good on TD or certified optimal; the table ends with the ratios' median, 90th
  percentile and maximum. Alone unless ``--family`` names families too.

``--quick``: the adult rows of ``issue`` and the 1,000-record adult rows of ``small``.
``--compare OLD.json`` (a run of this script on another commit) adds that run's ppdp time and
the equality columns: the same TD, nodes evaluated and certification (``same`` = all three).

Outputs: benchmarks/results/vs_arx/vs_arx.json and vs_arx.md (quick mode: in vs_arx/quick/).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ppdp.connectors.duckdb_connector import DuckDBConnector  # noqa: E402
from ppdp.engine.core.encoding import EncodedTable, encode_population  # noqa: E402
from ppdp.engine.core.hierarchy import Hierarchy, read_arx_csv  # noqa: E402
from ppdp.engine.methods.generalization.objectives import scorer as objective_scorer  # noqa: E402
from ppdp.engine.methods.generalization.objectives import search as objective_search  # noqa: E402
from ppdp.engine.methods.generalization.optimizers import run_optimizer  # noqa: E402
from ppdp.engine.methods.generalization.problem import Problem  # noqa: E402
from ppdp.engine.privacy import build_model  # noqa: E402
from ppdp.engine.release.stages.validate import read_encoded, read_rows  # noqa: E402
from ppdp.process_heap import keep_freed_memory  # noqa: E402
from ppdp.sql import queries as Q  # noqa: E402
from ppdp.sql.dialect import DUCKDB  # noqa: E402
from ppdp.sql.predicate import parse_predicate, predicate_sql  # noqa: E402

ADULT_QIDS = ["age", "education", "marital-status", "native-country", "occupation", "race", "sex", "workclass"]
ISSUE_QIDS = {
    "fars": ["iage", "irace", "ideathmon", "ideathday", "isex", "ihispanic", "istatenum", "iinjury"],
    "cup": ["ZIP", "AGE", "GENDER", "INCOME", "STATE", "RAMNTALL", "NGIFTALL", "MINRAMNT"],
    "mach2019": ["age", "gender", "married", "race", "religion", "familysize", "Q1A", "Q2A"],
    "creditcard": ["LIMIT_BAL", "SEX", "EDUCATION", "MARRIAGE", "AGE", "PAY_0", "PAY_2", "PAY_3"],
}
MACH_QIDS = ["gender", "married", "race", "religion", "Q1A", "Q2A", "Q3A", "Q4A", "Q5A", "Q6A", "Q7A", "Q8A"]
CREDIT_QIDS = ["SEX", "EDUCATION", "MARRIAGE", "PAY_0", "PAY_2", "PAY_3", "PAY_4", "PAY_5", "PAY_6", "AGE"]
# name -> (the shared data set it samples, its QIDs, its SA or None). The samples of one data set
# are the same records whatever the QIDs (seeded by size alone).
SMALL_QIDS: dict[str, tuple[str, list[str], str | None]] = {
    "adult": ("adult", ADULT_QIDS, "salary-class"),  # 8 QIDs, 6,480 nodes
    "mach2019": ("mach2019", MACH_QIDS[:10], None),  # 10 QIDs, 52,488 nodes
    # 9 QIDs, 73,728 nodes: the largest creditcard lattice below ARX's default threshold
    "creditcard": ("creditcard", CREDIT_QIDS[:9], "default-payment-next-month"),
    # Above ARX's default heuristic threshold (100,000 nodes): ARX gets threshold=<nodes> so that
    # it runs its optimal search, as below.
    "mach2019-q11": ("mach2019", MACH_QIDS[:11], None),  # 157,464 nodes
    "mach2019-q12": ("mach2019", MACH_QIDS, None),  # 472,392 nodes
    "creditcard-q10": ("creditcard", CREDIT_QIDS, "default-payment-next-month"),  # 368,640 nodes
}
ARX_HEURISTIC_THRESHOLD = 100_000  # ARXConfiguration's default: above it, ARX refuses algo=OPTIMAL
# delta-presence's research subset and k-map's sample on adult (benchmarks/arx_population_verdicts.py
# uses the same rows): 8,101 of 30,162 records. The CSV is read as text, hence the CAST.
RESEARCH = "\"salary-class\" = '>50K' OR (CAST(age AS INTEGER) >= 60 AND sex = 'Female')"
POPULATION_TABLE = "main.source"  # the dataset's own table, k-map's population when ppdp reads a sample
T_EMD_AS_EUCLIDEAN = 0.2828  # binary SA: ARX's EMD 0.2 (equal distance) is Euclidean 0.2 * sqrt(2)
ZIP_DIGITS = 5
OBJECTIVE = "td"  # --objective
ARX_LOAD = False  # --arx-load
_LAST: list[Any] = [None]  # the last ppdp run's (encoded table, models): ARX's node scored on it


@dataclass(frozen=True)
class Dataset:
    """A CSV with ARX hierarchies: the QIDs, the SA (or none) and where each hierarchy is."""

    key: str
    csv: Path
    qids: tuple[str, ...]
    sa: str | None
    hierarchy_files: tuple[Path, ...]
    sa_hierarchy: Path | None = None


@dataclass(frozen=True)
class Case:
    """One row: a dataset, ppdp's models and optimizer, ARX's tokens for the same constraint."""

    key: str
    label: str
    dataset: str
    models: tuple[tuple[str, dict[str, Any]], ...]
    optimizer: str
    arx: str  # ARX tokens besides data/qids/sensitive/hier.*
    params: dict[str, Any] = field(default_factory=dict)
    family: str = "issue"
    quick: bool = False
    sa: str | None = "default"  # "default": the dataset's SA; None: no SA; else a column
    # A SQL predicate over the dataset choosing ARX's DataSubset (delta-presence's research subset,
    # k-map's sample): ARX reads it as row indices (token subset=ARX_SUBSET), ppdp as SQL.
    subset: str | None = None
    # ppdp's source is that subset, stored as its own table (k-map's sample; the dataset's table
    # is then the population): ARX's data is the population and the subset its sample.
    sample: bool = False


K5 = (("k-anonymity", {"k": 5}),)


def _cases() -> list[Case]:
    out = [
        Case("adult-k5-lattice", "adult k=5, no limit (ppdp lattice, certified)", "adult", K5, "lattice", "k=5 supp=1.0",
             quick=True),
        Case("adult-k5-flash-5", "adult k=5, 5 % limit (ppdp flash)", "adult", K5, "flash", "k=5 supp=0.05",
             {"suppression_limit": 0.05}, quick=True),
        Case("adult-k5-flash-0", "adult k=5, 0 % limit (ppdp flash)", "adult", K5, "flash", "k=5 supp=0.0",
             {"suppression_limit": 0.0}, quick=True),
        Case("adult-t0.2828-k2", "adult t = 0.2 EMD (ppdp Euclidean 0.2828, the same on a binary SA) + k=2", "adult",
             (("k-anonymity", {"k": 2}), ("t-closeness", {"t": T_EMD_AS_EUCLIDEAN})), "lattice",
             "k=2 t=0.2 tmodel=equal supp=1.0", quick=True),
        Case("adult-t0.2-k2", "adult t = 0.2 EMD vs ppdp Euclidean 0.2 (stricter) + k=2", "adult",
             (("k-anonymity", {"k": 2}), ("t-closeness", {"t": 0.2})), "lattice", "k=2 t=0.2 tmodel=equal supp=1.0",
             quick=True),
    ]
    out += [Case(f"{d}-k5-lattice", f"{d} k=5, no limit, 8 QIDs (ppdp lattice)", d, K5, "lattice", "k=5 supp=1.0",
                 sa=None) for d in ISSUE_QIDS]
    for d in SMALL_QIDS:
        for n in (1000, 5000):
            ds = f"{d}-{n}"
            quick = d == "adult" and n == 1000
            out += [
                Case(f"{ds}-k5-lattice", f"{ds} k=5, no limit (ppdp lattice)", ds, K5, "lattice", "k=5 supp=1.0",
                     family="small", quick=quick),
                Case(f"{ds}-k5-flash-0", f"{ds} k=5, 0 % limit (ppdp flash)", ds, K5, "flash", "k=5 supp=0.0",
                     {"suppression_limit": 0.0}, family="small", quick=quick),
            ]
            if SMALL_QIDS[d][2] is not None:
                out.append(Case(f"{ds}-t0.2828-k2", f"{ds} t = 0.2 EMD / Euclidean 0.2828 + k=2 (ppdp lattice)", ds,
                                (("k-anonymity", {"k": 2}), ("t-closeness", {"t": T_EMD_AS_EUCLIDEAN})), "lattice",
                                "k=2 t=0.2 tmodel=equal supp=1.0", family="small", quick=quick))
    k2 = ("k-anonymity", {"k": 2})
    # Issue #40's rows besides those above: EMD as the same model on both sides, and a small wide
    # table (creditcard, 1,000 records, 10 QIDs) with a suppression limit.
    for d in ("equal", "ordered"):
        out.append(Case(f"adult-emd-{d}-0.2-k2", f"adult EMD {d} t=0.2 + k=2, same model (ppdp lattice)", "adult",
                        (k2, ("t-closeness", {"t": 0.2, "distance": d})), "lattice",
                        f"k=2 t=0.2 tmodel={d} supp=1.0", family="issue40"))
    ds = "creditcard-q10-1000"
    out += [
        Case(f"{ds}-emd-equal-0.2-k2", f"{ds} EMD equal t=0.2 + k=2, same model (ppdp lattice)", ds,
             (k2, ("t-closeness", {"t": 0.2, "distance": "equal"})), "lattice", "k=2 t=0.2 tmodel=equal supp=1.0",
             family="issue40"),
        Case(f"{ds}-k10-flash-5", f"{ds} k=10, 5 % limit (ppdp flash)", ds, (("k-anonymity", {"k": 10}),), "flash",
             "k=10 supp=0.05", {"suppression_limit": 0.05}, family="issue40"),
    ]
    for key, label, model, arx in [
        ("distinct-l3", "distinct l-diversity l=3", ("distinct-l-diversity", {"l": 3}), "ldiv=distinct l=3"),
        ("entropy-l3", "entropy l-diversity l=3", ("entropy-l-diversity", {"l": 3}), "ldiv=entropy l=3"),
        ("recursive-c4-l3", "recursive (c,l)-diversity c=4 l=3", ("recursive-cl-diversity", {"c": 4, "l": 3}),
         "ldiv=recursive c=4 l=3"),
        ("t-equal-0.2", "t-closeness equal-distance EMD t=0.2", ("t-closeness", {"t": 0.2, "distance": "equal"}),
         "t=0.2 tmodel=equal"),
        ("t-ordered-0.2", "t-closeness ordered-distance EMD t=0.2", ("t-closeness", {"t": 0.2, "distance": "ordered"}),
         "t=0.2 tmodel=ordered"),
        ("t-hier-0.2", "t-closeness hierarchical EMD t=0.2",
         ("t-closeness", {"t": 0.2, "distance": "hierarchical", "hierarchy": "ARX_SA_HIERARCHY"}), "t=0.2 tmodel=hierarchical"),
        ("beta-1-enhanced", "enhanced beta-likeness beta=1", ("beta-likeness", {"beta": 1.0, "enhanced": True}),
         "beta=1.0 bmodel=enhanced"),
        ("beta-1-basic", "basic beta-likeness beta=1", ("beta-likeness", {"beta": 1.0, "enhanced": False}),
         "beta=1.0 bmodel=basic"),
    ]:
        out.append(Case(f"adult-occ-{key}-k2", f"adult SA occupation, {label} + k=2 (ppdp lattice)", "adult-occ",
                        (k2, model), "lattice", f"k=2 {arx} supp=1.0", family="models"))
    # The population-based models (no SA, adult's 8 QIDs): ARX's data is the population (adult),
    # its DataSubset the research subset / the sample; with an estimator adult is the sample.
    for dmin, dmax in ((0.05, 0.6), (0.0, 0.5)):
        out.append(Case(f"adult-dpresence-{dmin:g}-{dmax:g}", f"adult delta-presence dmin={dmin:g} dmax={dmax:g}, research "
                        "subset: >50K or women of 60+ (ppdp lattice)", "adult",
                        (("delta-presence", {"dmin": dmin, "dmax": dmax, "research": RESEARCH}),), "lattice",
                        f"dmin={dmin} dmax={dmax} subset=ARX_SUBSET supp=1.0", family="models", subset=RESEARCH))
    out.append(Case("adult-kmap-population-k10", "adult k-map k=10, population table (adult) of a sample (>50K or women of 60+) "
                    "(ppdp lattice)", "adult", (("k-map", {"k": 10, "population": POPULATION_TABLE}),), "lattice",
                    "kmap=10 subset=ARX_SUBSET supp=1.0", family="models", subset=RESEARCH, sample=True))
    for k, est, size, sig in ((10, "poisson", 300_000, 0.01), (20, "zero-truncated-poisson", 100_000, 0.05)):
        out.append(Case(f"adult-kmap-{est}-k{k}", f"adult k-map k={k}, {est} estimator N={size:,} significance={sig:g} "
                        "(ppdp lattice)", "adult",
                        (("k-map", {"k": k, "estimator": est, "population_size": size, "significance": sig}),), "lattice",
                        f"kmap={k} estimator={est} population_size={size} significance={sig} supp=1.0", family="models"))
    return out


CASES = _cases()
# Issue #40's table: its own rows (family issue40) and these of the other families.
ISSUE40_KEYS = ("adult-k5-lattice", "adult-k5-flash-5", "adult-k5-flash-0", "creditcard-q10-1000-k5-flash-0",
                "fars-k5-lattice")


def data_dir(arg: str | None) -> Path:
    """``--data``, else ``PPDP_DATA``, else ../shared/data next to the repository."""
    return Path(arg or os.environ.get("PPDP_DATA") or (REPO / ".." / "shared" / "data")).resolve()


def zip_hierarchy(csv: Path, out: Path) -> Path:
    """A 5-digit masking hierarchy for cup's ZIP (no file ships with the data): level j masks the
    last j digits of the zero-padded code, level 5 is ``*****``."""
    if out.exists():
        return out
    values = sorted(set(pl.read_csv(csv, separator=";", infer_schema=False)["ZIP"].drop_nulls().to_list()))
    lines = []
    for v in values:
        padded = v.zfill(ZIP_DIGITS)
        lines.append(";".join([v] + [padded[: ZIP_DIGITS - j] + "*" * j for j in range(1, ZIP_DIGITS + 1)]))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    return out


def dataset(root: Path, key: str, work: Path) -> Dataset | None:
    """The files of one dataset key (``adult``, ``adult-occ``, ``fars``.., ``adult-1000``..), writing
    seeded samples and the ZIP hierarchy under ``work``; None when the data is not there."""
    arx = root / "arx"
    gb = arx / "genetic-benchmark"
    if key in ("adult", "adult-occ"):
        sa = "salary-class" if key == "adult" else "occupation"
        qids = ADULT_QIDS if key == "adult" else [q for q in ADULT_QIDS if q != "occupation"]
        csv = arx / "adult.csv"
        if not csv.exists():
            return None
        return Dataset(key, csv, tuple(qids), sa, tuple(arx / f"adult_hierarchy_{q}.csv" for q in qids),
                       arx / f"adult_hierarchy_{sa}.csv")
    if key in ISSUE_QIDS:
        csv = gb / f"{key}_int.csv"
        if not csv.exists():
            return None
        files = [gb / f"{key}_int_hierarchy_{q}.csv" for q in ISSUE_QIDS[key]]
        if key == "cup":
            files[0] = zip_hierarchy(csv, work / "cup_int_hierarchy_ZIP.csv")
        return Dataset(key, csv, tuple(ISSUE_QIDS[key]), None, tuple(files))
    if key in DRAWN_DATASETS:
        base, qids, sa, n_rows, seed = DRAWN_DATASETS[key]
        return _sample(root, work, base, list(qids), sa, n_rows, seed, key)
    name, n = key.rsplit("-", 1)
    base, qids, sa = SMALL_QIDS[name]
    src = arx / "adult.csv" if base == "adult" else gb / f"{base}_int.csv"
    if not src.exists():
        return None
    folder, prefix = (arx, "adult") if base == "adult" else (gb, f"{base}_int")
    sample = work / f"{base}-{n}.csv"
    if not sample.exists():  # seeded: the same records every run
        frame = pl.read_csv(src, separator=";", infer_schema=False).sample(int(n), seed=25, shuffle=True)
        work.mkdir(parents=True, exist_ok=True)
        frame.write_csv(sample, separator=";")
    return Dataset(key, sample, tuple(qids), sa, tuple(folder / f"{prefix}_hierarchy_{q}.csv" for q in qids),
                   None if sa is None else folder / f"{prefix}_hierarchy_{sa}.csv")


def _sample(root: Path, work: Path, base: str, qids: list[str], sa: str | None, n: int, seed: int,
            key: str) -> Dataset | None:
    """A drawn case's dataset: ``n`` records of ``base`` sampled with ``seed`` (the same records
    every run), its QIDs and SA."""
    arx = root / "arx"
    gb = arx / "genetic-benchmark"
    src = arx / "adult.csv" if base == "adult" else gb / f"{base}_int.csv"
    if not src.exists():
        return None
    folder, prefix = (arx, "adult") if base == "adult" else (gb, f"{base}_int")
    sample = work / f"{base}-{n}-s{seed}.csv"
    if not sample.exists():
        frame = pl.read_csv(src, separator=";", infer_schema=False).sample(n, seed=seed, shuffle=True)
        work.mkdir(parents=True, exist_ok=True)
        frame.write_csv(sample, separator=";")
    return Dataset(key, sample, tuple(qids), sa, tuple(folder / f"{prefix}_hierarchy_{q}.csv" for q in qids),
                   None if sa is None else folder / f"{prefix}_hierarchy_{sa}.csv")


# --- the drawn family: cases drawn from a seed (``--drawn N --seeds 1,2,3``) ---------------------
# Bases: (the shared data set, the QIDs to draw from, the SA or None). Lattices above
# DRAWN_MAX_NODES are drawn again (ARX's optimal search there takes minutes a case).
DRAWN_BASES: dict[str, tuple[list[str], str | None]] = {
    "adult": (ADULT_QIDS, "salary-class"),
    "creditcard": (CREDIT_QIDS, "default-payment-next-month"),
    "mach2019": (MACH_QIDS, None),
}
DRAWN_SIZES = (1000, 2000, 3000, 5000)
DRAWN_K = (2, 3, 5, 10, 20)
DRAWN_LIMITS = (0.0, 0.01, 0.02, 0.05, 0.1, 1.0)  # 1.0: no limit
DRAWN_T = (0.15, 0.2, 0.3)
DRAWN_MAX_NODES = 120_000
# drawn dataset key -> (base, QIDs, SA, records, sample seed)
DRAWN_DATASETS: dict[str, tuple[str, tuple[str, ...], str | None, int, int]] = {}


def _heights(root: Path, base: str, qids: list[str]) -> list[int]:
    folder, prefix = (root / "arx", "adult") if base == "adult" else (root / "arx" / "genetic-benchmark", f"{base}_int")
    out = []
    for q in qids:
        with open(folder / f"{prefix}_hierarchy_{q}.csv") as f:
            out.append(f.readline().rstrip("\n").count(";"))
    return out


def drawn_cases(seed: int, count: int, root: Path) -> list[Case]:
    """``count`` cases drawn from ``seed``: a base data set, a sample of 1,000-5,000 records (its
    own seed), 8-12 of its QIDs, k, a suppression limit (0-10 %, or none), the model (k-anonymity
    alone, or with equal or ordered EMD t-closeness where the base has an SA) and t. k-anonymity
    with a limit runs Flash, everything else the certified lattice search (with the limit)."""
    rng = np.random.default_rng([40, seed])
    out: list[Case] = []
    while len(out) < count:
        base = str(rng.choice(list(DRAWN_BASES)))
        pool, sa = DRAWN_BASES[base]
        n_q = int(rng.integers(8, min(12, len(pool)) + 1))
        qids = sorted(rng.choice(pool, size=n_q, replace=False).tolist(), key=pool.index)
        if math.prod(h + 1 for h in _heights(root, base, qids)) > DRAWN_MAX_NODES:
            continue
        n = int(rng.choice(DRAWN_SIZES))
        k = int(rng.choice(DRAWN_K))
        limit = float(rng.choice(DRAWN_LIMITS))
        model = "k" if sa is None or rng.random() < 0.5 else str(rng.choice(["equal", "ordered"]))
        i = len(out)
        ds = f"drawn-s{seed}-{i}"
        DRAWN_DATASETS[ds] = (base, tuple(qids), sa, n, int(rng.integers(1, 10**6)))
        models: tuple[tuple[str, dict[str, Any]], ...] = (("k-anonymity", {"k": k}),)
        arx = f"k={k} supp={limit}"
        label = f"{base}-{n} {n_q} QIDs k={k}"
        if model != "k":
            t = float(rng.choice(DRAWN_T))
            models += (("t-closeness", {"t": t, "distance": model}),)
            arx += f" t={t} tmodel={model}"
            label += f" EMD {model} t={t}"
        label += f", {'no limit' if limit >= 1 else f'{limit:.0%} limit'}"
        optimizer = "flash" if model == "k" and limit < 1 else "lattice"
        params = {"suppression_limit": limit} if limit < 1 else {}
        out.append(Case(f"{ds}", f"{label} (ppdp {optimizer})", ds, models, optimizer, arx, params, family="drawn"))
    return out


def ppdp_td_at(case: Case, loaded: Loaded, sa: list[str], levels: dict[str, int]) -> float | None:
    """ppdp's objective (TD of (G, S*(G))) at ARX's node, None when S*(G) there is infeasible or
    suppresses more than the case's limit (ppdp would not choose it)."""
    models = ppdp_models(case, loaded.ds)
    table = prepare(loaded, sa, models)
    problem = Problem(table, bind(models, table, loaded.ds))
    g = np.array([[int(levels[q]) for q in loaded.ds.qids]], dtype=np.int64)
    _, ev = problem.evaluate_optimal(g)
    limit = case.params.get("suppression_limit", 1.0)
    if not bool(ev.feasible[0]) or int(ev.suppressed[0]) > math.floor(limit * table.n_records + 1e-9):
        return None
    return float(ev.td[0])


@dataclass
class Loaded:
    """A dataset as both sides hold it before the timing: ppdp's frame in DuckDB and hierarchies."""

    ds: Dataset
    con: duckdb.DuckDBPyConnection
    hierarchies: list[Hierarchy]
    frame: pl.DataFrame
    subsets: dict[str, Subset] = field(default_factory=dict)
    # What a release's validate stage knows before its histogram (it describes the source's
    # columns and counts its rows to check the key), read once here as the hierarchies are:
    # the engine's connector over ``con``, each table's column types and rows.
    connector: DuckDBConnector | None = None
    described: dict[str, tuple[dict[str, str], int]] = field(default_factory=dict)

    def source_facts(self, table: str, source: Q.Source) -> tuple[dict[str, str], int]:
        """(column types of ``table``, rows of ``source``), as validate reads them, once each."""
        key = source.sql()
        if key not in self.described:
            assert self.connector is not None
            types = dict(self.connector.relation_columns("main", table) or [])
            rows = int(self.connector.query(f"SELECT COUNT(*) AS n FROM {key}")["n"][0])
            self.described[key] = (types, rows)
        return self.described[key]

    @property
    def lattice_nodes(self) -> int:
        return math.prod(h.height + 1 for h in self.hierarchies)


@dataclass(frozen=True)
class Subset:
    """The rows of a SQL predicate over a dataset: ARX's DataSubset (0-based row indices, one per
    line, in ``rows_file``) and ppdp's copy of them as a table (k-map's sample)."""

    rows_file: Path
    table: str
    n_rows: int


def load(ds: Dataset, sa: str | None) -> Loaded:
    con = duckdb.connect()
    frame = pl.read_csv(ds.csv, separator=";", infer_schema=False)
    con.register("src_frame", frame)
    con.execute("CREATE TABLE source AS SELECT * FROM src_frame")
    con.unregister("src_frame")
    # ARX keeps the last row of a leaf given twice (cup's AGE hierarchy does that): do the same.
    hierarchies = [read_arx_csv(f, q, duplicates="keep-last") for f, q in zip(ds.hierarchy_files, ds.qids, strict=True)]
    # the harness owns ``con`` and holds no transaction open: reads may use cursors, as a run's own connection does
    return Loaded(ds, con, hierarchies, frame, connector=DuckDBConnector.over(con, idle_between_calls=True))


def subset(loaded: Loaded, predicate: str, work: Path) -> Subset:
    """The rows of ``predicate`` (checked as a research predicate is) as ARX's row file and a ppdp
    table, made once per dataset and predicate, outside the timing."""
    if predicate in loaded.subsets:
        return loaded.subsets[predicate]
    cond = predicate_sql(parse_predicate(predicate, "subset", DUCKDB), "src", DUCKDB)
    indexed = loaded.frame.with_row_index("ppdp_row")
    loaded.con.register("indexed_frame", indexed)
    rows = [r[0] for r in loaded.con.execute(f"SELECT ppdp_row FROM indexed_frame AS src WHERE {cond} ORDER BY 1").fetchall()]
    loaded.con.unregister("indexed_frame")
    table = f"subset_{len(loaded.subsets)}"
    loaded.con.register("subset_frame", indexed.filter(pl.col("ppdp_row").is_in(rows)).drop("ppdp_row"))
    loaded.con.execute(f"CREATE TABLE {table} AS SELECT * FROM subset_frame")
    loaded.con.unregister("subset_frame")
    work.mkdir(parents=True, exist_ok=True)
    rows_file = work / f"{loaded.ds.key}-subset-{hashlib.sha1(predicate.encode()).hexdigest()[:10]}.rows"
    rows_file.write_text("".join(f"{r}\n" for r in rows))
    out = Subset(rows_file, table, len(rows))
    loaded.subsets[predicate] = out
    return out


def prepare(loaded: Loaded, sa: list[str], models: list | None = None, source_table: str = "source",
            timings: dict[str, float] | None = None) -> EncodedTable:
    """What ARX's anonymize() also does: the histogram (one GROUP BY) and its encoding; for a
    model that counts persons of a population (delta-presence, k-map with a population table),
    the population's histogram and encoding too, as the release's validate stage reads them
    (the research subset of delta-presence is ppdp's SQL predicate on the source). ``timings``
    gets ``read``: the ms spent reading the source's rows out of DuckDB (``read_rows``; 0 where
    the database groups them), which ARX's timing, starting from its data in memory, has not."""
    models = models or []
    research = next((m.research_predicate() for m in models if m.requirements.research_subset), None)
    qids = list(loaded.ds.qids)
    source = Q.Source(None, source_table, None, DUCKDB, research=research)
    types, n_rows = loaded.source_facts(source_table, source)
    assert loaded.connector is not None
    # a job's re-run: every file read again, each parse reused while the file's content is the same
    hierarchies = [read_arx_csv(f, q, duplicates="keep-last") for f, q in zip(loaded.ds.hierarchy_files, qids, strict=True)]
    t0 = time.perf_counter()
    rows = read_rows(loaded.connector, source, qids + sa, n_rows, types)
    if timings is not None:
        timings["read"] = (time.perf_counter() - t0) * 1000.0
    table = read_encoded(loaded.connector, source, qids, sa, hierarchies, types=types, n_rows=n_rows, rows=rows)
    populations = {m.population_table() for m in models if m.requirements.population}
    if populations:
        (name,) = populations  # None: the source itself before the research subset
        schema, _, relation = (name or "").rpartition(".")
        pop_source = Q.Source(None, "source", None, DUCKDB) if name is None else Q.Source(schema or None, relation, None,
                                                                                            DUCKDB)
        frame = loaded.con.sql(Q.histogram_query(pop_source, qids, [])).pl()
        table = replace(table, population=encode_population(frame, table, "the source" if name is None else name))
    return table


class Arx:
    """ArxBench in serve mode: one warm JVM, one JSON line per command."""

    def __init__(self, classpath: str, work: Path, jvm_options: tuple[str, ...] = (), cpus: str | None = None) -> None:
        classes = work / "arx-classes"
        classes.mkdir(parents=True, exist_ok=True)
        srcs = [REPO / "benchmarks" / "arx" / f for f in ("ArxSetup.java", "ArxBench.java")]
        target = classes / "ArxBench.class"
        if not target.exists() or target.stat().st_mtime < max(f.stat().st_mtime for f in srcs):
            subprocess.run(["javac", "-nowarn", "-cp", classpath, "-d", str(classes), *map(str, srcs)], check=True,
                           capture_output=True)
        pinned = ["taskset", "-c", cpus] if cpus else []  # the JVM on these CPUs only (--arx-cpus)
        self.proc = subprocess.Popen([*pinned, "java", *jvm_options, "-cp", f"{classes}{os.pathsep}{classpath}", "ArxBench", "serve"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        ready = json.loads(self._line())
        self.java = ready.get("java")

    def _line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("ARX harness exited")
        return line

    def run(self, tokens: str) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"run {tokens}\n")
        self.proc.stdin.flush()
        out = json.loads(self._line())
        if "error" in out:
            raise RuntimeError(f"ARX: {out['error']}")
        return out

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.write("quit\n")
            self.proc.stdin.flush()
            self.proc.wait(timeout=30)


def arx_tokens(case: Case, loaded: Loaded, sa: str | None, rows: Subset | None) -> str:
    """ARX's tokens for a case: the data, its QIDs and hierarchies, the case's own; a lattice
    above ARX's default heuristic threshold gets threshold=<its nodes> (ARX runs its optimal
    search there too, as asked: algo=optimal), a subset its row file."""
    ds = loaded.ds
    hier = " ".join(f"hier.{q}={f}" for q, f in zip(ds.qids, ds.hierarchy_files, strict=True))
    if sa is not None and ds.sa_hierarchy is not None:
        hier += f" hier.{sa}={ds.sa_hierarchy}"
    sens = f" sensitive={sa}" if sa else ""
    own = case.arx if rows is None else case.arx.replace("ARX_SUBSET", str(rows.rows_file))
    if "ARX_SUBSET" in own:
        raise ValueError(f"case {case.key} names subset=ARX_SUBSET but no subset predicate")
    nodes = loaded.lattice_nodes
    threshold = f" threshold={nodes}" if nodes > ARX_HEURISTIC_THRESHOLD else ""
    metric = f" metric={OBJECTIVE}" if OBJECTIVE != "td" else ""
    return f"data={ds.csv} qids={','.join(ds.qids)}{sens} {hier} {own}{threshold}{metric}"


def ppdp_models(case: Case, ds: Dataset) -> list:
    models = []
    for name, params in case.models:
        p = {k: (str(ds.sa_hierarchy) if v == "ARX_SA_HIERARCHY" else v) for k, v in params.items()}
        models.append(build_model(name, p))
    return models


def bind(models: list, table: EncodedTable, ds: Dataset) -> list:
    """Models that read the encoded table (an order or a hierarchy over the SA values) are bound
    to it as the engine's validate stage does, where this ppdp has ``PrivacyModel.bind``."""
    from ppdp.engine.privacy import base
    context_cls = getattr(base, "ModelContext", None)
    if context_cls is None:
        return models
    ctx = context_cls(table.sensitive, table.sa_values, ".", None if ds.sa_hierarchy is None else str(ds.sa_hierarchy),
                      int(table.n_records))
    return [m.bind(ctx) for m in models]


def ppdp_run(case: Case, loaded: Loaded, sa: list[str], source_table: str = "source") -> tuple[float, Any, float, float]:
    """(ms in all, the optimizer's result, ms of prepare, ms of the source's rows read within it)."""
    models = ppdp_models(case, loaded.ds)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    table = prepare(loaded, sa, models, source_table, timings)
    models = bind(models, table, loaded.ds)
    t1 = time.perf_counter()
    if OBJECTIVE != "td":  # ppdp minimizes ARX's metric too (engine/methods/generalization/objectives.py)
        result = objective_search(Problem(table, models), OBJECTIVE, budget=10**8, optimizer=case.optimizer,
                                  params=dict(case.params))
    else:
        result = run_optimizer(case.optimizer, Problem(table, models), budget=10**8, params=dict(case.params))
    t2 = time.perf_counter()
    _LAST[0] = (table, models)
    return (t2 - t0) * 1000.0, result, (t1 - t0) * 1000.0, timings.get("read", 0.0)


def run_case(case: Case, loaded: Loaded, arx: Arx | None, *, reps: int, warmups: int, work: Path,
             min_ms: float = 0.0, max_reps: int = 400) -> dict[str, Any]:
    """Warm-ups, then ``reps`` rounds timing ARX and ppdp back to back, the order alternating
    (ARX first in even rounds). A side that runs right after its own previous run finds its
    process and caches warm; right after the other side it does not (a 3-5 ms case runs 20-40 %
    slower so, on either side). The alternation gives ARX that warm start in the even rounds
    from the second on and ppdp in the odd ones: over an even number of timed rounds each side
    has as many of both, and the medians compare like with like; over an odd number one side
    (ARX after an even number of warm-ups) has one warm round more, which on small cases puts its
    median on a warm round and the other's on a cold one.

    ``min_ms``: rounds are added two at a time (so both orders stay equally many) until each side's
    timed rounds add up to at least this many ms, at most ``max_reps`` rounds in all. A case of a
    few ms moves by 20-40 % with what ran before it, so six rounds leave its median to chance;
    a few hundred ms of rounds settle it, and cost a long case nothing (its ``reps`` pass it)."""
    ds = loaded.ds
    # The SA only where a model reads it, on both sides (a k-anonymity release has no
    # [sensitive] column, and ARX refuses a sensitive attribute no model uses).
    needs_sa = any(m.requirements.sensitive_counts for m in ppdp_models(case, ds))
    sa_col = (ds.sa if case.sa == "default" else case.sa) if needs_sa else None
    sa = [sa_col] if sa_col else []
    rows = None if case.subset is None else subset(loaded, case.subset, work)
    source_table = rows.table if case.sample and rows is not None else "source"
    tokens = arx_tokens(case, loaded, sa_col, rows) + (" load=1" if ARX_LOAD else "")
    arx_load_ms: list[float] = []
    ppdp_ms: list[float] = []
    arx_ms: list[float] = []
    prep_ms, read_ms, result, arx_out = [], [], None, None
    def another_round(i: int) -> bool:
        if i < warmups + reps:
            return True
        if not min_ms or len(ppdp_ms) >= max_reps:
            return False
        return (i - warmups) % 2 == 1 or sum(ppdp_ms) < min_ms or (arx is not None and sum(arx_ms) < min_ms)

    i = 0
    while another_round(i):
        order = ("arx", "ppdp") if i % 2 == 0 else ("ppdp", "arx")
        for side in order:
            if side == "arx" and arx is not None:
                arx_out = arx.run(tokens)
                if i >= warmups:
                    arx_ms.append(float(arx_out["ms"]))
                    if "load_ms" in arx_out:
                        arx_load_ms.append(float(arx_out["load_ms"]))
            elif side == "ppdp":
                ms, result, prep, read = ppdp_run(case, loaded, sa, source_table)
                if i >= warmups:
                    ppdp_ms.append(ms)
                    prep_ms.append(prep)
                    read_ms.append(read)
        i += 1
    assert result is not None
    p, a = statistics.median(ppdp_ms), (statistics.median(arx_ms) if arx_ms else None)
    row: dict[str, Any] = {
        "rounds": len(ppdp_ms),
        "ppdp_ms": round(p, 1), "ppdp_prepare_ms": round(statistics.median(prep_ms), 1),
        "ppdp_ms_all": [round(t, 1) for t in ppdp_ms],
        "arx_ms": None if a is None else round(a, 1), "arx_ms_all": [round(t, 1) for t in arx_ms],
        # Every search here runs to its end (no budget cap); certified says whether its optimum is
        # also proven (models without an exact oracle are not), a separate column.
        "ratio": None if a is None else round(p / a, 3),
        # ARX's timing starts from its data in memory; ppdp's includes reading the source's rows out
        # of the database. The same ratio from ppdp's rows in memory (each round's read taken off):
        "ppdp_read_ms": round(statistics.median(read_ms), 1),
        "ratio_from_memory": None if a is None else round(statistics.median(
            [t - r for t, r in zip(ppdp_ms, read_ms, strict=True)]) / a, 3),
        # --arx-load: ARX's data and hierarchies read from their files each round too, as ppdp's
        # rows and hierarchies are read (both sides from their data at rest)
        **({} if not arx_load_ms else {
            "arx_load_ms": round(statistics.median(arx_load_ms), 1),
            "ratio_from_storage": round(statistics.median(ppdp_ms) / statistics.median(
                [a + ld for a, ld in zip(arx_ms, arx_load_ms, strict=True)]), 3)}),
        "nodes_evaluated": int(result.evaluations), "td": float(result.td), "feasible": bool(result.feasible),
        "suppressed": int(result.suppressed), "certified": bool(result.certified),
        "levels": [int(x) for x in result.g],
        "info": {k: v for k, v in result.info.items() if isinstance(v, int | float | bool | str | None)},
    }
    if arx_out is not None:
        row["arx_found"] = arx_out.get("found")
        row["arx_checked"] = arx_out.get("transformations_checked")
        row["arx_levels"] = arx_out.get("levels")
        row["arx_suppressed"] = arx_out.get("suppressed")
        # The chosen nodes compared where both found one (ARX's Loss and ppdp's TD are different
        # measures, so a different node is not a wrong one; the rows say which).
        levels = dict(zip(ds.qids, row["levels"], strict=True))
        row["same_node"] = (bool(arx_out.get("found")) and result.feasible and arx_out.get("levels") == levels) \
            if arx_out.get("found") or result.feasible else None
        if OBJECTIVE != "td" and arx_out.get("found") and result.feasible and _LAST[0] is not None:
            # ARX's node scored by ppdp's objective: equal scores are a tie, not a different optimum
            table, models = _LAST[0]
            g = np.array([[int(arx_out["levels"][q]) for q in ds.qids]], dtype=np.int64)
            retained, _ev = Problem(table, models).evaluate_optimal(g)
            arx_score = objective_scorer(OBJECTIVE, table)(g[0], retained[0])
            row["objective_value"] = result.info.get("objective_value")
            row["arx_objective_value"] = float(arx_score)
            row["same_score"] = bool(abs(arx_score - float(result.info.get("objective_value", np.nan))) <= 1e-9)
        if case.family == "drawn" and arx_out.get("found") and arx_out.get("levels"):
            at = ppdp_td_at(case, loaded, sa, arx_out["levels"])
            row["ppdp_td_at_arx_node"] = at
            # ppdp's node is at least as good as ARX's on ppdp's objective (TD), or certified optimal
            row["as_good_as_arx"] = bool(result.certified) or at is None or float(result.td) >= at - 1e-9
    row["lattice_nodes"] = loaded.lattice_nodes
    if rows is not None:
        row["subset_rows"] = rows.n_rows
    return row


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             check=True)
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return out.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def fmt(x: float | None, spec: str = ",.0f") -> str:
    return "" if x is None else format(x, spec)


def same(r: dict[str, Any], o: dict[str, Any]) -> dict[str, bool] | None:
    if not o or "skipped" in o or "skipped" in r:
        return None
    return {"td": r["td"] == o["td"], "nodes": r["nodes_evaluated"] == o["nodes_evaluated"],
            "certified": r["certified"] == o["certified"]}


def node_cell(r: dict[str, Any]) -> str:
    """yes: ARX's node; tie: another node with ARX's node's score (objective runs); no; blank."""
    if r.get("same_node") is False and r.get("same_score"):
        return "tie"
    return {None: "", True: "yes", False: "no"}[r.get("same_node")]


def markdown(doc: dict[str, Any], compare: dict[str, Any] | None) -> str:
    meta = doc["meta"]
    lines = [
        "# ppdp vs ARX 3.9.2, both run in this session (issue #25)",
        "",
        f"Mode {meta['mode']}; median of {meta['reps']} interleaved rounds"
        + (f" or more, until each side's rounds add up to {meta['min_ms']:g} ms (at most {meta['max_reps']}; rounds per "
           "case in the JSON)" if meta.get("min_ms") else "")
        + f" after {meta['warmups']} warm-up round(s); "
        f"commit {meta['commit']}; {meta['machine']}; ARX {meta['arx']}; load average at start {meta['load_average']}.",
        "ARX ms = ARXAnonymizer.anonymize (encoding + search), one warm JVM. ppdp ms = histogram query (DuckDB) + "
        "encoding + optimizer, in process (prepare = the first two). ratio = ppdp / ARX (< 1: ppdp faster); every "
        "search runs to its end; certified = ppdp's optimum is proven (models without an exact oracle: no). "
        "read = the source's rows read out of DuckDB within prepare; from memory = ppdp's time without it / ARX's "
        "(ARX's timing starts from its data in memory). "
        "ARX checked = its transformations checked. node = ARX's: ppdp's chosen node is ARX's global optimum "
        "(ARX's Loss and ppdp's TD are different measures: \"no\" is a different trade-off, not an error; with "
        "--objective both minimize the same metric, and \"tie\" is another node with ARX's node's score). "
        f"Objective: {meta.get('objective', 'td')}.",
        "",
    ]
    head = ("| case | ARX ms | ppdp ms | (prepare) | (read) | ratio | from memory | ppdp nodes | ARX checked | TD | "
            "certified | node = ARX's |")
    rule = "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|:---:|"
    if compare:
        head += " before ms | same TD | same nodes | same cert. |"
        rule += "---:|:---:|:---:|:---:|"
    lines += [head, rule]
    old = {r["key"]: r for r in (compare or {}).get("rows", [])}
    for r in doc["rows"]:
        if "skipped" in r:
            cells = [r["label"], "", f"skipped: {r['skipped']}", "", "", "", "", "", "", "", "", ""]
        else:
            cells = [r["label"], fmt(r["arx_ms"]), fmt(r["ppdp_ms"]), fmt(r["ppdp_prepare_ms"]),
                     fmt(r.get("ppdp_read_ms"), ",.1f"), fmt(r["ratio"], ".2f"), fmt(r.get("ratio_from_memory"), ".2f"),
                     fmt(r["nodes_evaluated"]), fmt(r.get("arx_checked")), fmt(r["td"], ",.1f"),
                     "yes" if r["certified"] else "no",
                     node_cell(r)]
        if compare:
            o = old.get(r["key"], {})
            s = same(r, o)
            cells += [o.get("skipped", fmt(o.get("ppdp_ms"))) if o else ""]
            cells += ["" if s is None else ("yes" if s[k] else "**NO**") for k in ("td", "nodes", "certified")]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    loads = [r for r in doc["rows"] if r.get("arx_load_ms") is not None]
    if loads:
        lines += ["", "Both from their data at rest (--arx-load): ARX's data and hierarchies read from their files "
                      "in each round (ARX load ms), beside ppdp's rows read out of DuckDB and its hierarchies read "
                      "(both in ppdp ms); from storage = ppdp ms / (ARX load ms + ARX ms), medians of the rounds' sums.",
                  "", "| case | ARX load ms | ARX ms | ppdp ms | ratio | from storage |", "|---|---:|---:|---:|---:|---:|"]
        lines += [f"| {r['label']} | {fmt(r['arx_load_ms'], ',.1f')} | {fmt(r['arx_ms'])} | {fmt(r['ppdp_ms'])} | "
                  f"{fmt(r['ratio'], '.2f')} | {fmt(r['ratio_from_storage'], '.2f')} |" for r in loads]
    dist = doc.get("distribution")
    if dist:
        lines += ["", f"Drawn family: {dist['cases']} cases timed with ARX ({dist['skipped']} skipped); ratio median "
                      f"{dist['median']:.2f}, 90th percentile {dist['p90']:.2f}, maximum {dist['max']:.2f}"
                      + ("" if not dist.get("from_memory") else
                         f" (from memory: median {dist['from_memory']['median']:.2f}, 90th percentile "
                         f"{dist['from_memory']['p90']:.2f}, maximum {dist['from_memory']['max']:.2f})")
                      + "; certified "
                      f"{dist['certified']}; node at least as good as ARX's on TD or certified optimal: "
                      f"{dist['as_good_as_arx']}."]
    if compare:
        lines += ["", f"before = {compare['meta'].get('label') or compare['meta']['commit']} "
                      f"(same script, run {compare['meta']['date']})."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="adult rows of the issue and the 1,000-record adult sample")
    ap.add_argument("--reps", type=int, default=None, help="timed rounds per case (default 4 quick, 6 full; even: "
                    "see run_case)")
    ap.add_argument("--min-ms", type=float, default=0.0, help="more rounds, two at a time, until each side's timed "
                    "rounds add up to this many ms (at most --max-reps; default 0: --reps rounds)")
    ap.add_argument("--max-reps", type=int, default=400, help="the most rounds --min-ms adds up to (default 400)")
    ap.add_argument("--warmups", type=int, default=3, help="untimed rounds per case first (default 3: ARX's JIT)")
    ap.add_argument("--data", help="folder holding arx/ (default: $PPDP_DATA or ../shared/data)")
    ap.add_argument("--out", type=Path, help="output folder (default benchmarks/results/vs_arx, or its quick/)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/ppdp-vs-arx"), help="samples, generated hierarchies, "
                    "compiled harness (default /tmp/ppdp-vs-arx)")
    ap.add_argument("--compare", type=Path, help="an earlier vs_arx.json: its ppdp time and equality columns")
    ap.add_argument("--label", help="a name for this run in the JSON")
    ap.add_argument("--only", action="append", help="run only these case keys (repeatable)")
    ap.add_argument("--family", help="comma-separated families: issue, small, models, issue40 (default all but "
                    "issue40)")
    ap.add_argument("--drawn", type=int, default=0, help="the drawn family: this many cases per seed")
    ap.add_argument("--seeds", default="1,2,3", help="seeds of the drawn family (default 1,2,3)")
    ap.add_argument("--no-arx", action="store_true", help="ppdp only")
    ap.add_argument("--optimizer", help="run only the cases ppdp runs with this optimizer (e.g. flash)")
    ap.add_argument("--objective", default="td",
                    choices=["td", "loss", "nu-entropy", "aecs", "discernibility", "precision", "height"],
                    help="what ppdp minimizes (default td, ARX then runs its Loss); an ARX metric: both minimize it")
    ap.add_argument("--arx-load", action="store_true", help="ARX reads its data and hierarchies from their files in "
                    "every round, timed apart (arx_load_ms, ratio_from_storage); ARX ms stays anonymize()")
    ap.add_argument("--jvm-option", action="append", default=[], help="an option of ARX's JVM (repeatable)")
    ap.add_argument("--arx-classpath", default="/tmp/arx-build/classpath.txt", help="file holding ARX's classpath")
    args = ap.parse_args(argv)
    global OBJECTIVE, ARX_LOAD
    OBJECTIVE = args.objective
    ARX_LOAD = args.arx_load
    reps = args.reps or (4 if args.quick else 6)
    if reps % 2:
        print(f"note: --reps {reps} is odd: {'ARX' if args.warmups % 2 == 0 else 'ppdp'} gets one round more right "
              "after its own run than the other side (run_case)", file=sys.stderr)
    args.out = args.out or REPO / "benchmarks" / "results" / "vs_arx" / ("quick" if args.quick else "")
    families = set(args.family.split(",")) if args.family else {"issue", "small", "models"}
    root = data_dir(args.data)
    cases = [c for c in CASES if (c.family in families or ("issue40" in families and c.key in ISSUE40_KEYS))
             and (not args.quick or c.quick) and (not args.only or c.key in args.only)]
    if args.drawn:
        drawn = [c for seed in map(int, args.seeds.split(",")) for c in drawn_cases(seed, args.drawn, root)
                 if not args.only or c.key in args.only]
        cases = drawn if not args.family else cases + drawn
    compare = json.loads(args.compare.read_text()) if args.compare else None
    cases = [c for c in cases if not args.optimizer or c.optimizer == args.optimizer]
    arx: Arx | None = None
    arx_note = "not run (--no-arx)"
    cp_file = Path(args.arx_classpath)
    if not args.no_arx:
        if cp_file.exists():
            arx = Arx(cp_file.read_text().strip(), args.work, tuple(args.jvm_option))
            arx_note = f"3.9.2 (java {arx.java})"
        else:
            arx_note = f"not run: {cp_file} missing (build ARX: docs/design/arx.md)"
    meta = {"mode": "quick" if args.quick else "full", "reps": reps, "warmups": args.warmups, "min_ms": args.min_ms,
            "max_reps": args.max_reps, "commit": git_commit(),
            "label": args.label, "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
                       f"numpy {np.__version__}",
            "load_average": [round(x, 2) for x in os.getloadavg()], "objective": OBJECTIVE, "data": str(root), "arx": arx_note,
            "jvm_options": list(args.jvm_option), "arx_load": args.arx_load,
            # as a release run sets it (engine/release/run.py): freed memory kept for the next call
            "heap_kept": keep_freed_memory()}
    loaded: dict[str, Loaded | None] = {}
    rows: list[dict[str, Any]] = []
    try:
        for case in cases:
            row: dict[str, Any] = {"key": case.key, "label": case.label, "family": case.family, "dataset": case.dataset,
                                   "optimizer": case.optimizer, "params": case.params,
                                   "models": [[n, p] for n, p in case.models], "arx_tokens": case.arx}
            try:
                if case.dataset not in loaded:
                    ds = dataset(root, case.dataset, args.work)
                    loaded[case.dataset] = None if ds is None else load(ds, ds.sa)
                ld = loaded[case.dataset]
                if ld is None:
                    row["skipped"] = f"no data under {root}"
                else:
                    ppdp_models(case, ld.ds)  # a model this ppdp lacks: one line, the row is skipped
                    row |= run_case(case, ld, arx, reps=reps, warmups=args.warmups, work=args.work,
                                    min_ms=args.min_ms, max_reps=args.max_reps)
            except Exception as exc:  # one case's failure should not cost the others' figures
                row["skipped"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
            rows.append(row)
            shown = row.get("skipped") or (f"ARX {fmt(row['arx_ms'])} ms, ppdp {row['ppdp_ms']:,.0f} ms "
                                           f"(prepare {row['ppdp_prepare_ms']:,.0f}), ratio {row['ratio']}, "
                                           f"{row['nodes_evaluated']} nodes, TD {row['td']:,.1f}"
                                           f"{', certified' if row['certified'] else ''}")
            print(f"{case.key:<28} {shown}", flush=True)
            write(args.out, meta, rows, compare)  # after every case: a long run cut short keeps what it has
    finally:
        if arx is not None:
            arx.close()
    print(f"wrote {args.out / 'vs_arx.json'} and {args.out / 'vs_arx.md'}")
    return 0


def distribution(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Median, 90th percentile and maximum of the ratios of the drawn cases timed with ARX, and
    how many chose a node at least as good as ARX's on ppdp's objective or certified optimal."""
    drawn = [r for r in rows if r.get("family") == "drawn" and r.get("ratio") is not None]
    if not drawn:
        return None
    ratios = sorted(r["ratio"] for r in drawn)
    from_memory = sorted(r["ratio_from_memory"] for r in drawn if r.get("ratio_from_memory") is not None)
    return {"cases": len(drawn), "median": round(statistics.median(ratios), 3),
            "p90": round(float(np.quantile(ratios, 0.9)), 3), "max": ratios[-1],
            "from_memory": None if not from_memory else {
                "median": round(statistics.median(from_memory), 3),
                "p90": round(float(np.quantile(from_memory, 0.9)), 3), "max": from_memory[-1]},
            "certified": sum(1 for r in drawn if r["certified"]),
            "as_good_as_arx": sum(1 for r in drawn if r.get("as_good_as_arx", r["certified"])),
            "skipped": sum(1 for r in rows if r.get("family") == "drawn" and "skipped" in r)}


def write(out: Path, meta: dict[str, Any], rows: list[dict[str, Any]], compare: dict[str, Any] | None) -> None:
    doc: dict[str, Any] = {"meta": meta, "rows": rows}
    if compare:
        doc["compare"] = {"meta": compare["meta"], "rows": compare["rows"]}
        doc["same_as_compare"] = {r["key"]: same(r, o) for r in rows
                                  for o in compare["rows"] if o["key"] == r["key"]}
    doc["distribution"] = distribution(rows)
    out.mkdir(parents=True, exist_ok=True)
    (out / "vs_arx.json").write_text(json.dumps(doc, indent=1) + "\n")
    (out / "vs_arx.md").write_text(markdown(doc, compare))


if __name__ == "__main__":
    sys.exit(main())
