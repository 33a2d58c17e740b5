"""Load encounters.csv into a DuckDB file: python load.py [visits.duckdb]."""

import sys
from pathlib import Path

import duckdb

here = Path(__file__).parent
db = Path(sys.argv[1]) if len(sys.argv) > 1 else here / "visits.duckdb"
con = duckdb.connect(str(db))
con.execute("CREATE OR REPLACE TABLE encounters AS SELECT * FROM read_csv(?, header = true)",
            [str(here / "encounters.csv")])
print(con.execute("SELECT COUNT(*), COUNT(DISTINCT person_id) FROM encounters").fetchone())
con.close()
