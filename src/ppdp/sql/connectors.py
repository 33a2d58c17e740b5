"""The SQL the connectors run themselves (catalog lookups, session settings, run locks, the
statements that create a table from a frame), one section per database. Values are bound
parameters (``?``); names come quoted from ``quote_table``/``quote_ident``.
"""

from __future__ import annotations

from ppdp.sql.dialect import DUCKDB, POSTGRES, SPARK
from ppdp.sql.quoting import quote_ident, quote_table

# -- DuckDB -----------------------------------------------------------------------------------

DUCKDB_DATABASE_PATH = "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
# duckdb_columns() is what information_schema.columns selects from (the same rows and types),
# without that view's thirty computed columns: a fraction of the time of each lookup
DUCKDB_RELATION_COLUMNS = ("SELECT column_name, data_type FROM duckdb_columns() "
                           "WHERE schema_name = ? AND table_name = ? ORDER BY column_index")
DUCKDB_IS_TABLE = "SELECT count(*) FROM duckdb_tables() WHERE schema_name = ? AND table_name = ?"
DUCKDB_BEGIN, DUCKDB_COMMIT, DUCKDB_ROLLBACK = "BEGIN TRANSACTION", "COMMIT", "ROLLBACK"


def duckdb_table_from_view(schema: str, name: str, view: str) -> str:
    """Create ``schema.name`` from the relation registered as ``view`` (a frame)."""
    return f"CREATE TABLE {quote_table(schema, name, DUCKDB)} AS SELECT * FROM {quote_ident(view, DUCKDB)}"


# -- PostgreSQL -------------------------------------------------------------------------------

POSTGRES_SERVER_SETTINGS = ("SELECT CAST(current_setting('server_version_num') AS INTEGER) AS v, "
                            "CAST(current_setting('max_identifier_length') AS INTEGER) AS m")
POSTGRES_SET_CONFIG = "SELECT set_config(?, ?, false) AS v"  # (setting, value), this session
POSTGRES_RELATION_COLUMNS = ("SELECT CAST(column_name AS VARCHAR) AS name, CAST(data_type AS VARCHAR) AS type "
                             "FROM information_schema.columns WHERE table_schema = ? AND table_name = ? "
                             "ORDER BY ordinal_position")
POSTGRES_TRY_LOCK = "SELECT pg_try_advisory_lock(?) AS ok"  # a 64-bit key, session level
POSTGRES_UNLOCK = "SELECT pg_advisory_unlock(?) AS ok"
POSTGRES_TRANSACTION_LOCK = "SELECT pg_advisory_xact_lock(?)"  # waits; freed when the transaction ends
POSTGRES_DATABASE = "SELECT CAST(current_database() AS VARCHAR) AS d"
POSTGRES_SYSTEM_IDENTIFIER = "SELECT CAST(system_identifier AS VARCHAR) AS s FROM pg_control_system()"
POSTGRES_SERVER_ADDRESS = "SELECT CAST(inet_server_addr() AS VARCHAR) AS a, inet_server_port() AS p"
POSTGRES_BEGIN, POSTGRES_COMMIT, POSTGRES_ROLLBACK = "BEGIN", "COMMIT", "ROLLBACK"


def postgres_analyze(relation: str) -> str:
    """Statistics for the planner of ``relation`` (already quoted)."""
    return f"ANALYZE {relation}"


def postgres_copy_log(schema: str, name: str, rows: int) -> str:
    """The statement log's line for a bulk ingest (the driver's COPY; not run as text)."""
    return f"COPY {quote_table(schema, name, POSTGRES)} FROM STDIN -- ADBC bulk ingest, {int(rows)} rows"


# -- Spark ------------------------------------------------------------------------------------


def spark_table_log(target: str, rows: int) -> str:
    """The statement log's line for a table written from a frame (``target`` quoted; the
    DataFrame writer does it, not this text)."""
    return f"CREATE TABLE {target} USING parquet -- from a frame, {int(rows)} rows"


def spark_table(schema: str, name: str) -> str:
    """``schema.name`` as Spark reads a table name (``session.table``, ``saveAsTable``)."""
    return quote_table(schema, name, SPARK)
