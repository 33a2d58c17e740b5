"""Whether two DuckDB files publish the same multiset of rows in a view (old against new code).

    .venv/bin/python benchmarks/compare_releases.py old/demo.duckdb new/demo.duckdb [--view published.adult]

The published row ids (``ppdp_row_id``) are random per release, so they are left out by default
(``--exclude``). Prints each side's row count, the number of distinct rows, and the rows whose multiplicity
differs (at most 10 shown); exits 1 when the multisets differ. Both files are opened read-only.
"""

from __future__ import annotations

import argparse
import sys

import duckdb


def quoted(name: str) -> str:
    """``name`` as a DuckDB identifier (embedded quotes doubled): the names come from the command line."""
    return '"' + name.replace('"', '""') + '"'


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--view", default="published.adult", help="schema.view to compare (default published.adult)")
    ap.add_argument("--exclude", action="append", default=None,
                    help="columns left out of the comparison (repeatable; default ppdp_row_id)")
    a = ap.parse_args()
    exclude = a.exclude if a.exclude is not None else ["ppdp_row_id"]
    con = duckdb.connect()
    con.execute("ATTACH ? AS old_db (READ_ONLY)", [a.old])
    con.execute("ATTACH ? AS new_db (READ_ONLY)", [a.new])
    schema, _, name = a.view.rpartition(".")
    rel = f"{quoted(schema or 'main')}.{quoted(name)}"
    skip = ", ".join(quoted(c) for c in exclude)
    cols = f"* EXCLUDE ({skip})" if exclude else "*"
    old_n = con.execute(f"SELECT count(*) FROM old_db.{rel}").fetchone()[0]
    new_n = con.execute(f"SELECT count(*) FROM new_db.{rel}").fetchone()[0]
    diff = con.execute(f"""
        WITH o AS (SELECT {cols}, count(*) AS n FROM old_db.{rel} GROUP BY ALL),
             w AS (SELECT {cols}, count(*) AS n FROM new_db.{rel} GROUP BY ALL),
             only_old AS (SELECT * FROM o EXCEPT SELECT * FROM w),
             only_new AS (SELECT * FROM w EXCEPT SELECT * FROM o)
        SELECT 'old' AS side, * FROM only_old UNION ALL SELECT 'new', * FROM only_new""").fetchall()
    distinct = con.execute(f"SELECT count(*) FROM (SELECT DISTINCT {cols} FROM old_db.{rel})").fetchone()[0]
    print(f"{a.view}: old {old_n:,} rows, new {new_n:,} rows, {distinct:,} distinct rows; "
          f"{len(diff)} (row, multiplicity) pairs differ")
    for row in diff[:10]:
        print("  ", row)
    return 1 if diff or old_n != new_n else 0


if __name__ == "__main__":
    sys.exit(main())
