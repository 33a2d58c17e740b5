"""A catalog written by an older ppdp, whose stored Q keys its values in the old, non-injective
format (sql/history.py SA_KEY_FORMAT 1: '|' doubled, NULL as '\\N'): ``ppdp verify`` (read-only)
refuses it with a hint instead of matching no stored value; the next run, even one that publishes
nothing, rewrites the keys from the stored values; then the version verifies as before, and a
second version passes the check across versions against the rewritten Q. On DuckDB and PostgreSQL.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import duckdb
import polars as pl
import pytest

from ppdp.connectors import connect
from ppdp.engine.core import catalog
from ppdp.engine.core.spec import load_spec
from ppdp.engine.release.run import reverify, run_release
from ppdp.errors import SpecError
from ppdp.sql import catalog as C
from ppdp.sql.history import SA_KEY_FORMAT, tuple_key
from tests.conftest import ADULT
from tests.releases.test_distribution_models_release import K2, _model, _spec_text

ORDERED = _model('name = "t-closeness"\nt = 0.3\ndistance = "ordered"')


def _old_key(texts: list[str | None]) -> str:
    """The key of SA_KEY_FORMAT 1, as an older ppdp stored it."""
    return hashlib.md5("|".join("\\N" if t is None else t.replace("|", "||") for t in texts).encode()).hexdigest()


def _make_old(url: str, release: str) -> int:
    """Rewrite the stored Q's keys in the old format and drop the formats table, as an older ppdp
    left the catalog. Returns how many stored keys differ from the current format's."""
    con = connect(url)
    try:
        with con.transaction():
            stored = con.query("SELECT version, sa_value FROM _ppdp.distributions WHERE release = ?", [release])
            changed = 0
            for version, value in stored.iter_rows():
                old, new = _old_key(json.loads(value)), tuple_key(json.loads(value))
                changed += old != new
                con.execute("UPDATE _ppdp.distributions SET sa_key = ? WHERE release = ? AND version = ? AND sa_value = ?",
                            [old, release, version, value])
            con.execute(C.drop_private("formats", con.dialect))
    finally:
        con.close()
    return changed


def _stored_keys_current(url: str) -> bool:
    con = connect(url)
    try:
        stored = con.query("SELECT sa_key, sa_value FROM _ppdp.distributions")
        return stored.height > 0 and all(k == tuple_key(json.loads(v)) for k, v in stored.iter_rows()) \
            and catalog.sa_key_format(con) == SA_KEY_FORMAT
    finally:
        con.close()


def _verify(url: str, name: str) -> dict:
    con = connect(url, read_only=url.startswith("duckdb"))
    try:
        return reverify(con, name)
    finally:
        con.close()


# Two occupations renamed so that their keys change between the formats (a text without '|' and
# '~' has the same key in both, so for most data the upgrade rewrites nothing).
RENAME = ("UPDATE {t} SET occupation = CASE occupation WHEN 'Craft-repair' THEN 'Craft~repair' "
          "WHEN 'Sales' THEN '|Sales' ELSE occupation END")


def _upgrade_case(url: str, schema: str, tmp_path: Path, delete_some, name: str = "adult_upgrade") -> None:
    spec_path = _spec_text(tmp_path / "upgrade.toml", url, schema, "occupation", K2 + ORDERED, None, name)
    first = run_release(load_spec(spec_path), progress=False)
    assert first.run.status == "succeeded" and first.run.verification["passed"]
    assert _stored_keys_current(url)
    assert _make_old(url, first.run.release) == 2  # the two renamed occupations' keys
    assert not _stored_keys_current(url)

    with pytest.raises(SpecError, match="older format"):
        _verify(url, name)

    again = run_release(load_spec(spec_path), progress=False)  # nothing changed: skipped, the catalog upgraded
    assert again.run.status == "skipped"
    assert _stored_keys_current(url)
    checked = _verify(url, name)
    assert checked["passed"] and checked["version"] == 1
    assert [c["ad"] for c in checked["checks"]] == pytest.approx([c["ad"] for c in first.run.verification["checks"]], abs=1e-9)

    delete_some()
    second = run_release(load_spec(spec_path), progress=False)
    assert second.run.version == 2 and second.run.verification["passed"]
    assert second.run.verification["cross_version"]["failing_classes"] == {}


def test_an_old_catalog_is_refused_by_verify_and_upgraded_by_a_run_on_duckdb(adult_db, tmp_path) -> None:
    def delete_some() -> None:
        con = duckdb.connect(str(adult_db))
        con.execute("DELETE FROM adult WHERE id % 40 = 0")
        con.close()

    con = duckdb.connect(str(adult_db))
    con.execute(RENAME.format(t="adult"))
    con.close()
    _upgrade_case(f"duckdb://{adult_db}", "main", tmp_path, delete_some)


@pytest.mark.postgres
@pytest.mark.slow
def test_an_old_catalog_is_refused_by_verify_and_upgraded_by_a_run_on_postgres(postgres_database, tmp_path) -> None:
    adult_postgres = postgres_database
    frame = pl.read_csv(ADULT / "adult.csv", separator=";").with_row_index("id", offset=1).with_columns(pl.col("id").cast(pl.Int64))
    con = connect(adult_postgres)
    try:
        con.write_frame("public", "adult", frame)
    finally:
        con.close()

    def delete_some() -> None:
        con = connect(adult_postgres)
        try:
            con.execute("DELETE FROM public.adult WHERE id % 40 = 0")
        finally:
            con.close()

    con = connect(adult_postgres)
    try:
        con.execute(RENAME.format(t="public.adult"))
    finally:
        con.close()
    _upgrade_case(adult_postgres, "public", tmp_path, delete_some)


@pytest.mark.spark
def test_an_old_catalog_is_upgraded_on_spark(tmp_path, spark_url) -> None:
    """Spark has no transactions: the rewrite is its DELETE and INSERT, rewritten by sql/spark.py."""
    from tests.support.spark_source import adult_in_duckdb_and_spark

    _, schema, name = adult_in_duckdb_and_spark(tmp_path, spark_url, rows=1000)
    con = connect(spark_url)
    try:
        con.execute(RENAME.format(t=f"`{schema}`.adult"))
    finally:
        con.close()

    def delete_some() -> None:
        con = connect(spark_url)
        try:
            con.execute(f"DELETE FROM `{schema}`.adult WHERE id % 40 = 0")
        finally:
            con.close()

    _upgrade_case(spark_url, schema, tmp_path, delete_some, name)


def test_a_new_catalog_records_the_current_format(adult_db, tmp_path) -> None:
    url = f"duckdb://{adult_db}"
    spec_path = _spec_text(tmp_path / "k.toml", url, "main", "occupation", K2, None, "adult_k")
    assert run_release(load_spec(spec_path), progress=False).run.status == "succeeded"
    con = connect(url)
    try:
        assert catalog.sa_key_format(con) == SA_KEY_FORMAT
    finally:
        con.close()
