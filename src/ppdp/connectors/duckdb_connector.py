"""Embedded DuckDB: the default warehouse and the demo's."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa

from ppdp.connectors.base import IN_PROCESS_ROWS, PARALLEL_READS, TRANSACTIONAL_DDL
from ppdp.errors import ConnectorError
from ppdp.helper_threads import helper_pool
from ppdp.sql import connectors as S
from ppdp.sql.dialect import DUCKDB


def duckdb_path(url: str) -> str:
    """``duckdb:///abs/x.db`` -> ``/abs/x.db``; ``duckdb://rel/x.db`` or a bare path -> as is."""
    rest = url.split("://", 1)[1] if "://" in url else url
    rest = rest.split("?", 1)[0]
    if rest in ("/:memory:", ":memory:", ""):
        return ":memory:"
    return rest


class DuckDBConnector:
    dialect = DUCKDB
    default_schema = "main"
    # No roles (share with ppdp export); one writing process per file instead of advisory locks.
    capabilities = frozenset({TRANSACTIONAL_DDL, IN_PROCESS_ROWS, PARALLEL_READS})
    max_identifier_length = 1 << 20  # DuckDB does not truncate names

    def __init__(self, url: str, *, read_only: bool = False, create: bool = True) -> None:
        self.url = url
        self.path = duckdb_path(url)
        self.read_only = read_only and self.path != ":memory:"
        if self.path != ":memory:" and not Path(self.path).exists():
            if self.read_only:
                raise ConnectorError(f"DuckDB database {self.path!r} does not exist. "
                                     "Hint: check the path (read-only commands never create a database).")
            if not create:
                raise ConnectorError(f"DuckDB database {self.path!r} does not exist. "
                                     "Hint: check source.database or --db (a release never creates a database).")
        # URL options: duckdb:///x.db?memory_limit=3GB&threads=2
        options: dict[str, str | bool | int | float | list[str]] = {
            name: value for name, value in (p.split("=", 1) for p in url.partition("?")[2].split("&") if "=" in p)}
        unknown = set(options) - {"memory_limit", "threads"}
        if unknown:
            raise ConnectorError(f"Unknown DuckDB URL option(s) {sorted(unknown)}; known: memory_limit, threads.")
        try:
            self.con = duckdb.connect(self.path, read_only=self.read_only, config=options)
        except duckdb.IOException as exc:
            if "lock" in str(exc).lower():
                raise ConnectorError(
                    f"DuckDB database {self.path!r} is in use by another process (another ppdp run?); "
                    "try again when it has finished."
                ) from None
            raise ConnectorError(f"Cannot open DuckDB database {self.path!r}: {exc}") from None
        except duckdb.Error as exc:
            raise ConnectorError(f"Cannot open DuckDB database {self.path!r}: {exc}") from None
        self._in_tx = False
        self._borrowed = False
        self._parallel = True  # reads may run on cursors when no transaction is open
        self._readers: list[duckdb.DuckDBPyConnection] = []

    @classmethod
    def over(cls, con: duckdb.DuckDBPyConnection, *, idle_between_calls: bool = False) -> DuckDBConnector:
        """A connector on a connection someone else opened and will close (dbt-duckdb's
        session): ppdp runs on it in-process, and ``close()`` leaves it open.
        ``idle_between_calls``: the owner never holds a transaction open across ppdp's calls,
        so reads may also run on cursors of their own (``query_arrow_parallel``); by default
        they do not (a dbt session may hold one, whose rows a cursor would not see)."""
        self = cls.__new__(cls)
        # fetchall, not fetchone: DuckDB 2 keeps a partly fetched result open, and the owner's next
        # register() on its connection is then refused ("unfinished result from execute()")
        rows = con.execute(S.DUCKDB_DATABASE_PATH).fetchall()
        self.path = (rows[0][0] if rows else None) or ":memory:"
        self.url = f"duckdb://{self.path}"
        self.read_only = False
        self.con = con
        self._in_tx = False
        self._borrowed = True
        self._parallel = idle_between_calls
        self._readers = []
        return self

    def query(self, sql: str, params: list[Any] | None = None) -> pl.DataFrame:
        try:
            # DuckDB 2.0: Polars output comes from relations, not from execute() results.
            return self.con.sql(sql, params=params or None).pl()
        except duckdb.Error as exc:
            raise ConnectorError(f"DuckDB refused a query: {exc}") from exc

    def query_arrow(self, sql: str) -> pa.Table:
        """A query's result as Arrow, the form DuckDB hands it over in: ``query`` without the
        conversion to Polars, whose fixed cost was a third of reading a 1,000-row source's rows
        in prepare (engine.release.stages.validate.read_encoded)."""
        return _arrow_of(self.con, sql)

    def query_arrow_upto(self, sql: str, limit: int) -> pa.Table | None:
        """``query_arrow`` when the result has at most ``limit`` rows, else None: its batches are
        read until they pass ``limit``, so a large result is not read whole (a LIMIT clause
        would do the same, but DuckDB runs a query with one as a slower streaming plan)."""
        try:
            reader = self.con.sql(sql).to_arrow_reader(limit + 1)
            try:
                batches, n = [], 0
                for batch in reader:
                    n += batch.num_rows
                    if n > limit:
                        return None
                    batches.append(batch)
                return pa.Table.from_batches(batches, schema=reader.schema)
            finally:
                reader.close()
        except duckdb.Error as exc:
            raise ConnectorError(f"DuckDB refused a query: {exc}") from exc

    def query_arrow_parallel(self, sqls: list[str]) -> list[pa.Table] | None:
        """``query_arrow`` of each query, the first on this connection and each other on a
        cursor of its own (a connection to the same database, kept for the next call) in a
        helper thread (ppdp.helper_threads), all at once: DuckDB releases the GIL while it runs a
        query and turns its result into Arrow. None inside a transaction (a cursor would not
        see its uncommitted rows) and on a connection someone else owns (dbt-duckdb's, whose
        session may hold one) unless its owner said it holds none (``over``)."""
        if self._in_tx or not self._parallel:
            return None
        while len(self._readers) < len(sqls) - 1:
            self._readers.append(self.con.cursor())
        pool = helper_pool(len(sqls) - 1)
        futures = [pool.submit(_arrow_of, cursor, sql) for cursor, sql in zip(self._readers, sqls[1:], strict=False)]
        try:
            first = _arrow_of(self.con, sqls[0])
        finally:
            others = [f.exception() or f.result() for f in futures]  # every read ends before a raise
        for other in others:
            if isinstance(other, BaseException):
                raise other
        return [first, *others]

    def is_table(self, schema: str, name: str) -> bool:
        return bool(self.con.execute(S.DUCKDB_IS_TABLE, [schema, name]).fetchall()[0][0])

    def execute(self, sql: str, params: list[Any] | None = None) -> None:
        try:
            self.con.execute(sql, params or [])
        except duckdb.Error as exc:
            raise ConnectorError(f"DuckDB refused a statement: {exc}") from exc

    def write_frame(self, schema: str, name: str, frame: pl.DataFrame) -> None:
        view = "__ppdp_frame"
        self.con.register(view, frame.to_arrow())
        try:
            self.execute(S.duckdb_table_from_view(schema, name, view))
        finally:
            self.con.unregister(view)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        if self._in_tx:  # nested: join the outer transaction
            yield
            return
        self.con.execute(S.DUCKDB_BEGIN)
        self._in_tx = True
        try:
            yield
        except BaseException:
            self._rollback()
            raise
        else:
            try:
                self.con.execute(S.DUCKDB_COMMIT)
            except duckdb.Error as exc:  # a full disk: the write-ahead log could not be written
                self._rollback()
                raise ConnectorError(f"DuckDB could not commit the transaction, nothing of it was written: {exc}") from exc
        finally:
            self._in_tx = False

    def _rollback(self) -> None:
        """Roll back; a transaction DuckDB already aborted (a failed commit) has nothing to undo."""
        try:
            self.con.execute(S.DUCKDB_ROLLBACK)
        except duckdb.Error:
            pass

    def relation_columns(self, schema: str, name: str) -> list[tuple[str, str]] | None:
        rows = self.con.execute(S.DUCKDB_RELATION_COLUMNS, [schema, name]).fetchall()
        return [(r[0], r[1]) for r in rows] or None

    def try_lock(self, name: str) -> bool:
        """DuckDB lets one process write a database file at a time: opening it was the lock."""
        return True

    def unlock(self, name: str) -> None:
        return None

    def lock_transaction(self, name: str) -> None:
        """Nothing: one process writes a database file at a time (opening it for writing was the lock)."""
        return None

    def identity(self) -> str:
        """The file's resolved absolute path (symlinks and ``..`` followed), not the URL's spelling."""
        return "duckdb:" + (":memory:" if self.path == ":memory:" else str(Path(self.path).resolve()))

    def close(self) -> None:
        for reader in self._readers:
            reader.close()
        self._readers = []
        if not self._borrowed:
            self.con.close()


