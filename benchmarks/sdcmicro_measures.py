"""sdcMicro's IL1s, eigenvalue loss and summary.micro deviations beside ppdp's, and the golden file CI checks.

sdcMicro's own tests assert no value of IL1s or eigen (tests/testthat/test_ai_utility.R line 60
asserts only that IL1 is 0 for unmodified data), so this script runs sdcMicro's own R code for
them: it takes ``dUtilityWORK`` (R/dUtility.R) and ``summary.micro`` (R/microaggregation.R) from
a checkout of sdcTools/sdcMicro and runs them with Rscript on two inputs, each an original matrix
``x`` and its microaggregated ``xm`` (``microaggregate``: records sorted by each variable in turn,
ties by record, groups of 3 consecutive records replaced by their mean; fixed and seed-free):

- ``adult``: the numeric columns age, fnlwgt, education-num and hours-per-week of the first
  ``ADULT_RECORDS`` records of UCI Adult (benchmarks/data/adult.data.gz, shipped with ppdp, CC BY
  4.0); summary.micro's robust PCA builds an n x n matrix, which all 32,561 records would make
  8.5 GB;
- ``sdcmicro-testdata``: the data sdcMicro's microaggregation test uses (data/testdata.RData;
  tests/testthat/test_microaggregation.R: numVars expend, income, savings; 4,580 records).
  sdcMicro is GPL-2 and ppdp Apache-2.0, so ppdp ships none of these values: R reads them from
  the checkout, and the golden file keeps only sdcMicro's outputs and the inputs' SHA-256.

Both matrices are built here in Python and handed to R as raw little-endian doubles (R's
``readBin``), so sdcMicro's code sees bit for bit the matrices ppdp's code sees, and their SHA-256
(``sha256``) identifies them. Every measure is compared with ppdp.engine.utility.sdc.

``--write-golden`` also writes tests/data/sdcmicro/expected.json: sdcMicro's values for both
inputs with their provenance (sdcMicro's commit and version, the R file, function and lines of
each measure, R's version, this command). tests/utility/test_sdc.py rebuilds the adult input
without R, checks its SHA-256 and compares ppdp's values with the file's (in CI, where there is
no R); the testdata case runs where the checkout and R are present.

    PYTHONPATH=src python benchmarks/sdcmicro_measures.py --sdcmicro /path/to/sdcMicro/gitdir [--write-golden]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from ppdp.engine.utility.sdc import summary_micro  # noqa: E402

MEASURES = ("il1s", "eigen", "amean", "amedian", "aonestep", "devvar", "amad", "acov", "acor", "acors", "adlm",
            "atotals", "pmtotals")
# summary.micro's names for ppdp's il1s and eigen
R_NAMES = {"il1s": "util1", "eigen": "deigenvalues"}
ADULT = ROOT / "benchmarks" / "data" / "adult.data.gz"
ADULT_COLUMNS = {"age": 0, "fnlwgt": 2, "education-num": 4, "hours-per-week": 12}  # name -> field of adult.data
TESTDATA_COLUMNS = ("expend", "income", "savings")
GOLDEN = ROOT / "tests" / "data" / "sdcmicro" / "expected.json"
GROUP = 3
ADULT_RECORDS = 3000


def adult_x() -> np.ndarray:
    """adult.data's numeric columns ``ADULT_COLUMNS`` of its first ``ADULT_RECORDS`` records (records x 4)."""
    with gzip.open(ADULT, "rt") as f:
        rows = [line.split(", ") for line in f.read().splitlines() if line.strip()][:ADULT_RECORDS]
    return np.array([[float(r[i]) for i in ADULT_COLUMNS.values()] for r in rows])


