"""Release names longer than the database's identifier limit are refused up front."""

from __future__ import annotations

import pytest

from ppdp.connectors import connect
from ppdp.engine.release.stages.validate import check_release_identifiers
from ppdp.errors import SpecError


class _Limited:
    """A connector stand-in with PostgreSQL's limit (the check reads only these two attributes)."""

    dialect = "postgres"
    max_identifier_length = 63


def test_62_byte_name_is_refused_because_its_version_table_would_be_truncated():
    name = "n" * 62  # itself fits; name__v999999 (71 bytes) would be cut to 63 and collide
    with pytest.raises(SpecError, match=r"version table .* is 71 bytes \(UTF-8\) but postgres keeps at most 63.*at most 54 bytes") as info:
        check_release_identifiers(_Limited(), "published", name)
    assert "\n" not in str(info.value)


def test_names_are_measured_in_utf8_bytes():
    name = "é" * 27  # 27 characters, 54 bytes: with __v999999 it is 63 bytes, fits
    check_release_identifiers(_Limited(), "published", name)
    with pytest.raises(SpecError, match="delta table|version table"):
        check_release_identifiers(_Limited(), "published", name + "é")


def test_long_schema_is_refused():
    with pytest.raises(SpecError, match="output.schema .* 64 bytes"):
        check_release_identifiers(_Limited(), "s" * 64, "adult")


def test_duckdb_accepts_long_names(tmp_path):
    con = connect(f"duckdb://{tmp_path / 'x.duckdb'}")
    try:
        check_release_identifiers(con, "published", "n" * 200)
    finally:
        con.close()


@pytest.mark.postgres
def test_postgres_limit_comes_from_the_server_and_truncation_is_real(postgres_database):
    con = connect(postgres_database)
    try:
        name = "n" * 62
        with pytest.raises(SpecError, match="at most 63"):
            check_release_identifiers(con, "published", name)
        # why: PostgreSQL really does make the two version tables one
        con.execute(f'CREATE TABLE "{name}__v1" (a INT)')
        with pytest.raises(Exception, match="already exists"):
            con.execute(f'CREATE TABLE "{name}__v2" (a INT)')
    finally:
        con.close()
