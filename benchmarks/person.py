"""The person unit's cost: the same rows released with and without ``source.person``.

    python benchmarks/person.py                                   # 1M rows / 250k persons, DuckDB and Spark
    python benchmarks/person.py --rows 200000 --engine duckdb     # smaller, DuckDB only

The table: ``--persons`` persons (default rows / 4), person p a copy of adult's row
``hash(p, 42) % 30162`` (its 8 QIDs and salary-class, constant per person) with
``1 + hash(p, 7) % 7`` visit rows (4 on average), numbered by ``visit_id`` (the key); the rows
are cut at ``--rows``. Both runs release the very same rows with k = 5 on the 8 QIDs and the
lattice search: the row unit (``person_id`` dropped, rows counted) and the person unit
(``person = "person_id"``: the person-level relation searched, suppression by whole persons,
checks and risk per person). Runs are interleaved (row, person, row, person, ...) after one
small warm-up of each (Numba's compilation), each into its own output name, and timed whole
(``run_release``). Prints a table with the ratio person / row per engine (target <= 1.5) and
writes benchmarks/results/person.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
QIDS = ["age", "education", "marital-status", "native-country", "occupation", "race", "sex", "workclass"]
ADULT = ROOT / "src" / "ppdp" / "engine" / "data" / "adult"

SELECT = (
    "WITH base AS (SELECT row_number() OVER () - 1 AS rn, * FROM read_csv(?, delim = ';', header = true)), "
    "persons AS (SELECT CAST(p.range + 1 AS BIGINT) AS person_id, base.* EXCLUDE (rn), 1 + hash(p.range, 7) % 7 AS visits "
    "FROM range({persons}) AS p JOIN base ON base.rn = hash(p.range, 42) % 30162) "
    "SELECT CAST(row_number() OVER (ORDER BY person_id, v.range) AS BIGINT) AS visit_id, persons.* EXCLUDE (visits) "
    "FROM persons JOIN range(7) AS v ON v.range < persons.visits QUALIFY visit_id <= {rows}"
)


def generate(path: Path, rows: int, persons: int, *, parquet: bool = False) -> None:
    import duckdb

    con = duckdb.connect()
    select = SELECT.format(persons=int(persons), rows=int(rows))
    if parquet:
        path.mkdir(parents=True, exist_ok=True)
        con.execute(f"COPY ({select}) TO '{path / 'visits.parquet'}' (FORMAT parquet)", [str(ADULT / "adult.csv")])
    else:
        con.execute(f"ATTACH '{path}' AS t")
        con.execute(f"CREATE TABLE t.visits AS {select}", [str(ADULT / "adult.csv")])
    con.close()


def spec(url: str, schema: str | None, person: bool, output: str):
    from ppdp.engine.core.spec import spec_from_dict

    source = {"database": url, "table": "visits", "key": "visit_id", **({"schema": schema} if schema else {})}
    if person:
        source["person"] = "person_id"
    else:
        source["drop"] = ["person_id"]
    return spec_from_dict({
        "source": source,
        "quasi_identifiers": [{"column": q, "hierarchy": str(ADULT / f"adult_hierarchy_{q}.csv")} for q in QIDS],
        "sensitive": {"columns": ["salary-class"]},
        "privacy": {"models": [{"name": "k-anonymity", "k": 5}]},
        "output": {"name": output},
    })


def timed(url: str, schema: str | None, person: bool) -> dict:
    from ppdp.engine.release.run import run_release

    start = time.perf_counter()
    run = run_release(spec(url, schema, person, f"b_{'person' if person else 'row'}_{uuid.uuid4().hex[:6]}"),
                      progress=False).run
    seconds = time.perf_counter() - start
    return {"unit": "person" if person else "row", "seconds": round(seconds, 2), "levels": run.solution["levels"],
            "released": run.metrics["released_records"], "rows": run.verification["rows"],
            "smallest_class": run.verification["checks"][0]["ad"], "stage_seconds": run.metrics.get("stage_seconds")}


def bench(engine: str, rows: int, persons: int, repeats: int, work: Path) -> dict:
    if engine == "duckdb":
        db = work / "person.duckdb"
        generate(db, rows, persons)
        small = work / "small.duckdb"
        generate(small, 20_000, 5_000)
        url, small_url, schema = f"duckdb://{db}", f"duckdb://{small}", None
    else:
        from ppdp.connectors import connect

        url = f"spark://local[2]?warehouse={work / 'warehouse'}&catalog=in-memory"
        schema = "default"
        for name, n, p in (("visits", rows, persons), ("small", 20_000, 5_000)):
            generate(work / name, n, p, parquet=True)
        con = connect(url)
        con.execute(f"CREATE TABLE default.visits USING parquet AS SELECT * FROM parquet.`{work / 'visits' / 'visits.parquet'}`")
        con.execute("CREATE DATABASE IF NOT EXISTS small")
        con.execute(f"CREATE TABLE small.visits USING parquet AS SELECT * FROM parquet.`{work / 'small' / 'visits.parquet'}`")
        con.close()
        small_url = url
    for person in (False, True):  # warm-up: compilation and caches, not timed
        timed(small_url, "small" if engine == "spark" else None, person)
    runs = []
    for _ in range(repeats):
        for person in (False, True):
            runs.append(timed(url, schema, person))
            print(f"  {engine:6} {runs[-1]['unit']:6} {runs[-1]['seconds']:8.2f} s", flush=True)
    row = statistics.median(r["seconds"] for r in runs if r["unit"] == "row")
    per = statistics.median(r["seconds"] for r in runs if r["unit"] == "person")
    return {"engine": engine, "rows": rows, "persons": persons, "runs": runs, "row_seconds": row,
            "person_seconds": per, "ratio": round(per / row, 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--persons", type=int, help="default: rows / 4")
    ap.add_argument("--engine", choices=["duckdb", "spark", "both"], default="both")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "person.json"))
    args = ap.parse_args()
    persons = args.persons or args.rows // 4
    engines = ["duckdb", "spark"] if args.engine == "both" else [args.engine]
    results = []
    for engine in engines:
        with tempfile.TemporaryDirectory(prefix=f"ppdp-person-{engine}-") as work:
            results.append(bench(engine, args.rows, persons, args.repeats, Path(work)))
    print(f"\n{'engine':8} {'rows':>10} {'persons':>9} {'row unit s':>11} {'person unit s':>14} {'person/row':>11}")
    for r in results:
        print(f"{r['engine']:8} {r['rows']:>10,} {r['persons']:>9,} {r['row_seconds']:>11.2f} {r['person_seconds']:>14.2f} "
              f"{r['ratio']:>11.3f}")
    Path(args.out).write_text(json.dumps({"target_ratio": 1.5, "results": results}, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
