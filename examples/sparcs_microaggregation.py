"""SPARCS microaggregation across versions: a job on hospital discharges, v1, a batch of changes
made with plain SQL in the source table, v2, the analyst's query and the delta between versions.

    .venv/bin/python examples/sparcs_microaggregation.py

The data is a 3,000-row sample of the New York SPARCS 2015 inpatient discharges
(examples/data/sparcs/README.md). The diagnosis is the sensitive value; DRASL groups the patients
into groups of at least K = 8 over age group, gender, race, zip-3 and length of stay, publishing
each group's generalized labels. Runs on an embedded DuckDB file in a temporary folder that is
removed at the end.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import polars as pl

from ppdp.connectors import connect
from ppdp.engine.app.jobs import certificate, register_job, run_job

DATA = Path(__file__).resolve().parent / "data" / "sparcs"  # beside this file, in a checkout or a copy
JOB = "sparcs_micro"
K = 8

SPEC = """\
[source]
database = "{url}"
table = "discharges"
key = "id"
keep = ["admission"]

[[quasi_identifiers]]
column = "age_group"
hierarchy = "{h}/age_group.csv"
[[quasi_identifiers]]
column = "gender"
hierarchy = "{h}/gender.csv"
[[quasi_identifiers]]
column = "race"
hierarchy = "{h}/race.csv"
[[quasi_identifiers]]
column = "zip3"
hierarchy = "{h}/zip3.csv"
# an integer: a continuous QID, published as its group's range [lo, hi]; the hierarchy is only
# what the spec requires of every QID
[[quasi_identifiers]]
column = "length_of_stay"
hierarchy = {{ type = "intervals" }}

[sensitive]
columns = ["diagnosis"]

[privacy]
# admission (type of admission) singles out 271 of the 3,000 published rows beside the QIDs; the
# walkthrough treats it as unknown to the attacker and publishes with the run's warning. A real
# release would make it a quasi-identifier or drop it (the default, "refuse", insists).
kept_columns = "warn"

[[privacy.models]]
name = "k-anonymity"
k = {k}

[method]
name = "microaggregation"
params = {{ algorithm = "drasl", k = {k}, catalogue = "sparcs_ccs_by_mdc", kinds = {{ length_of_stay = "continuous" }} }}

# Between versions the history stage holds back whatever would let someone who keeps every
# version, and knows who was admitted, removed from the records or corrected, single a person out
# below K: a forged row or a corrected diagnosis alone in its group's history, a deletion that
# leaves a telltale gap. It may hold back at most this fraction of the source rows in one step,
# else the run is refused. The batch below holds back 60 rows of 3,168 (under 2 %); 0.1 leaves
# room for a larger batch (the default 0.05 would do for this one).
[dynamic]
max_repair_fraction = 0.1

