"""Build the SPARCS sensitive-value catalogue for DRASL: CCS diagnoses grouped by APR MDC.

The catalogue is an ARX CSV hierarchy ``diagnosis;category;*`` (engine/methods/microaggregation/
linkage.py): each ``CCS Diagnosis Description`` of the SPARCS 2015 files (the 8 facility files
under ``<data>/sparcs/``) is a value, its category an ``APR MDC Description`` (major diagnostic
category). A diagnosis can occur under several MDCs (97 of the 256 do in these files), so:

  Rule: a diagnosis goes to the MDC under which it occurs most often (discharge count over the
  8 files); a tie goes to the MDC with the smallest APR MDC Code (as a number).

Writes engine/data/catalogues/sparcs_ccs_by_mdc.csv and, next to it, sparcs_ccs_by_mdc.md with
the rule, the counts and every multi-category diagnosis with the share its MDC holds (ties
marked). Run: ``python benchmarks/catalogues.py [--data DIR]``.
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
from pathlib import Path

import polars as pl

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.instances import data_dir  # noqa: E402

OUT_DIR = REPO / "src" / "ppdp" / "engine" / "data" / "catalogues"
DIAG, MDC, MDC_CODE = "CCS Diagnosis Description", "APR MDC Description", "APR MDC Code"


def diagnosis_counts(root: Path) -> pl.DataFrame:
    """Discharges per (diagnosis, MDC code, MDC) over the SPARCS files under ``root/sparcs``."""
    files = sorted((root / "sparcs").glob("*.csv"))
    if not files:
        raise SystemExit(f"no SPARCS files under {root / 'sparcs'}. Hint: pass --data DIR holding sparcs/.")
    frame = pl.concat([pl.read_csv(f, infer_schema_length=0, columns=[DIAG, MDC_CODE, MDC]) for f in files])
    if frame.select(pl.any_horizontal(pl.all().is_null()).any()).item():
        raise SystemExit("SPARCS rows with a missing diagnosis or MDC. Hint: the files are not the expected ones.")
    return (frame.group_by(DIAG, MDC_CODE, MDC).len("n")
            .with_columns(pl.col(MDC_CODE).cast(pl.Int64)))


def assign(counts: pl.DataFrame) -> pl.DataFrame:
    """One row per diagnosis: its MDC by the rule (most frequent, tie -> smallest MDC code),
    with its count, the diagnosis total, how many MDCs it occurs under and whether it was a tie."""
    ranked = counts.sort([DIAG, "n", MDC_CODE], descending=[False, True, False])
    per_diag = ranked.group_by(DIAG, maintain_order=True).agg(
        pl.col(MDC).first(), pl.col(MDC_CODE).first(), pl.col("n").first().alias("n_chosen"),
        pl.col("n").sum().alias("n_total"), pl.len().alias("n_categories"),
        (pl.col("n") == pl.col("n").max()).sum().alias("n_at_max"),
    )
    return per_diag.with_columns((pl.col("n_at_max") > 1).alias("tie")).sort([MDC_CODE, DIAG])


def catalogue_csv(assigned: pl.DataFrame) -> str:
    """The ARX CSV text ``diagnosis;MDC;*`` (sorted by MDC code, then diagnosis)."""
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter=";", lineterminator="\n")
    for diag, mdc in assigned.select(DIAG, MDC).iter_rows():
        writer.writerow([diag, mdc, "*"])
    return buf.getvalue()


def catalogue_notes(assigned: pl.DataFrame, counts: pl.DataFrame) -> str:
    """The Markdown note shipped next to the CSV: source, rule, and the multi-category cases."""
    multi = assigned.filter(pl.col("n_categories") > 1).sort(DIAG)
    lines = [
        "# sparcs_ccs_by_mdc.csv: SPARCS diagnoses grouped by major diagnostic category",
        "",
        "Built by `benchmarks/catalogues.py` from the 8 SPARCS 2015 facility files of the project's shared data",
        "(`sparcs/`, New York State Department of Health, health.data.ny.gov, NY State Open Data terms; the",
        "files' README gives their provenance). Only the two label columns are used: `CCS Diagnosis",
        "Description` (AHRQ HCUP Clinical Classifications Software categories) and `APR MDC Description`;",
        "no record, count or other field of the data is in the CSV.",
        "",
        "Format: ARX CSV, `diagnosis;category;*`. For DRASL the catalogue category of a diagnosis is its",
        "ancestor at level 1, its MDC.",
        "",
        f"{assigned.height} diagnoses, {assigned[MDC].n_unique()} categories, {counts.height} (diagnosis, MDC) pairs in the data; "
        f"{multi.height} diagnoses occur under more than one MDC.",
        "",
        "**Rule.** A diagnosis goes to the MDC under which it occurs most often; a tie goes to the MDC",
        "with the smallest APR MDC Code. Ties in these files: "
        + (", ".join(f"{d!r} -> {m} (MDC {c})" for d, m, c in multi.filter(pl.col("tie")).select(DIAG, MDC, MDC_CODE).iter_rows())
           or "none") + ".",
        "",
        "| diagnosis | MDC chosen (code) | discharges there / all | MDCs | tie |",
        "|---|---|---|---|---|",
    ]
    for d, m, c, nc, nt, k, tie in multi.select(DIAG, MDC, MDC_CODE, "n_chosen", "n_total", "n_categories", "tie").iter_rows():
        lines.append(f"| {d} | {m} ({c}) | {nc} / {nt} | {k} | {'yes' if tie else ''} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", help="data directory holding sparcs/ (default: $PPDP_DATA or ../shared/data)")
    ap.add_argument("--out", type=Path, default=OUT_DIR, help="output directory (default: engine/data/catalogues)")
    args = ap.parse_args(argv)
    counts = diagnosis_counts(data_dir(args.data))
    assigned = assign(counts)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sparcs_ccs_by_mdc.csv").write_text(catalogue_csv(assigned), encoding="utf-8")
    (args.out / "sparcs_ccs_by_mdc.md").write_text(catalogue_notes(assigned, counts), encoding="utf-8")
    n_multi = assigned.filter(pl.col("n_categories") > 1).height
    n_tie = assigned.filter(pl.col("tie")).height
    print(f"{assigned.height} diagnoses in {assigned[MDC].n_unique()} categories; {n_multi} in more than one MDC, "
          f"{n_tie} ties; wrote {args.out / 'sparcs_ccs_by_mdc.csv'}")


if __name__ == "__main__":
    main()
