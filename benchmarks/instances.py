"""Benchmark instances modelled on the experiments of the ID-DGA and HAEF papers.

Both papers draw small test instances from the SPARCS 2015 hospital discharges; neither
publishes its rows, QIDs or hierarchies, so the instances here are rebuilt from the real data
shipped in the data directory (``--data`` / ``PPDP_DATA``, default ``../shared/data`` relative
to the repository), with every choice fixed below and the sampled row numbers written to the
JSON results.

ID-DGA family, T1-T16 (ID-DGA §5.1, Table 1: nQID 8/10/12/14, nR 200/400, k = 2, two instances
per (nQID, nR), budget nQID * nR evaluations):
  dataset   arx/genetic-benchmark/mach2019_int.csv (73,489 records, 16 attributes, integer
            recoded, with ARX hierarchies for every attribute; nA = 16). SPARCS has no
            hierarchies and too few attributes with a natural hierarchy for 14 QIDs; mach2019 is
            the genetic-benchmark dataset whose full 14-QID lattice (9.4 M nodes) still fits
            Flash's tag array (creditcard_int's is 94 M).
  QIDs      the first nQID of: age, gender, married, race, religion, familysize, Q1A ... Q8A.
  SA        none (k-anonymity).
  rows      nR records drawn uniformly without replacement, instance i (1-based) from
            ``np.random.default_rng([seed, 1, i])``; T(2j-1) and T(2j) share (nQID, nR) and
            differ in the sample.
HAEF family, D1-D16 (HAEF §5.1, Table 1, Fig. 5: four datasets of four cases; nQID 6/10
(dataset 3: 5/9), nR 300/600, one binary SA from balanced to extremely imbalanced; t in
{0.1, 0.2, 0.3}; budget 10 * nQID * nR):
  dataset   sparcs/*.csv, the 8 facility files concatenated in file-name order (63,733 rows).
            The paper's four SA (high risk, mental disorder, HIV, lung cancer) become:
              dataset 1 (D1-D4)   high_risk   = APR Risk of Mortality in {Major, Extreme}, 25 %
              dataset 2 (D5-D8)   mental      = APR MDC Code in {19, 20}, 10 %
              dataset 3 (D9-D12)  emergency   = Emergency Department Indicator = Y, 50 %
              dataset 4 (D13-D16) hiv_lung    = APR MDC Code 25 (HIV) or CCS Diagnosis 19
                                                (cancer of bronchus; lung), 3 %
            with the share of positive records fixed by stratified sampling (the percentages).
  QIDs      the first nQID of: Age Group, Gender, Race, Ethnicity, Zip Code - 3 digits,
            Length of Stay, Type of Admission, Payment Typology 1, Patient Disposition,
            APR Severity of Illness Code. Hierarchies from engine/core/hierarchy.py generators over
            the values of all 63,733 rows: Age Group recoded to its lower bound (0, 18, 30, 50,
            70) with intervals [30, 60]; Zip-3 masking (3 levels; empty recoded to UNK); Length
            of Stay ("120 +" recoded to 120) intervals [10, 20, 40]; Severity intervals [2];
            the others flat.
  rows      round(share * nR) positives and the rest negatives, each drawn uniformly without
            replacement, case i (1-based) from ``np.random.default_rng([seed, 2, i])``.
The default seed is 2024 (``--seed``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np
import polars as pl

from ppdp.engine.core.encoding import COUNT_COLUMN, EncodedTable, encode_histogram
from ppdp.engine.core.hierarchy import Hierarchy, flat, from_rows, intervals, masking, read_arx_csv
from ppdp.engine.methods.generalization.problem import Problem
from ppdp.engine.privacy import build_model

DEFAULT_SEED = 2024
REPO = Path(__file__).resolve().parents[1]

MACH_FILE = "arx/genetic-benchmark/mach2019_int.csv"
MACH_QIDS = ["age", "gender", "married", "race", "religion", "familysize",
             "Q1A", "Q2A", "Q3A", "Q4A", "Q5A", "Q6A", "Q7A", "Q8A"]
IDDGA_SHAPES = [(8, 200), (8, 200), (8, 400), (8, 400), (10, 200), (10, 200), (10, 400), (10, 400),
                (12, 200), (12, 200), (12, 400), (12, 400), (14, 200), (14, 200), (14, 400), (14, 400)]

SPARCS_QIDS = ["Age Group", "Gender", "Race", "Ethnicity", "Zip Code - 3 digits", "Length of Stay",
               "Type of Admission", "Payment Typology 1", "Patient Disposition", "APR Severity of Illness Code"]
# (SA name, description, positive-row predicate, positive share, (small nQID, large nQID))
HAEF_DATASETS = [
    ("high_risk", "APR Risk of Mortality in {Major, Extreme}",
     pl.col("APR Risk of Mortality").is_in(["Major", "Extreme"]), 0.25, (6, 10)),
    ("mental", "APR MDC Code in {19, 20} (mental diseases; alcohol/drug use)",
     pl.col("APR MDC Code").is_in(["19", "20"]), 0.10, (6, 10)),
    ("emergency", "Emergency Department Indicator = Y",
     pl.col("Emergency Department Indicator") == "Y", 0.50, (5, 9)),
    ("hiv_lung", "APR MDC Code 25 (HIV) or CCS Diagnosis Code 19 (cancer of bronchus; lung)",
     (pl.col("APR MDC Code") == "25") | (pl.col("CCS Diagnosis Code") == "19"), 0.03, (6, 10)),
]
T_VALUES = (0.1, 0.2, 0.3)


def data_dir(arg: str | None = None) -> Path:
    """``--data``, else ``PPDP_DATA``, else ../shared/data next to the repository."""
    return Path(arg or os.environ.get("PPDP_DATA") or (REPO / ".." / "shared" / "data")).resolve()


@dataclass(eq=False)
class Instance:
    """One test instance: the encoded sample, how it was drawn, and its paper settings."""

    name: str  # T1..T16 / D1..D16
    family: str  # "id-dga" / "haef"
    dataset: str
    qids: list[str]
    sensitive: list[str]
    n_attributes: int  # nA of ID-DGA Table 1
    rows: np.ndarray  # 0-based row numbers in the dataset (file order) of the sample
    table: EncodedTable
    k: int | None = None
    sa_description: str = ""
    positive_share: float | None = None  # share of records with SA = 1 (HAEF Fig. 5)
    t_values: tuple[float, ...] = ()
    extra: dict = field(default_factory=dict)

    @property
    def n_qids(self) -> int:
        return len(self.qids)

    @property
    def n_records(self) -> int:
        return self.table.n_records

    @property
    def budget(self) -> int:
        """ID-DGA §5.2: nQID * nR; HAEF §6.1.1: 10 * nQID * nR."""
        base = self.n_qids * self.n_records
        return base if self.family == "id-dga" else 10 * base

    def problem(self, t: float | None = None) -> Problem:
        if self.k is not None:  # ID-DGA's family and the 14-QID SPARCS instances
            return Problem(self.table, [build_model("k-anonymity", {"k": self.k})])
        return Problem(self.table, [build_model("t-closeness", {"t": float(t)})])

    def describe(self) -> dict:
        d = {"name": self.name, "family": self.family, "dataset": self.dataset, "qids": self.qids,
             "sensitive": self.sensitive, "nA": self.n_attributes, "nQID": self.n_qids, "nR": self.n_records,
             "budget": self.budget, "lattice_size": int(np.prod(self.table.heights + 1)),
             "heights": self.table.heights.tolist(), "rows": self.rows.tolist()}
        if self.k is not None:
            d["k"] = self.k
        if self.sensitive:
            d.update(sa=self.sa_description, positive_share=self.positive_share, t_values=list(self.t_values))
        return d


def _histogram(frame: pl.DataFrame, cols: list[str]) -> pl.DataFrame:
    return frame.group_by(cols).agg(pl.len().cast(pl.Int64).alias(COUNT_COLUMN))


# -- ID-DGA family ---------------------------------------------------------------------------


@cache
def _mach(root: str) -> tuple[pl.DataFrame, dict[str, Hierarchy]]:
    path = Path(root) / MACH_FILE
    frame = pl.read_csv(path, separator=";", infer_schema_length=0)
    hs = {q: read_arx_csv(path.parent / f"mach2019_int_hierarchy_{q}.csv", q) for q in MACH_QIDS}
    return frame, hs


def iddga_instances(root: Path, seed: int = DEFAULT_SEED) -> list[Instance]:
    frame, hs = _mach(str(root))
    out = []
    for i, (nq, nr) in enumerate(IDDGA_SHAPES, start=1):
        rng = np.random.default_rng([seed, 1, i])
        rows = np.sort(rng.choice(frame.height, size=nr, replace=False))
        qids = MACH_QIDS[:nq]
        sample = frame[rows.tolist()]
        table = encode_histogram(_histogram(sample, qids), qids, [], [hs[q] for q in qids])
        out.append(Instance(f"T{i}", "id-dga", "arx/genetic-benchmark/mach2019_int", qids, [], frame.width,
                            rows, table, k=2))
    return out


# -- HAEF family -----------------------------------------------------------------------------


@cache
def _sparcs(root: str) -> tuple[pl.DataFrame, dict[str, Hierarchy]]:
    files = sorted((Path(root) / "sparcs").glob("*.csv"))
    if not files:
        raise FileNotFoundError(f"no SPARCS files under {Path(root) / 'sparcs'}")
    frame = pl.concat([pl.read_csv(f, infer_schema_length=0) for f in files], how="vertical")
    age_lower = {"0 to 17": "0", "18 to 29": "18", "30 to 49": "30", "50 to 69": "50", "70 or Older": "70"}
    frame = frame.with_columns(
        pl.col("Age Group").replace_strict(age_lower),
        pl.col("Length of Stay").str.replace(r"\s*\+$", ""),
        pl.when(pl.col("Zip Code - 3 digits").fill_null("") == "").then(pl.lit("UNK"))
        .otherwise(pl.col("Zip Code - 3 digits")).alias("Zip Code - 3 digits"),
    )
    dom = {q: frame[q].unique().to_list() for q in SPARCS_QIDS}
    hs = {
        "Age Group": intervals("Age Group", dom["Age Group"], widths=[30, 60]),
        "Gender": flat("Gender", dom["Gender"]),
        "Race": flat("Race", dom["Race"]),
        "Ethnicity": flat("Ethnicity", dom["Ethnicity"]),
        "Zip Code - 3 digits": masking("Zip Code - 3 digits", dom["Zip Code - 3 digits"]),
        "Length of Stay": intervals("Length of Stay", dom["Length of Stay"], widths=[10, 20, 40]),
        "Type of Admission": flat("Type of Admission", dom["Type of Admission"]),
        "Payment Typology 1": flat("Payment Typology 1", dom["Payment Typology 1"]),
        "Patient Disposition": flat("Patient Disposition", dom["Patient Disposition"]),
        "APR Severity of Illness Code": intervals("APR Severity of Illness Code", dom["APR Severity of Illness Code"],
                                                  widths=[2]),
    }
    return frame, hs


def haef_instances(root: Path, seed: int = DEFAULT_SEED) -> list[Instance]:
    frame, hs = _sparcs(str(root))
    out = []
    i = 0
    for sa, desc, pred, share, (nq_small, nq_large) in HAEF_DATASETS:
        flag = frame.select(pred.fill_null(False)).to_series().to_numpy()
        pos_pool, neg_pool = np.flatnonzero(flag), np.flatnonzero(~flag)
        for nq, nr in ((nq_small, 300), (nq_small, 600), (nq_large, 300), (nq_large, 600)):
            i += 1
            rng = np.random.default_rng([seed, 2, i])
            n_pos = int(round(share * nr))
            rows = np.sort(np.concatenate([rng.choice(pos_pool, size=n_pos, replace=False),
                                           rng.choice(neg_pool, size=nr - n_pos, replace=False)]))
            qids = SPARCS_QIDS[:nq]
            sample = frame[rows.tolist()].with_columns(
                pl.Series(sa, np.where(flag[rows], "1", "0")))
            table = encode_histogram(_histogram(sample, qids + [sa]), qids, [sa], [hs[q] for q in qids])
            out.append(Instance(f"D{i}", "haef", "sparcs (8 facility files, 2015)", qids, [sa], frame.width,
                                rows, table, sa_description=desc, positive_share=n_pos / nr, t_values=T_VALUES))
    return out


# -- a 14-QID SPARCS instance (issue #18: certify a 14-QID lattice built from SPARCS) ---------

SPARCS14_EXTRA = ["APR Risk of Mortality", "APR Medical Surgical Description", "Emergency Department Indicator",
                  "Payment Typology 2"]
SPARCS14_SHAPES = [(14, 200), (14, 400)]  # nQID, nR, as T13/T15 of the ID-DGA family


@cache
def sparcs14_data(root: str) -> tuple[pl.DataFrame, dict[str, Hierarchy], list[str]]:
    """Every SPARCS record (the 8 facility files), the hierarchies and the 14 QIDs of the sparcs14
    instances (``sparcs14_instances``; benchmarks/islands.py ``--heavy`` uses all the records)."""
    frame, hs = _sparcs(root)
    frame = frame.with_columns(pl.when(pl.col("Payment Typology 2").fill_null("") == "").then(pl.lit("None"))
                               .otherwise(pl.col("Payment Typology 2")).alias("Payment Typology 2"))
    risk = {"Minor": "Minor-Moderate", "Moderate": "Minor-Moderate", "Major": "Major-Extreme",
            "Extreme": "Major-Extreme"}
    hs = {**hs,
          "APR Risk of Mortality": from_rows("APR Risk of Mortality", [[v, g, "*"] for v, g in risk.items()],
                                             source="generated: risk groups"),
          **{q: flat(q, frame[q].unique().to_list()) for q in SPARCS14_EXTRA[1:]}}
    return frame, hs, SPARCS_QIDS + SPARCS14_EXTRA


def sparcs14_instances(root: Path, seed: int = DEFAULT_SEED) -> list[Instance]:
    """S1, S2: the 10 HAEF QIDs + 4 more SPARCS attributes, k-anonymity k = 2 (ID-DGA's setting).

    The extra QIDs: APR Risk of Mortality (Minor/Moderate vs Major/Extreme, then *), APR Medical
    Surgical Description, Emergency Department Indicator and Payment Typology 2 (empty recoded to
    None), the last three flat. nR records drawn uniformly without replacement, instance i from
    ``np.random.default_rng([seed, 3, i])``. 14 QIDs with the HAEF hierarchies: 368,640 nodes (the flat ones have height 1).
    """
    frame, hs, qids = sparcs14_data(str(root))
    out = []
    for i, (nq, nr) in enumerate(SPARCS14_SHAPES, start=1):
        rng = np.random.default_rng([seed, 3, i])
        rows = np.sort(rng.choice(frame.height, size=nr, replace=False))
        sample = frame[rows.tolist()]
        table = encode_histogram(_histogram(sample, qids[:nq]), qids[:nq], [], [hs[q] for q in qids[:nq]])
        out.append(Instance(f"S{i}", "sparcs14", "sparcs (8 facility files, 2015)", qids[:nq], [], frame.width,
                            rows, table, k=2))
    return out


class DataMissing(SystemExit):
    """The benchmark data are not where the command looked (a clear message, no traceback)."""


def _require(root: Path, relative: str) -> None:
    if not (Path(root) / relative).exists():
        raise DataMissing(f"benchmark data not found: {Path(root) / relative} does not exist. Hint: pass --data DIR "
                          f"or set PPDP_DATA to the folder holding arx/ and sparcs/ (this project's shared data; "
                          f"docs/design/scale.md, 'Data for benchmarks').")


def build(family: str, root: Path, seed: int = DEFAULT_SEED) -> list[Instance]:
    """The instances of ``family`` ('id-dga': T1-T16, 'haef': D1-D16, 'sparcs14': S1-S2) drawn from the
    data under ``root``."""
    _require(root, MACH_FILE if family == "id-dga" else "sparcs")
    if family == "id-dga":
        return iddga_instances(root, seed)
    if family == "haef":
        return haef_instances(root, seed)
    if family == "sparcs14":
        return sparcs14_instances(root, seed)
    raise ValueError(f"unknown family {family!r}: 'id-dga', 'haef' or 'sparcs14'")


if __name__ == "__main__":  # print the instance tables (ID-DGA Table 1, HAEF Table 1)
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", help="data directory (default: $PPDP_DATA or ../shared/data)")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    a = ap.parse_args()
    root = data_dir(a.data)
    for fam in ("id-dga", "haef"):
        for inst in build(fam, root, a.seed):
            d = inst.describe()
            print(f"{d['name']:>4} nA={d['nA']} nQID={d['nQID']:>2} nR={d['nR']} lattice={d['lattice_size']:>9,} "
                  f"budget={d['budget']:>6} rows(distinct)={inst.table.n_rows}"
                  + (f" SA={d['sensitive'][0]} share={d['positive_share']:.2f}" if inst.sensitive else ""))
