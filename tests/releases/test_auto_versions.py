"""An ``auto`` hierarchy is stored with its version as a functional definition; the next version
keeps it even when the new data would choose another, unless the spec says ``rebuild = true``."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from ppdp.connectors import connect
from ppdp.engine.app import api
from ppdp.engine.core.builders import Definition
from ppdp.engine.core.builders.auto import choose
from ppdp.engine.core.builders.profile import profile_table
from ppdp.sql import profile as P


def _spec(path: Path, db: Path, rebuild: bool = False) -> Path:
    age = '{ type = "auto", rebuild = true }' if rebuild else '"auto"'
    path.write_text(f'[source]\ndatabase = "duckdb://{db}"\ntable = "adult"\nkey = "id"\n'
                    'drop = ["education", "marital-status", "native-country", "occupation", "race", "workclass", "salary-class"]\n'
                    f'[[quasi_identifiers]]\ncolumn = "age"\nhierarchy = {age}\n'
                    '[[quasi_identifiers]]\ncolumn = "sex"\nhierarchy = "auto"\n'
                    '[[privacy.models]]\nname = "k-anonymity"\nk = 5\n[dynamic]\nmax_repair_fraction = 1.0\n'
                    '[output]\nschema = "published"\nname = "adult"\n')
    return path


def _definitions(db: Path) -> list[dict]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT solution FROM _ppdp.runs WHERE status = 'succeeded' ORDER BY version").fetchall()
    finally:
        con.close()
    return [json.loads(r[0])["hierarchies"] for r in rows]


def _fresh_choice(db: Path) -> dict:
    """The definition a fresh choice on the table's data gives, as the run record stores it (JSON)."""
    con = connect(f"duckdb://{db}")
    try:
        p = profile_table(con, '"main"."adult"', {"age": "BIGINT"})["age"]
        frame = con.query(P.value_counts_query('"main"."adult"', "age", con.dialect))
    finally:
        con.close()
    d: Definition = choose(p, dict(zip(frame["v"].to_list(), frame["n"].to_list(), strict=True)))
    return json.loads(json.dumps(d.to_json()))


def test_next_version_keeps_the_published_definition(adult_db: Path, tmp_path: Path) -> None:
    spec = _spec(tmp_path / "s.toml", adult_db)
    first = api.run_release(spec)
    assert first.status == "published", first.error
    v1 = _definitions(adult_db)[0]
    # older people join: the 99 % quantile moves, so a fresh choice would cut differently
    con = duckdb.connect(str(adult_db))
    con.execute("INSERT INTO adult SELECT id + 100000, sex, age + 30, race, \"marital-status\", education, \"native-country\", "
                "workclass, occupation, \"salary-class\" FROM adult WHERE age >= 60")
    con.close()
    fresh = _fresh_choice(adult_db)
    assert fresh["builder"] == v1["age"]["builder"] == "numeric" and fresh != v1["age"]
    second = api.run_release(spec)
    assert second.status == "published", second.error
    v2 = _definitions(adult_db)[1]
    assert v2["age"] == v1["age"] and v2["sex"] == v1["sex"]
    # rebuild = true chooses again from the new data
    con = duckdb.connect(str(adult_db))
    con.execute("DELETE FROM adult WHERE id > 100000 AND age > 100")
    con.close()
    third = api.run_release(_spec(tmp_path / "r.toml", adult_db, rebuild=True))
    assert third.status == "published", third.error
    assert _definitions(adult_db)[2]["age"] == _fresh_choice(adult_db)


def test_double_columns_get_leaves_in_the_canonical_text(tmp_path: Path) -> None:
    """DuckDB writes an integral DOUBLE as '1.0'; leaves are the canonical text ('1') everywhere."""
    db = tmp_path / "d.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t AS SELECT CAST(i AS BIGINT) AS id, CAST(i % 40 AS DOUBLE) / 2 AS x, "
                "CAST(i % 3 AS DOUBLE) AS y FROM range(3000) AS t(i)")
    con.close()
    spec = tmp_path / "d.toml"
    spec.write_text(f'[source]\ndatabase = "duckdb://{db}"\ntable = "t"\nkey = "id"\n'
                    '[[quasi_identifiers]]\ncolumn = "x"\nhierarchy = "auto"\n'
                    '[[quasi_identifiers]]\ncolumn = "y"\nhierarchy = "auto"\n'
                    '[[privacy.models]]\nname = "k-anonymity"\nk = 5\n[output]\nschema = "published"\nname = "t"\n')
    result = api.run_release(spec)
    assert result.status == "published" and result.verified is True, result.error
    built = _definitions(db)[0]
    assert built["x"]["builder"] == "numeric" and built["y"]["builder"] == "priority"
