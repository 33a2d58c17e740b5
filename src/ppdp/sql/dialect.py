"""The SQL dialects ppdp writes: one ``Dialect`` object per database, with every choice that
differs between them.

A builder of ``sql/`` takes the ``Dialect`` it writes for (a connector's ``dialect``), never a
name with a default: SQL for one database built for another reads the same and fails late. The
object carries sqlglot's name for the dialect (``name``: quoting and generation go through
sqlglot) and the few choices the builders make themselves, as data rather than as
``if d == "postgres"`` branches spread over the modules: type names, how a hex digest becomes
an integer, whether CREATE TABLE takes a key, how a request id and a lease are written.

The registered dialects are singletons (``dialect_named``): identity is equality, so a dialect
is a cheap cache key, and one that crossed a process boundary comes back as the same object.
"""

from __future__ import annotations

from dataclasses import dataclass

from ppdp.sql.errors import build_error


@dataclass(frozen=True, eq=False)
class Dialect:
    """One database's SQL: sqlglot's name for it and the choices ppdp's builders make for it."""

    name: str  # sqlglot's dialect name
    text_type: str = "VARCHAR"  # the type of a text value (a typed NULL among text literals)
    double_type: str = "DOUBLE"  # a double-precision float
    # CREATE TABLE takes PRIMARY KEY (the rebuild script's keys give PostgreSQL's planner the
    # statistics of the generalization joins; BigQuery and Spark take none).
    keyed_tables: bool = True
    # How CAST writes a floating value as text, when not as PostgreSQL does (the canonical form,
    # sql/queries.py text_expr rewrites the others into it): "duckdb" ('39.0', 'nan', 'inf').
    float_text: str | None = None
    # The first 12 hex digits of an md5 text ``{}`` as a BIGINT (order-free row fingerprints).
    hex_bigint: str = "CAST(('0x' || SUBSTR({}, 1, 12)) AS BIGINT)"
    # A SUM of 48-bit BIGINT terms overflows (Spark's BIGINT SUM): sum them as DECIMAL(38, 0).
    narrow_bigint_sum: bool = False
    # A new request's id, as a column default (sql/requests.py).
    new_request_id: str = "CAST(uuid() AS VARCHAR)"
    # LOCALTIMESTAMP plus a lease of ``?`` microseconds (a bound BIGINT).
    lease_until: str = "LOCALTIMESTAMP + to_microseconds(CAST(? AS BIGINT))"
    # The pseudo-column naming a base table's row where it is stored (DuckDB's ``rowid``), None
    # where there is none ppdp reads: two reads of a table's columns line up by it.
    storage_row_id: str | None = None

    def __str__(self) -> str:
        return self.name

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return dialect_named, (self.name,)


DUCKDB = Dialect("duckdb", float_text="duckdb", storage_row_id="rowid")
POSTGRES = Dialect("postgres", double_type="DOUBLE PRECISION",
                   hex_bigint="CAST(CAST(('x' || SUBSTR({}, 1, 12)) AS BIT(48)) AS BIGINT)",
                   new_request_id="md5(random()::text || clock_timestamp()::text)",
                   lease_until="LOCALTIMESTAMP + CAST(? AS BIGINT) * INTERVAL '1 microsecond'")
# Spark casts no '0x' text: CONV reads the hex digits.
SPARK = Dialect("spark", text_type="STRING", keyed_tables=False, hex_bigint="CAST(CONV(SUBSTR({}, 1, 12), 16, 10) AS BIGINT)",
                narrow_bigint_sum=True)
# Targets of the rebuild script only (``ppdp sql``): no connector runs them.
SNOWFLAKE = Dialect("snowflake")
BIGQUERY = Dialect("bigquery", text_type="STRING", double_type="FLOAT64", keyed_tables=False)

DIALECTS: dict[str, Dialect] = {d.name: d for d in (DUCKDB, POSTGRES, SPARK, SNOWFLAKE, BIGQUERY)}


def dialect_named(name: str) -> Dialect:
    """The registered dialect called ``name`` (sqlglot's name; ``postgresql`` is ``postgres``)."""
    found = DIALECTS.get("postgres" if name == "postgresql" else name)
    if found is None:
        raise build_error(f"Unknown dialect {name!r}. Known: {', '.join(DIALECTS)}.")
    return found