[output]
schema = "published"
name = "{name}"
"""

# The batch of changes since v1, as the hospital's own system would make them.
CHANGES = [
    ("INSERT the 200 held-out discharges", "INSERT INTO discharges SELECT * FROM read_csv(?, header = true, columns = "
     "{'id': 'BIGINT', 'age_group': 'VARCHAR', 'gender': 'VARCHAR', 'race': 'VARCHAR', 'length_of_stay': 'BIGINT', "
     "'zip3': 'VARCHAR', 'admission': 'VARCHAR', 'diagnosis': 'VARCHAR'})", [str(DATA / "new_discharges.csv")]),
    ("DELETE ~1 % of the records", "DELETE FROM discharges WHERE id % 100 = 42", None),
    ("UPDATE the diagnosis of ~20 records", "UPDATE discharges SET diagnosis = 'Septicemia (except in labor)' "
     "WHERE id % 150 = 11 AND diagnosis <> 'Septicemia (except in labor)'", None),
    ("UPDATE the length of stay of ~20 records", "UPDATE discharges SET length_of_stay = length_of_stay + 2 WHERE id % 150 = 77", None),
]


def show(frame: pl.DataFrame, rows: int = 12) -> None:
    with pl.Config(tbl_rows=rows, tbl_width_chars=140, fmt_str_lengths=48, tbl_hide_dataframe_shape=True):
        print(frame)


def summary(url: str) -> dict:
    """The certificate's headline: version, rows, groups' smallest size, verification."""
    cert = certificate(url, JOB)
    model = cert["models"][0]
    print(f"   certificate: {cert['release']} v{cert['version']}, {cert['released_rows']:,} rows released "
          f"from {cert['source_rows']:,} source rows; {model['model']} k = {model['params'].get('k')}: "
          f"smallest published group {model['achieved']}, {'pass' if model['passed'] else 'FAIL'}")
    for name, found in cert["method_checks"].items():
        print(f"   method check: {name}: {'pass' if found.get('passed') else 'FAIL'} "
              f"({', '.join(f'{k} = {v}' for k, v in found.items() if k != 'passed')})")
    print(f"   verification passed: {cert['verification_passed']}")
    return cert


def main(workdir: Path | None = None) -> dict:
    """Run the walkthrough; returns what the test checks (runs, certificates, delta counts)."""
    tmp = Path(tempfile.mkdtemp(prefix="ppdp-sparcs-", dir=workdir))
    try:
        url = f"duckdb://{tmp / 'hospital.duckdb'}"
        con = connect(url)
        con.execute("CREATE TABLE discharges AS SELECT * FROM read_csv(?, header = true)", [str(DATA / "discharges.csv")])
        n = con.query("SELECT COUNT(*) AS n FROM discharges")["n"][0]
        con.close()
        print(f"1. loaded table discharges ({n:,} rows of SPARCS 2015) into {url}")

        spec = tmp / "sparcs_micro.toml"
        spec.write_text(SPEC.format(url=url, h=(DATA / "hierarchies").as_posix(), k=K, name=JOB))
        register_job(url, spec, name=JOB)
        print(f"   registered job {JOB!r}: DRASL microaggregation, K = {K}, QIDs age_group gender race zip3 "
              "length_of_stay, sensitive diagnosis, admission kept")

        v1 = run_job(url, JOB, progress=False).run
        print(f"\n2. v1: {v1.status}, {v1.metrics['groups']} groups, sizes {v1.metrics['group_size']}")
        cert1 = summary(url)

        print("\n3. a batch of changes in the source table, with SQL")
        con = connect(url)
        for what, sql, params in CHANGES:
            before = con.query("SELECT COUNT(*) AS n FROM discharges")["n"][0]
            con.execute(sql, params)
            after = con.query("SELECT COUNT(*) AS n FROM discharges")["n"][0]
            print(f"   {what}: rows {before:,} -> {after:,}")
        con.close()

        v2 = run_job(url, JOB, progress=False).run
        held = v2.cross_version["held_back"]
        print(f"\n4. v2: {v2.status}, version {v2.version}")
        up = v2.metrics["updates"]
        print(f"   changes the method found in the source: {up['inserted']} inserted, {up['deleted']} deleted, "
              f"{up['modified_qids']} with new QIDs, {up['modified_sensitive']} with a new diagnosis")
        print(f"   deferred by the method: {up['deferred']} (a deletion or a move out of a group of exactly K = {K} would "
              "dissolve it, so it waits and the row stays published as it was)")
        forged = next(c for c in v2.verification["method_checks"] if "forged_rows" in c)["forged_rows"]
        print(f"   forged records DRASL added to hide the changed diagnoses (Alg. 5): {v2.metrics['forged_records_grouped']}, "
              f"published in v2: {forged}")
        print(f"   held back by the history stage: {held['inserts_withheld']} insertions, {held['deletes_delayed']} "
              f"deletions, {held['changes_delayed']} changes (published in a later version, once they single nobody out)")
        cert2 = summary(url)

        con = connect(url)
        print("\n5. the analyst's query: patients and the share of septicemia per published age-group label")
        show(con.query(
            "SELECT age_group, COUNT(*) AS patients, "
            "ROUND(100.0 * AVG(CASE WHEN diagnosis = 'Septicemia (except in labor)' THEN 1 ELSE 0 END), 1) AS pct_septicemia, "
            "ROUND(100.0 * AVG(CASE WHEN admission = 'Emergency' THEN 1 ELSE 0 END), 1) AS pct_emergency "
            f"FROM published.{JOB} GROUP BY age_group ORDER BY patients DESC"))
        print(f"\n   the delta: published.{JOB}__delta, rows added (+) and removed (-) per version")
        delta = con.query(f"SELECT version, op, COUNT(*) AS rows FROM published.{JOB}__delta GROUP BY version, op ORDER BY version, op")
        show(delta)
        show(con.query(f"SELECT version, op, age_group, gender, race, zip3, length_of_stay, diagnosis "
                       f"FROM published.{JOB}__delta ORDER BY ppdp_row_id, op LIMIT 6"))
        con.close()
        return {"v1": v1, "v2": v2, "certificates": (cert1, cert2), "delta": delta}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        print(f"\n6. removed {tmp}")


if __name__ == "__main__":
    main()
