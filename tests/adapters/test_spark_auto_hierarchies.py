"""``hierarchy = "auto"`` everywhere on Spark: the one-statement profile in Spark's SQL, every
builder (numeric, temporal, codes, priority), and ``ppdp suggest`` -> ``ppdp run`` as written."""

from __future__ import annotations

import json
import tomllib
import uuid
from pathlib import Path

import polars as pl
import pytest

from ppdp.connectors import connect
from ppdp.engine.app.cli import main
from tests.conftest import ADULT

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _adult(rows: int) -> pl.DataFrame:
    frame = pl.read_csv(ADULT / "adult.csv", separator=";").head(rows)
    n = frame.height
    return frame.with_columns(
        pl.int_range(1, n + 1, dtype=pl.Int64).alias("id"),
        (pl.date(2020, 1, 1) + pl.duration(days=(pl.int_range(0, n) * 37) % 700)).alias("admitted"),
        (pl.lit("1") + ((pl.int_range(0, n) * 7919) % 900 + 100).cast(pl.String)).alias("zip"),
    )


def test_suggest_and_auto_everywhere_on_spark(spark_url: str, tmp_path: Path, capsys) -> None:
    schema = f"auto_{uuid.uuid4().hex[:8]}"
    con = connect(spark_url)
    try:
        con.execute(f"CREATE SCHEMA `{schema}`")
        con.write_frame(schema, "adult", _adult(3000))
    finally:
        con.close()
    # every builder: numeric (age), temporal (admitted), codes (zip), priority (the rest)
    spec = tmp_path / "auto.toml"
    qids = ["age", "admitted", "zip", "sex", "race"]
    spec.write_text(
        f'[source]\ndatabase = "{spark_url}"\nschema = "{schema}"\ntable = "adult"\nkey = "id"\n'
        'drop = ["education", "marital-status", "native-country", "workclass", "occupation", "salary-class"]\n'
        + "".join(f'[[quasi_identifiers]]\ncolumn = "{q}"\nhierarchy = "auto"\n' for q in qids)
        + '[[privacy.models]]\nname = "k-anonymity"\nk = 3\n[optimizer]\nname = "lattice"\nbudget = 100000\n'
        f'[output]\nschema = "{schema}_pub"\nname = "auto"\n')
    code = main(["run", str(spec), "--no-progress", "--json"])
    out, err = capsys.readouterr()
    result = json.loads(out)
    assert code == 0 and result["status"] == "published" and result["verified"] is True, err
    con = connect(spark_url)
    try:
        solution = con.query("SELECT solution FROM `_ppdp`.`runs` WHERE status = 'succeeded' ORDER BY finished_at DESC LIMIT 1")
    finally:
        con.close()
    built = json.loads(solution["solution"][0])["hierarchies"]
    assert {q: built[q]["builder"] for q in qids} == {"age": "numeric", "admitted": "temporal", "zip": "codes",
                                                      "sex": "priority", "race": "priority"}
    # suggest on the same table, then run its spec as written
    written = tmp_path / "suggested.toml"
    code = main(["suggest", "--table", f"{schema}.adult", "--db", spark_url, "--out", str(written), "--no-preview"])
    out, err = capsys.readouterr()
    assert code == 0, err
    text = tomllib.loads(written.read_text())
    assert text["source"]["key"] == "id" and all(q["hierarchy"] == "auto" for q in text["quasi_identifiers"])
    code = main(["run", str(written), "--no-progress", "--json"])
    out, err = capsys.readouterr()
    result = json.loads(out)
    assert code == 0 and result["status"] == "published" and result["verified"] is True, err
