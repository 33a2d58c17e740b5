"""The statement builders moved out of engine/ (sql/files.py, sql/demo.py) run as DuckDB SQL."""

from __future__ import annotations

import duckdb
import pytest

from ppdp.sql.demo import load_csv_with_id
from ppdp.sql.files import file_query


def test_file_query_reads_a_path_with_a_quote(tmp_path):
    """The path is pasted as a string literal, so a quote in it must be escaped, not end it."""
    path = tmp_path / "it's here.csv"
    path.write_text("a,b\n1,x\n2,y\n")
    rows = duckdb.connect().execute(file_query("read_csv", str(path))).fetchall()
    assert rows == [(1, "x"), (2, "y")]


def test_file_query_takes_only_known_readers():
    with pytest.raises(ValueError, match="unknown file reader"):
        file_query("read_text", "/tmp/x.csv")


def test_demo_load_numbers_the_rows_from_one(tmp_path):
    csv = tmp_path / "people.csv"
    csv.write_text("age;sex\n39;Male\n50;Female\n38;Male\n")
    con = duckdb.connect()
    con.execute(load_csv_with_id("people"), [str(csv)])
    assert con.execute("SELECT id, age, sex FROM people ORDER BY id").fetchall() == [
        (1, 39, "Male"), (2, 50, "Female"), (3, 38, "Male")]
    assert con.execute("SELECT data_type FROM information_schema.columns WHERE column_name = 'id'").fetchone() == ("BIGINT",)
