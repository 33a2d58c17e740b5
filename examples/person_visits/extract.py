"""Rebuild encounters.csv from the Synthea CSV export in UNMC-CRANE/database-stats-lecture.

Usage: python extract.py PATIENTS_CSV ENCOUNTERS_CSV  (the repository's csv/patients.csv and
csv/encounters.csv at commit ab7f172c35bd1afcf4dd948f4f007e916a942f2b). Writes encounters.csv
beside this file: one row per encounter, the patient's demographics joined in once, the names,
addresses, SSNs and exact dates left out.
"""

import sys
from pathlib import Path

import duckdb

patients, encounters = sys.argv[1], sys.argv[2]
out = Path(__file__).with_name("encounters.csv")
con = duckdb.connect()
con.execute(f"""
COPY (
  WITH p AS (
    SELECT Id, DENSE_RANK() OVER (ORDER BY Id) AS person_id,
           YEAR(CAST(BIRTHDATE AS DATE)) AS birth_year, GENDER AS gender, RACE AS race,
           replace(COUNTY, ' County', '') AS county
    FROM read_csv('{patients}', header = true, all_varchar = true))
  SELECT ROW_NUMBER() OVER (ORDER BY e.START, e.Id) AS visit_id, p.person_id, p.birth_year,
         p.gender, p.race, p.county, e.ENCOUNTERCLASS AS encounter_class,
         regexp_replace(e.DESCRIPTION, ' \\([a-z /]+\\)$', '') AS reason
  FROM read_csv('{encounters}', header = true, all_varchar = true) AS e
  JOIN p ON p.Id = e.PATIENT
  ORDER BY visit_id
) TO '{out}' (HEADER, DELIMITER ',')""")
print(con.execute(f"SELECT COUNT(*), COUNT(DISTINCT person_id) FROM '{out}'").fetchone())
