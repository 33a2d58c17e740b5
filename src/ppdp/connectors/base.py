"""The connector protocol (after dbt adapters: a short list of methods, one module per database)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any, Protocol

import polars as pl

from ppdp.errors import ConnectorError
from ppdp.registry import Registry, UnavailableError, registry
from ppdp.sql.dialect import Dialect

# Optional features a connector declares in ``capabilities`` (callers test these, never the
# dialect name): database roles and GRANT/REVOKE; run locks that exclude other sessions
# (advisory locks); DDL that rolls back with its transaction; a per-session statement timeout.
ROLES = "roles"
ADVISORY_LOCKS = "advisory_locks"
TRANSACTIONAL_DDL = "transactional_ddl"
STATEMENT_TIMEOUT = "statement_timeout"
# Row locks that concurrent sessions skip (SELECT ... FOR UPDATE SKIP LOCKED: several request
# workers at once), and functions that run with their owner's rights (SECURITY DEFINER).
SKIP_LOCKED = "skip_locked"
DEFINER_FUNCTIONS = "definer_functions"
# The database runs in this process and hands a query's rows over as Arrow without a network
# hop (``ArrowRowsConnector.query_arrow``): reading a small source's rows then costs less than
# grouping them in the database (engine.release.stages.validate.read_encoded).
IN_PROCESS_ROWS = "in_process_rows"
# An IN_PROCESS_ROWS connector that can run several reads at once on connections of its own
# (``ParallelReadsConnector``): DuckDB turns one query's result into Arrow on one thread, so the
# columns of a large source read in two halves, one per core, arrive in about half the time.
PARALLEL_READS = "parallel_reads"
CAPABILITIES = frozenset({ROLES, ADVISORY_LOCKS, TRANSACTIONAL_DDL, STATEMENT_TIMEOUT, SKIP_LOCKED, DEFINER_FUNCTIONS,
                          IN_PROCESS_ROWS, PARALLEL_READS})


class Connector(Protocol):
    """What ppdp needs from a database."""

    dialect: Dialect  # the SQL the builders of sql/ write for it
    url: str
    capabilities: frozenset[str]  # a subset of CAPABILITIES
    max_identifier_length: int  # in UTF-8 bytes; longer names are truncated or refused by the database
    default_schema: str  # where an unqualified table name is looked up (main, public, default)

    def query(self, sql: str, params: list[Any] | None = None) -> pl.DataFrame:
        """Run a query and return its result as a Polars frame."""
        ...

    def execute(self, sql: str, params: list[Any] | None = None) -> None:
        """Run a statement that returns nothing."""
        ...

    def write_frame(self, schema: str, name: str, frame: pl.DataFrame) -> None:
        """Create table schema.name from a frame (the table must not exist)."""
        ...

    def transaction(self) -> AbstractContextManager[None]:
        """Commit on success, roll back on any exception."""
        ...

    def relation_columns(self, schema: str, name: str) -> list[tuple[str, str]] | None:
        """(column, type) of a table or view, or None when it does not exist."""
        ...

    def try_lock(self, name: str) -> bool:
        """Take a run lock named ``name`` without waiting; False when another session holds it."""
        ...

    def unlock(self, name: str) -> None: ...

    def lock_transaction(self, name: str) -> None:
        """Wait for an exclusive lock named ``name`` that the current transaction holds until it
        ends (ADVISORY_LOCKS); where sessions cannot write concurrently, nothing. Two sessions that
        create or rewrite the same objects take it first: the second then sees the first's work
        committed instead of colliding with it."""
        ...

    def identity(self) -> str:
        """Which database this is, however its URL was spelled (an embedded file's resolved path,
        a server's system identifier and database name): part of the run key."""
        ...

    def close(self) -> None: ...


class ArrowRowsConnector(Connector, Protocol):
    """A connector that declares IN_PROCESS_ROWS."""

    def query_arrow(self, sql: str) -> Any:
        """A query's result as a pyarrow Table."""
        ...

    def query_arrow_upto(self, sql: str, limit: int) -> Any:
        """A query's result as a pyarrow Table when it has at most ``limit`` rows, else None
        (read no further than the batch that passes ``limit``)."""
        ...


class ParallelReadsConnector(ArrowRowsConnector, Protocol):
    """A connector that declares PARALLEL_READS."""

    def query_arrow_parallel(self, sqls: list[str]) -> list[Any] | None:
        """Each query's result as a pyarrow Table, the queries run at the same time, each on a
        connection of its own; None when they cannot be now (inside a transaction, whose
        uncommitted rows another connection would not see). Each query reads its own snapshot:
        the caller checks that the results fit together."""
        ...

    def is_table(self, schema: str, name: str) -> bool:
        """Whether ``schema.name`` is a base table (not a view): its rows have row ids."""
        ...


# Connectors are entry points of the group ``ppdp.connectors`` (pyproject.toml), one per URL
# scheme, so a database driver is imported only when a URL of its scheme is opened and another
# distribution can add a database; ``CONNECTORS.register`` adds one in code.
CONNECTORS: Registry[type] = registry("connector")


def connect(url: str, *, read_only: bool = False, create: bool = True) -> Connector:
    """Open the database ``url`` names; the scheme picks the connector (a bare path: DuckDB).

    ``read_only`` (``ppdp show``, ``verify``, ``runs``, ``certificate``): nothing can be written,
    and a DuckDB file that does not exist is a ConnectorError instead of a new empty file.
    ``create=False`` (a release, a job): the database must exist already; an embedded database
    is not created by opening it (a mistyped path would leave an empty file behind).
    Server databases are never created by connecting, whatever ``create`` says.
    """
    scheme, sep, _ = url.partition("://")
    try:
        connector = CONNECTORS.get(scheme if sep else "duckdb")
    except UnavailableError as exc:
        raise ConnectorError(str(exc)) from None
    return connector(url, read_only=read_only, create=create)


def iter_batches(frame: pl.DataFrame, size: int) -> Iterator[pl.DataFrame]:
    for i in range(0, frame.height, size):
        yield frame.slice(i, size)
