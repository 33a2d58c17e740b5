"""Shared fixtures: a DuckDB file with adult loaded, and spec files written on the fly."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from tests.support import paths as PATHS

ADULT = PATHS.ADULT
ADULT_QIDS = ["age", "education", "marital-status", "native-country", "occupation", "race", "sex", "workclass"]
# Columns of main.adult as load_adult creates it: the id key, then adult.csv's header.
ADULT_COLUMNS = ["id", "sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation",
                 "salary-class"]


def toml_str(s: str) -> str:
    """A TOML basic string literal."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_spec(path: Path, *, db: Path, table: str = "adult", key: str = "id", qids: list[str] | None = None,
               hierarchies: dict[str, str] | None = None, sensitive: list[str] | None = None,
               models: str = '[[privacy.models]]\nname = "k-anonymity"\nk = 5\n', optimizer: str = "lattice",
               budget: int = 10000, output: str = "adult", extra_source: str = "", schema_line: str = "",
               keep: list[str] | None = None, drop: list[str] | None = None, kept_columns: str | None = "warn") -> Path:
    """Write a release spec for a table in ``db``; hierarchies default to adult's ARX files.

    Every source column needs a role: by default ``keep`` lists adult's columns that
    are not key, QID, sensitive or dropped. Pass ``keep=[]`` for a table with other columns.
    """
    qids = ADULT_QIDS if qids is None else qids
    sensitive = ["salary-class"] if sensitive is None else sensitive
    drop = drop or []
    if keep is None:
        keep = [c for c in ADULT_COLUMNS if c not in {key, *qids, *sensitive, *drop}]
    lines = ["[source]", f"database = {toml_str('duckdb://' + str(db))}", f"table = {toml_str(table)}", f"key = {toml_str(key)}"]
    for name, cols in (("keep", keep), ("drop", drop)):
        if cols:
            lines.append(f"{name} = [" + ", ".join(toml_str(c) for c in cols) + "]")
    if schema_line:
        lines.append(schema_line)
    if extra_source:
        lines.append(extra_source)
    for q in qids:
        h = (hierarchies or {}).get(q, str(ADULT / f"adult_hierarchy_{q}.csv"))
        hv = h if h.startswith(("{", '"')) else toml_str(h)
        lines += ["[[quasi_identifiers]]", f"column = {toml_str(q)}", f"hierarchy = {hv}"]
    lines += ["[sensitive]", "columns = [" + ", ".join(toml_str(s) for s in sensitive) + "]"]
    if keep and kept_columns is not None:
        # the default keeps every other adult column so that each has a role; tests about other
        # things publish with the kept-columns warning (None: the product's default, refuse)
        lines += ["[privacy]", f"kept_columns = {toml_str(kept_columns)}"]
    lines += [models.strip(),
              "[optimizer]", f"name = {toml_str(optimizer)}", f"budget = {budget}", "seed = 1",
              "[output]", 'schema = "published"', f"name = {toml_str(output)}"]
    path.write_text("\n".join(lines) + "\n")
    return path


def load_adult(db: Path, *, rows: int | None = None, table: str = "adult") -> Path:
    con = duckdb.connect(str(db))
    limit = f"LIMIT {rows}" if rows else ""
    con.execute(
        f'CREATE TABLE "{table}" AS SELECT CAST(row_number() OVER () AS BIGINT) AS id, * '
        f"FROM read_csv(?, delim = ';', header = true) {limit}", [str(ADULT / "adult.csv")]
    )
    con.close()
    return db


@pytest.fixture(scope="session")
def adult_db_template(tmp_path_factory) -> Path:
    return load_adult(tmp_path_factory.mktemp("adult") / "adult.duckdb")


@pytest.fixture
def adult_db(adult_db_template: Path, tmp_path: Path) -> Path:
    """A private copy of a DuckDB file holding main.adult (30,162 rows + id key)."""
    target = tmp_path / "adult.duckdb"
    target.write_bytes(adult_db_template.read_bytes())
    return target


def snapshot(db: Path) -> list[tuple]:
    """Every schema, relation and row count in a DuckDB file: 'nothing was written' means equal."""
    con = duckdb.connect(str(db))
    try:
        schemas = con.execute("SELECT schema_name FROM information_schema.schemata ORDER BY 1").fetchall()
        rels = con.execute("SELECT table_schema, table_name, table_type FROM information_schema.tables ORDER BY 1, 2").fetchall()
        counts = [(s, t, con.execute(f'SELECT COUNT(*) FROM "{s}"."{t.replace(chr(34), chr(34) * 2)}"').fetchone()[0]) for s, t, _ in rels]
        return [tuple(schemas), tuple(rels), tuple(counts)]
    finally:
        con.close()


from tests.support.compile_lock import *  # noqa: F401,F403,E402
from tests.support.conftest_pg import *  # noqa: F401,F403,E402
from tests.support.conftest_spark import *  # noqa: F401,F403,E402
from tests.support.conftest_xdist import *  # noqa: F401,F403,E402

pytest_plugins = ["tests.support.pg_cron_early"]  # its own hooks (a second collection hook beside conftest_xdist's)