def microaggregate(x: np.ndarray, size: int = GROUP) -> np.ndarray:
    """Each column on its own: records ordered by value (ties by record), each run of ``size``
    consecutive records (the last may be shorter) replaced by its mean (correctly rounded sum)."""
    xm = np.array(x, dtype=float, copy=True)
    for j in range(x.shape[1]):
        order = np.argsort(x[:, j], kind="stable")
        for g in range(0, len(order), size):
            idx = order[g:g + size]
            xm[idx, j] = math.fsum(x[idx, j].tolist()) / len(idx)
    return xm


def sha256(a: np.ndarray) -> str:
    """SHA-256 of the matrix's shape and its values as little-endian doubles, column by column."""
    h = hashlib.sha256(f"{a.shape[0]}x{a.shape[1]}:".encode())
    h.update(np.asfortranarray(a, dtype="<f8").tobytes(order="F"))
    return h.hexdigest()


def _git_show(gitdir: str, path: str) -> bytes:
    return subprocess.run(["git", "--git-dir", gitdir, "show", f"HEAD:{path}"], check=True, capture_output=True).stdout


def _function(source: str, name: str) -> tuple[str, int, int]:
    """The R function ``name <- function(...) {...}`` from ``source``, up to its closing brace at
    column 0, and its first and last line (1-based)."""
    lines = source.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{name} <- function("))
    end = next(i for i in range(start + 1, len(lines)) if lines[i] == "}")
    return "\n".join(lines[start:end + 1]), start + 1, end + 1


def _line(source: str, pattern: str) -> int:
    return next(i + 1 for i, line in enumerate(source.splitlines()) if re.search(pattern, line))


def _write(a: np.ndarray, path: Path) -> None:
    path.write_bytes(np.asfortranarray(a, dtype="<f8").tobytes(order="F"))


def _rscript(script: str, work: Path) -> str:
    (work / "run.R").write_text(script)
    return subprocess.run(["Rscript", str(work / "run.R")], check=True, capture_output=True, text=True).stdout


def testdata_x(gitdir: str, work: Path) -> np.ndarray:
    """sdcMicro's testdata (expend, income, savings) read by R from the checkout's RData file."""
    (work / "testdata.RData").write_bytes(_git_show(gitdir, "data/testdata.RData"))
    out = _rscript(f"""
load("{work / 'testdata.RData'}")
x <- as.matrix(testdata[, c({", ".join(f'"{c}"' for c in TESTDATA_COLUMNS)})])
storage.mode(x) <- "double"
writeBin(as.vector(x), "{work / 'testdata.bin'}", size = 8, endian = "little")
cat(nrow(x), "\\n")
""", work)
    n = int(out.split()[0])
    values = np.frombuffer((work / "testdata.bin").read_bytes(), dtype="<f8")
    return values.reshape((n, len(TESTDATA_COLUMNS)), order="F").copy()


def sdcmicro_values(gitdir: str, work: Path, x: np.ndarray, xm: np.ndarray, columns: tuple[str, ...]) -> tuple[dict[str, float], str]:
    """sdcMicro's values (its R code run by Rscript) on ``x`` and ``xm``, and R's version string."""
    dutility, _, _ = _function(_git_show(gitdir, "R/dUtility.R").decode(), "dUtilityWORK")
    summary, _, _ = _function(_git_show(gitdir, "R/microaggregation.R").decode(), "summary.micro")
    _write(x, work / "x.bin")
    _write(xm, work / "xm.bin")
    n, p = x.shape
    names = ", ".join(f'"{c}"' for c in columns)
    out = _rscript(f"""
{dutility}
{summary}
dUtility <- function(x, xm, method = "IL1s") dUtilityWORK(x, xm, method)
dRisk <- function(...) NA  # risk measures: not compared here
dRiskRMD <- function(...) list(risk1 = NA, risk2 = NA, wrisk1 = NA, wrisk2 = NA)
rd <- function(f) {{
  d <- as.data.frame(matrix(readBin(f, what = "double", n = {n * p}, size = 8, endian = "little"), nrow = {n}, ncol = {p}))
  names(d) <- c({names})
  d
}}
x <- rd("{work / 'x.bin'}")
xm <- rd("{work / 'xm.bin'}")
s <- summary.micro(list(x = x, mx = xm, fot = 1))
keep <- c("amean", "amedian", "aonestep", "devvar", "amad", "acov", "acor", "acors", "adlm", "atotals", "pmtotals",
          "util1", "deigenvalues")
out <- sapply(keep, function(k) sprintf("%.17g", as.numeric(s[[k]])))
writeLines(paste0(keep, "=", out), "{work / 'values.txt'}")
cat(R.version.string, "\\n")
""", work)
    values = dict(line.split("=", 1) for line in (work / "values.txt").read_text().splitlines())
    return {m: float(values[R_NAMES.get(m, m)]) for m in MEASURES}, out.strip()


def inputs(gitdir: str, work: Path) -> dict[str, tuple[np.ndarray, np.ndarray, tuple[str, ...]]]:
    x = adult_x()
    t = testdata_x(gitdir, work)
    return {"adult": (x, microaggregate(x), tuple(ADULT_COLUMNS)),
            "sdcmicro-testdata": (t, microaggregate(t), TESTDATA_COLUMNS)}


def agree(golden: float, ours: float) -> bool:
    """Equal: to 1e-9 relative, or to 1e-12 absolute where the value is below 1e-9 (the totals'
    deviations of a microaggregation, which keeps totals, are 0 up to rounding)."""
    return abs(golden - ours) <= 1e-9 * abs(golden) or (abs(golden) < 1e-9 and abs(golden - ours) <= 1e-12)


def compare(gitdir: str) -> dict[str, dict]:
    """Per input: sdcMicro's values, ppdp's, their differences, the inputs' SHA-256 and R's version."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (x, xm, columns) in inputs(gitdir, Path(tmp)).items():
            r, r_version = sdcmicro_values(gitdir, Path(tmp), x, xm, columns)
            ours = summary_micro(x, xm, columns).to_json()
            rows = [{"measure": m, "sdcMicro": r[m], "ppdp": ours[m], "abs_diff": abs(r[m] - ours[m]),
                     "rel_diff": abs(r[m] - ours[m]) / max(abs(r[m]), 1e-300), "equal": agree(r[m], ours[m])}
                    for m in MEASURES]
            out[name] = {"columns": list(columns), "records": int(x.shape[0]), "sha256_x": sha256(x),
                         "sha256_xm": sha256(xm), "r_version": r_version, "rows": rows}
    return out


def provenance(gitdir: str) -> dict:
    """Where each value comes from in sdcMicro's code at the checkout's commit."""
    dutility = _git_show(gitdir, "R/dUtility.R").decode()
    micro = _git_show(gitdir, "R/microaggregation.R").decode()
    desc = _git_show(gitdir, "DESCRIPTION").decode()
    _, d0, d1 = _function(dutility, "dUtilityWORK")
    _, s0, s1 = _function(micro, "summary.micro")
    il1s, eig = _line(dutility, r'method == "IL1s"'), _line(dutility, r'method == "eigen"')
    where = {
        "il1s": f"R/dUtility.R dUtilityWORK, method \"IL1s\" (line {il1s}), called by summary.micro as util1 "
                f"(R/microaggregation.R line {_line(micro, r'^  util1 <- dUtility')})",
        "eigen": f"R/dUtility.R dUtilityWORK, method \"eigen\" (line {eig}), called by summary.micro as deigenvalues "
                 f"(R/microaggregation.R line {_line(micro, r'^  deigenvalues <- dUtility')})",
    }
    for m in MEASURES[2:]:
        where[m] = f"R/microaggregation.R summary.micro, {m} (line {_line(micro, rf'^  {m} <- ')})"
    commit = subprocess.run(["git", "--git-dir", gitdir, "rev-parse", "HEAD"], check=True, capture_output=True,
                            text=True).stdout.strip()
    return {"repository": "https://github.com/sdcTools/sdcMicro", "commit": commit,
            "version": re.search(r"^Version:\s*(\S+)", desc, re.M)[1], "license": re.search(r"^License:\s*(.+)$", desc, re.M)[1],
            "functions": {"dUtilityWORK": f"R/dUtility.R lines {d0}-{d1}", "summary.micro": f"R/microaggregation.R lines {s0}-{s1}"},
            "measures": where}


def golden(gitdir: str, results: dict[str, dict]) -> dict:
    r_version = next(iter(results.values()))["r_version"]
    return {
        "about": "sdcMicro's own values of IL1s, the eigenvalue loss and summary.micro's deviations, computed by "
                 "sdcMicro's R code (dUtilityWORK, summary.micro with fot = 1, taken verbatim from the checkout) on "
                 "the inputs below; tests/utility/test_sdc.py compares ppdp.engine.utility.sdc with them.",
        "command": "PYTHONPATH=src python benchmarks/sdcmicro_measures.py --sdcmicro <git dir of sdcTools/sdcMicro> "
                   "--write-golden",
        "r_version": r_version,
        "sdcmicro": provenance(gitdir),
        "inputs": {
            "adult": {"file": "benchmarks/data/adult.data.gz", "records": f"the first {ADULT_RECORDS}",
                      "columns": results["adult"]["columns"], "fields": list(ADULT_COLUMNS.values())},
            "sdcmicro-testdata": {"file": "data/testdata.RData of the sdcMicro checkout (GPL-2: not shipped)",
                                  "columns": results["sdcmicro-testdata"]["columns"]},
            "xm": f"benchmarks/sdcmicro_measures.py microaggregate: per column, records ordered by value (ties by "
                  f"record), groups of {GROUP} consecutive records replaced by their mean",
            "handed_to_r": "raw little-endian doubles, column-major (readBin); sha256 as benchmarks/sdcmicro_measures.py sha256",
        },
        "cases": {name: {"records": r["records"], "sha256_x": r["sha256_x"], "sha256_xm": r["sha256_xm"],
                         "values": {row["measure"]: row["sdcMicro"] for row in r["rows"]}}
                  for name, r in results.items()},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sdcmicro", required=True, help="git directory of a sdcTools/sdcMicro checkout")
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/utility/sdcmicro.json"))
    ap.add_argument("--write-golden", action="store_true", help=f"also write {GOLDEN.relative_to(ROOT)}")
    args = ap.parse_args()
    results = compare(args.sdcmicro)
    prov = provenance(args.sdcmicro)
    print(f"sdcMicro {prov['version']} at {prov['commit'][:12]}; {next(iter(results.values()))['r_version']}")
    bad = []
    for name, r in results.items():
        print(f"\n{name}: {', '.join(r['columns'])}; {r['records']:,} records; x sha256 {r['sha256_x'][:16]}…")
        print(f"{'measure':<10} {'sdcMicro':>24} {'ppdp':>24} {'rel. diff':>10}")
        for row in r["rows"]:
            print(f"{row['measure']:<10} {row['sdcMicro']:>24.17g} {row['ppdp']:>24.17g} {row['rel_diff']:>10.2e}")
        bad += [f"{name}:{row['measure']}" for row in r["rows"] if not row["equal"]]
        print(f"largest relative difference {max(row['rel_diff'] for row in r['rows'] if abs(row['sdcMicro']) >= 1e-9):.2e}; "
              f"largest absolute difference {max(row['abs_diff'] for row in r['rows']):.2e}")
    print("all equal" if not bad else f"different: {', '.join(bad)}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"sdcmicro": prov, "cases": results}, indent=2) + "\n")
    if args.write_golden:
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(json.dumps(golden(args.sdcmicro, results), indent=2) + "\n")
        print(f"wrote {GOLDEN.relative_to(ROOT)}")
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
