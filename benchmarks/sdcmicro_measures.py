"""sdcMicro's IL1s, eigenvalue loss and summary.micro deviations beside ppdp's, on sdcMicro's test data.

sdcMicro's own tests assert no value of IL1s or eigen (tests/testthat/test_ai_utility.R line 60
asserts only that IL1 is 0 for unmodified data), so this script runs sdcMicro's own R code for
them: it takes ``dUtilityWORK`` (R/dUtility.R) and ``summary.micro`` (R/microaggregation.R) from
a checkout of sdcTools/sdcMicro, loads the data its microaggregation test uses
(data/testdata.RData; tests/testthat/test_microaggregation.R: numVars expend, income, savings),
microaggregates it in R (records sorted by each variable in turn, groups of 3 consecutive
records replaced by their mean: a fixed, seed-free perturbation) and compares every measure with
ppdp.engine.utility.sdc on the same two matrices. Needs R (Rscript) and the checkout (a git
directory, e.g. what the search tool's fetch of github:sdcTools/sdcMicro made).

    python benchmarks/sdcmicro_measures.py --sdcmicro /path/to/sdcMicro/repo
"""

from __future__ import annotations

import argparse
import json
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


def _git_show(gitdir: str, path: str) -> bytes:
    return subprocess.run(["git", "--git-dir", gitdir, "show", f"HEAD:{path}"], check=True, capture_output=True).stdout


def _function(source: str, name: str) -> str:
    """The R function ``name <- function(...) {...}`` from ``source``, up to its closing brace at
    column 0."""
    lines = source.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{name} <- function("))
    end = next(i for i in range(start + 1, len(lines)) if lines[i] == "}")
    return "\n".join(lines[start:end + 1])


def sdcmicro_values(gitdir: str, work: Path) -> tuple[dict[str, float], np.ndarray, np.ndarray]:
    """sdcMicro's values (its R code run by Rscript) and the two matrices they were computed on."""
    (work / "testdata.RData").write_bytes(_git_show(gitdir, "data/testdata.RData"))
    dutility = _function(_git_show(gitdir, "R/dUtility.R").decode(), "dUtilityWORK")
    summary = _function(_git_show(gitdir, "R/microaggregation.R").decode(), "summary.micro")
    script = f"""
{dutility}
{summary}
dUtility <- function(x, xm, method = "IL1s") dUtilityWORK(x, xm, method)
dRisk <- function(...) NA  # risk measures: not compared here
dRiskRMD <- function(...) list(risk1 = NA, risk2 = NA, wrisk1 = NA, wrisk2 = NA)
load("{work / 'testdata.RData'}")
x <- testdata[, c("expend", "income", "savings")]
xm <- x
for (v in names(x)) {{
  o <- order(x[[v]], seq_len(nrow(x)))
  g <- (seq_along(o) - 1) %/% 3
  xm[[v]][o] <- ave(x[[v]][o], g)
}}
s <- summary.micro(list(x = x, mx = xm, fot = 1))
write.csv(x, "{work / 'x.csv'}", row.names = FALSE)
write.csv(xm, "{work / 'xm.csv'}", row.names = FALSE)
keep <- c("amean", "amedian", "aonestep", "devvar", "amad", "acov", "acor", "acors", "adlm", "atotals", "pmtotals",
          "util1", "deigenvalues")
out <- sapply(keep, function(k) sprintf("%.17g", as.numeric(s[[k]])))
writeLines(paste0(keep, "=", out), "{work / 'values.txt'}")
"""
    (work / "run.R").write_text(script)
    subprocess.run(["Rscript", str(work / "run.R")], check=True, capture_output=True)
    values = dict(line.split("=", 1) for line in (work / "values.txt").read_text().splitlines())
    x = np.loadtxt(work / "x.csv", delimiter=",", skiprows=1)
    xm = np.loadtxt(work / "xm.csv", delimiter=",", skiprows=1)
    return {m: float(values[R_NAMES.get(m, m)]) for m in MEASURES}, x, xm


def compare(gitdir: str) -> list[dict[str, float | str]]:
    with tempfile.TemporaryDirectory() as tmp:
        r, x, xm = sdcmicro_values(gitdir, Path(tmp))
    ours = summary_micro(x, xm, ("expend", "income", "savings")).to_json()
    return [{"measure": m, "sdcMicro": r[m], "ppdp": ours[m], "abs_diff": abs(r[m] - ours[m]),
             "rel_diff": abs(r[m] - ours[m]) / max(abs(r[m]), 1e-300)} for m in MEASURES]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sdcmicro", required=True, help="git directory of a sdcTools/sdcMicro checkout")
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/utility/sdcmicro.json"))
    args = ap.parse_args()
    rows = compare(args.sdcmicro)
    commit = subprocess.run(["git", "--git-dir", args.sdcmicro, "rev-parse", "HEAD"], check=True, capture_output=True,
                            text=True).stdout.strip()
    print(f"sdcMicro {commit[:12]} (data/testdata.RData: expend, income, savings; 4,580 records)")
    print(f"{'measure':<10} {'sdcMicro':>24} {'ppdp':>24} {'rel. diff':>10}")
    for row in rows:
        print(f"{row['measure']:<10} {row['sdcMicro']:>24.17g} {row['ppdp']:>24.17g} {row['rel_diff']:>10.2e}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"sdcmicro_commit": commit, "data": "data/testdata.RData",
                                          "columns": ["expend", "income", "savings"], "rows": rows}, indent=2) + "\n")
    # equal: to 1e-9 relative, or to 1e-12 absolute where sdcMicro's value is 0
    bad = [r["measure"] for r in rows if not (float(r["rel_diff"]) <= 1e-9 or float(r["abs_diff"]) <= 1e-12)]
    print(f"largest relative difference {max(float(r['rel_diff']) for r in rows if r['sdcMicro'] != 0):.2e}; "
          f"largest absolute difference {max(float(r['abs_diff']) for r in rows):.2e}; "
          + ("all equal" if not bad else f"different: {', '.join(map(str, bad))}"))
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
