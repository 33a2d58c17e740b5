"""Recount distinct patients per published class, outside ppdp: python recount.py [visits.duckdb].

Each published row is joined back to its source encounter through ppdp's private row ids
(_ppdp.row_ids: release, row_id, key), and the encounter's person_id is counted per class.
Prints a summary for each release that exists (encounters: spec.toml, with person;
encounters_rows: the same spec without person), then the classes of encounters.
"""

import sys
from pathlib import Path

import duckdb

PER_CLASS = """
SELECT '{name}' AS release, p.birth_year, p.gender, p.race, p.county,
       COUNT(DISTINCT e.person_id) AS persons, COUNT(*) AS rows
FROM published.{name} AS p
JOIN _ppdp.row_ids AS i ON i.row_id = p.ppdp_row_id AND i.release = '"published"."{name}"'
JOIN encounters AS e ON CAST(e.visit_id AS VARCHAR) = i.key
GROUP BY ALL
"""

SUMMARY = """
SELECT release, COUNT(*) AS classes, MIN(rows) AS min_rows, MIN(persons) AS min_persons,
       COUNT(*) FILTER (WHERE persons < 5) AS classes_under_5_persons,
       COALESCE(SUM(persons) FILTER (WHERE persons < 5), 0) AS persons_in_them,
       COUNT(*) FILTER (WHERE persons = 1) AS one_person_classes
FROM per_class GROUP BY release ORDER BY release
"""

db = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("visits.duckdb")
con = duckdb.connect(str(db), read_only=True)
names = [n for n in ("encounters", "encounters_rows")
         if con.execute("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = "
                        "'published' AND table_name = ?", [n]).fetchone()[0]]
con.execute("CREATE TEMP TABLE per_class AS " + " UNION ALL ".join(PER_CLASS.format(name=n) for n in names))
con.sql(SUMMARY).show()
con.sql("SELECT * EXCLUDE (release) FROM per_class WHERE release = 'encounters' ORDER BY ALL").show()
