"""PostgreSQL walkthrough: a throwaway server, adult loaded, a job registered by SQL, run by
ppdp, and queried by an analyst who can read the published view and nothing else.

    .venv/bin/python examples/postgres_walkthrough.py

It needs ppdp importable (installed, or ``PYTHONPATH=src`` in a checkout) and nothing else of the
checkout: adult and its hierarchies are read from the installed package's data.
Needs PostgreSQL's server binaries (initdb, pg_ctl) on PATH or in /usr/lib/postgresql/*/bin;
as root, the server runs as an unprivileged user (see connectors/throwaway_postgres.py).
Everything is removed at the end.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl

import ppdp.engine
from ppdp.connectors import connect
from ppdp.connectors.base import ConnectorError
from ppdp.connectors.throwaway_postgres import PostgresServer

ADULT = Path(ppdp.engine.__file__).parent / "data" / "adult"  # the package's data, installed or not
PUBLISHED, SKIPPED = 0, 99  # exit codes (docs/reference/exit-codes.md): 99 is a rerun with nothing new


def ppdp(*args: str, expect: tuple[int, ...] = (PUBLISHED,)) -> None:
    print(f"\n$ ppdp {' '.join(args)}", flush=True)
    code = subprocess.run([sys.executable, "-m", "ppdp.engine.app.cli", *args]).returncode
    if code not in expect:
        raise SystemExit(f"ppdp {args[0]} exited {code}, expected {' or '.join(map(str, expect))}")


def main() -> None:
    with PostgresServer.start() as server:
        url = server.url
        print(f"1. throwaway PostgreSQL server at {url}")

        con = connect(url)
        adult = pl.read_csv(ADULT / "adult.csv", separator=";").with_row_index("id", offset=1)
        con.write_frame("public", "adult", adult.with_columns(pl.col("id").cast(pl.Int64)))
        con.execute("CREATE ROLE analyst LOGIN")
        print(f"2. loaded public.adult ({adult.height:,} rows) and created role analyst")
        con.close()

        ppdp("init", "--db", url)
        spec = {
            "source": {"schema": "public", "table": "adult", "key": "id"},
            "quasi_identifiers": [{"column": q, "hierarchy": {"type": "arx", "file": str(ADULT / f"adult_hierarchy_{q}.csv")}}
                                  for q in ("age", "education", "marital-status", "native-country", "occupation", "race", "sex", "workclass")],
            "sensitive": {"columns": ["salary-class"]},
            "privacy": {"models": [{"name": "k-anonymity", "k": 5}, {"name": "t-closeness", "t": 0.3}]},
            "access": {"roles": ["analyst"]},
            "output": {"schema": "published", "name": "adult"},
        }
        con = connect(url)
        con.execute("INSERT INTO _ppdp.jobs (name, spec) VALUES (?, ?)", ["adult_release", json.dumps(spec)])
        con.close()
        print("\n3. registered job 'adult_release' with: INSERT INTO _ppdp.jobs (name, spec) VALUES ('adult_release', '{...}')")

        ppdp("job", "run", "adult_release", "--db", url, "--no-progress")
        ppdp("job", "run", "adult_release", "--db", url, "--no-progress", expect=(SKIPPED,))  # unchanged: skipped
        ppdp("job", "certificate", "adult_release", "--db", url, "--format", "markdown")

        print("\n4. the analyst connects with their own role")
        analyst = connect(url.replace("postgres@", "analyst@"))
        print(analyst.query(
            "SELECT \"marital-status\", COUNT(*) AS people, ROUND(AVG(CASE WHEN \"salary-class\" = '>50K' THEN 1 ELSE 0 END) * 100, 1) AS pct_over_50k "
            "FROM published.adult GROUP BY \"marital-status\" ORDER BY people DESC LIMIT 5"))
        for sql in ("SELECT * FROM public.adult LIMIT 1", "SELECT * FROM _ppdp.runs LIMIT 1"):
            try:
                analyst.query(sql)
                print(f"   UNEXPECTED: {sql} succeeded")
            except ConnectorError as exc:
                print(f"   {sql}  ->  {str(exc).splitlines()[0][:110]}")
        analyst.close()
    print("\n5. server stopped and removed")


if __name__ == "__main__":
    main()