def _arrow_of(con: duckdb.DuckDBPyConnection, sql: str) -> pa.Table:
    try:
        if _submit_works():
            return con._submit(sql, None, "arrow", _SUBMIT_BATCH).arrow_table()
        return con.sql(sql).to_arrow_table()
    except duckdb.Error as exc:
        raise ConnectorError(f"DuckDB refused a query: {exc}") from exc


# DuckDB 2's relation API parses a query and binds it (capturing the Python variables it names)
# before it runs it, and the run parses and binds it again: ``con.sql(q).to_arrow_table()``
# spent 0.25 of 1.12 ms reading 3,000 rows x 9 text columns in those two steps. The connection's
# ``_submit`` runs the text once. It is private, so it is used only where a self-test on first use
# gives the public path's table, types and order, else the public path is (an older or newer
# DuckDB without it, or where it behaves otherwise).
_SUBMIT_BATCH = 131_072  # DuckDB's default Arrow batch of rows
_SUBMIT_CHECKED: list[bool] = []
_SUBMIT_PROBE = ("SELECT * FROM (VALUES (2, 'b', NULL::DOUBLE), (1, NULL, 1.5), (3, 'ccc', -0.0)) "
                 "AS t(i, s, d) ORDER BY i DESC")


def _submit_works() -> bool:
    """Whether ``DuckDBPyConnection._submit(sql, None, "arrow", batch).arrow_table()`` gives what
    ``con.sql(sql).to_arrow_table()`` gives (checked once per process on a throwaway database)."""
    if not _SUBMIT_CHECKED:
        ok = False
        try:
            with duckdb.connect(":memory:") as probe:
                fast = probe._submit(_SUBMIT_PROBE, None, "arrow", _SUBMIT_BATCH).arrow_table()
                public = probe.sql(_SUBMIT_PROBE).to_arrow_table()
                ok = isinstance(fast, pa.Table) and fast.equals(public, check_metadata=True)
        except Exception:  # noqa: BLE001 - any failure of a private API means: do not use it
            ok = False
        _SUBMIT_CHECKED.append(ok)
    return _SUBMIT_CHECKED[0]
