"""Rebuild this folder's sample from the 8 SPARCS 2015 parts (see README.md for provenance).

    .venv/bin/python examples/data/sparcs/make_sample.py /path/to/shared/data/sparcs

A seeded sample over all 8 facilities (one per Health Service Area, so the zip-3 and age mix is
not one hospital's), only the columns the example uses, diagnoses outside the built-in
``sparcs_ccs_by_mdc`` catalogue dropped; 3,000 rows for the source table and 200 further rows
that the example inserts as the next batch of discharges. Also writes the ARX hierarchies.
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

import ppdp.engine

HERE = Path(__file__).resolve().parent
CATALOGUES = Path(ppdp.engine.__file__).parent / "data" / "catalogues"  # the package's data, installed or not
SAMPLE_ROWS, NEW_ROWS, SEED = 3000, 200, 2015
COLUMNS = {"Age Group": "age_group", "Gender": "gender", "Race": "race", "Length of Stay": "length_of_stay",
           "Zip Code - 3 digits": "zip3", "Type of Admission": "admission", "CCS Diagnosis Description": "diagnosis"}
AGE_BANDS = {"0 to 17": "0 to 29", "18 to 29": "0 to 29", "30 to 49": "30 to 69", "50 to 69": "30 to 69",
             "70 or Older": "70 or Older"}


def main(source: Path) -> None:
    parts = sorted(source.glob("part-*.csv"))
    raw = pl.concat([pl.read_csv(p, columns=list(COLUMNS), infer_schema=False) for p in parts]).rename(COLUMNS)
    catalogue = pl.read_csv(CATALOGUES / "sparcs_ccs_by_mdc.csv", separator=";",
                            has_header=False, new_columns=["diagnosis", "mdc", "root"])
    complete = raw.filter(pl.all_horizontal([pl.col(c).is_not_null() & (pl.col(c) != "") for c in COLUMNS.values()]))
    known = complete.filter(pl.col("diagnosis").is_in(catalogue["diagnosis"].to_list()))
    print(f"{raw.height:,} discharges in {len(parts)} files; dropped: {raw.height - complete.height:,} with an empty "
          f"column, {complete.height - known.height:,} whose diagnosis is not in the catalogue")
    # "120 +" is the file's top code for 120 days or more
    rows = (known.sample(SAMPLE_ROWS + NEW_ROWS, seed=SEED, shuffle=True)
            .with_columns(pl.col("length_of_stay").str.replace(r" \+$", "").cast(pl.Int64))
            .with_row_index("id", offset=1).with_columns(pl.col("id").cast(pl.Int64)))
    rows.head(SAMPLE_ROWS).write_csv(HERE / "discharges.csv")
    rows.tail(NEW_ROWS).write_csv(HERE / "new_discharges.csv")

    h = HERE / "hierarchies"
    h.mkdir(exist_ok=True)
    zips = sorted(set(known["zip3"].to_list()))
    # 3 digits -> first 2 digits -> first digit -> *; "OOS" (out of state) is its own branch
    (h / "zip3.csv").write_text("".join(
        f"{z};{z[:2]}*;{z[:1]}**;*\n" if z.isdigit() else f"{z};{z};{z};*\n" for z in zips))
    (h / "age_group.csv").write_text("".join(f"{a};{b};*\n" for a, b in AGE_BANDS.items()))
    (h / "gender.csv").write_text("".join(f"{g};*\n" for g in sorted(set(known["gender"].to_list()) | {"F", "M", "U"})))
    (h / "race.csv").write_text("".join(f"{r};*\n" for r in sorted(set(known["race"].to_list()))))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(f"usage: {sys.argv[0]} /path/to/sparcs (the folder of the 8 part-*.csv files)")
    main(Path(sys.argv[1]))
