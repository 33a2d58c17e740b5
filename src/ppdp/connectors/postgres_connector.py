"""PostgreSQL over ADBC (``adbc-driver-postgresql``): Arrow both ways, libpq in the wheel.

``postgresql://user[:password]@host:port/database``. The connection runs in autocommit mode, so
a refused statement outside ``transaction()`` does not poison the next one; ``transaction()``
sends BEGIN / COMMIT / ROLLBACK itself (bulk ingest joins the open transaction).

ppdp's SQL writes parameters as ``?``; they are numbered ``$1, $2, ...`` here by a small scanner
that leaves quoted strings, quoted identifiers, dollar-quoted strings and comments alone.

After every ``INSERT ... SELECT`` the target table is ANALYZEd: a release fills ppdp's private
tables inside one open transaction, where autovacuum cannot see the rows, and the planner would
otherwise take them for empty and nest loops over them (a Nested Loop Anti Join over ``_ppdp.suppressed`` took most of a
20,000-row release; ANALYZE works inside a transaction).

Session safety (a killed ppdp must not leave its backend holding the run lock). URL options,
removed before the URL reaches libpq:

* ``statement_timeout`` (PostgreSQL duration, e.g. ``?statement_timeout=30min``): any statement
  running longer is cancelled. Default: none (0), as PostgreSQL's own default: a 10M-row
  materialization may legitimately take long, so a limit is the operator's choice.
* ``client_connection_check_interval`` (PostgreSQL >= 14; default ``2s``): while a statement runs
  the server checks that the client is still there, so a killed ppdp (kill -9, lost network) does
  not leave its backend running a long statement. The run lock is a session-level advisory lock:
  it dies with the backend, so another run can start a few seconds after the client died.

Planner settings for ppdp's analytical statements, also URL options:

* ``work_mem`` (default ``256MB``, PostgreSQL's own is 4MB; a 1M-row version is shuffled by a sort): with 4MB the 9-column joins and
  groupings of a 1M-row release became sorts spilled to disk (hundreds of MB) instead of hash
  joins / hash aggregates.
* ``jit`` (default ``off``): the release's wide generated expressions cost more to JIT-compile
  than they save (on 1M rows, compilation was more than half of the suppressed-keys statement).

Every statement sent is appended to ``statements`` and the Arrow bytes received / sent are
summed in ``bytes_in`` / ``bytes_out``, so callers can see what ran where and what moved.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

# Without the driver this import fails and the connector registry names the extra that brings
# it (pip install 'ppdp[postgres]').
import adbc_driver_manager
import adbc_driver_postgresql.dbapi as pg_dbapi
import polars as pl
import pyarrow as pa
from adbc_driver_postgresql import StatementOptions as pg_options

from ppdp.connectors.base import (
    ADVISORY_LOCKS,
    DEFINER_FUNCTIONS,
    ROLES,
    SKIP_LOCKED,
    STATEMENT_TIMEOUT,
    TRANSACTIONAL_DDL,
)
from ppdp.errors import ConnectorError
from ppdp.redact import redact_url
from ppdp.sql import connectors as S
from ppdp.sql.dialect import POSTGRES
from ppdp.sql.quoting import quote_table

_IDENT_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$")


def number_placeholders(sql: str) -> tuple[str, int]:
    """Replace each ``?`` placeholder by ``$1, $2, ...``; return the new text and the count.

    Left untouched: ``'strings'`` (``''`` escapes; ``E'...'`` also ``\\'``), ``"identifiers"``
    (``""`` escapes), ``$tag$dollar quoted$tag$`` strings, ``-- line`` and ``/* nested */``
    comments.

    >>> number_placeholders("SELECT ?, '?', \\"a?\\" FROM t WHERE x = ?")
    ('SELECT $1, \\'?\\', "a?" FROM t WHERE x = $2', 2)
    """
    out: list[str] = []
    n = 0
    i, end = 0, len(sql)
    while i < end:
        c = sql[i]
        if c == "?":
            n += 1
            out.append(f"${n}")
            i += 1
            continue
        start = i
        if c == "'":
            escapes = i > 0 and sql[i - 1] in "eE" and (i < 2 or sql[i - 2] not in _IDENT_CHARS)
            i = _skip_quoted(sql, i, "'", backslash=escapes)
        elif c == '"':
            i = _skip_quoted(sql, i, '"', backslash=False)
        elif c == "-" and sql.startswith("--", i):
            nl = sql.find("\n", i)
            i = end if nl < 0 else nl + 1
        elif c == "/" and sql.startswith("/*", i):
            i = _skip_block_comment(sql, i)
        elif c == "$" and (i == 0 or sql[i - 1] not in _IDENT_CHARS):
            i = _skip_dollar_quoted(sql, i)
        else:
            i += 1
        out.append(sql[start:i])
    return "".join(out), n


def _skip_quoted(sql: str, i: int, quote: str, *, backslash: bool) -> int:
    """Index just past the quoted run that starts at ``sql[i] == quote`` (end of text if open)."""
    i += 1
    while i < len(sql):
        c = sql[i]
        if backslash and c == "\\":
            i += 2
        elif c == quote:
            if sql.startswith(quote, i + 1):  # doubled quote: an escaped quote, still inside
                i += 2
            else:
                return i + 1
        else:
            i += 1
    return len(sql)


def _skip_block_comment(sql: str, i: int) -> int:
    depth, i = 1, i + 2  # PostgreSQL block comments nest
    while i < len(sql) and depth:
        if sql.startswith("/*", i):
            depth, i = depth + 1, i + 2
        elif sql.startswith("*/", i):
            depth, i = depth - 1, i + 2
        else:
            i += 1
    return i


def _skip_dollar_quoted(sql: str, i: int) -> int:
    """Past ``$tag$...$tag$`` when ``sql[i]`` opens one; else past the lone ``$`` (e.g. ``$1``)."""
    j = i + 1
    while j < len(sql) and (sql[j].isalnum() or sql[j] == "_") and not (j == i + 1 and sql[j].isdigit()):
        j += 1
    if j < len(sql) and sql[j] == "$":
        tag = sql[i : j + 1]
        close = sql.find(tag, j + 1)
        return len(sql) if close < 0 else close + len(tag)
    return i + 1


_COPY_KEYWORDS = frozenset({"SELECT", "WITH", "VALUES", "TABLE"})

_NAME = r'(?:"(?:[^"]|"")*"|[A-Za-z_][A-Za-z0-9_$]*)'
_INSERT_SELECT = re.compile(rf"\s*INSERT\s+INTO\s+({_NAME}(?:\s*\.\s*{_NAME})?)\s*(?:\([^)]*\)\s*)?\(?\s*(?:SELECT|WITH)\b",
                            re.IGNORECASE)


def insert_select_target(sql: str) -> str | None:
    """The (quoted) target of an ``INSERT INTO t [(cols)] SELECT/WITH ...``; None for anything else.

    >>> insert_select_target('INSERT INTO "_ppdp"."row_ids" (release, key) SELECT 1')
    '"_ppdp"."row_ids"'
    >>> insert_select_target("INSERT INTO t VALUES (1)") is None
    True
    """
    m = _INSERT_SELECT.match(sql)
    return m.group(1) if m else None


def first_keyword(sql: str) -> str:
    """The statement's first word, upper-cased, past whitespace, comments and opening parens."""
    i = 0
    while i < len(sql):
        if sql[i].isspace() or sql[i] == "(":
            i += 1
        elif sql.startswith("--", i):
            nl = sql.find("\n", i)
            i = len(sql) if nl < 0 else nl + 1
        elif sql.startswith("/*", i):
            i = _skip_block_comment(sql, i)
        else:
            break
    j = i
    while j < len(sql) and (sql[j].isalnum() or sql[j] == "_"):
        j += 1
    return sql[i:j].upper()


def lock_key(name: str) -> int:
    """A stable signed 64-bit advisory lock key for ``name``."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big", signed=True)


SESSION_OPTIONS = {"statement_timeout": "0", "client_connection_check_interval": "2s", "work_mem": "256MB", "jit": "off"}
_DURATION = re.compile(r"\d+(\.\d+)?\s*(us|ms|s|min|h|d)?")
_OPTION_SYNTAX = {
    "statement_timeout": (_DURATION, "a duration, e.g. 30s, 500ms or 10min (0: none)"),
    "client_connection_check_interval": (_DURATION, "a duration, e.g. 2s (0: off)"),
    "work_mem": (re.compile(r"\d+\s*(kB|MB|GB)?"), "a size, e.g. 64MB"),
    "jit": (re.compile(r"on|off"), "on or off"),
}


def split_session_options(url: str) -> tuple[str, dict[str, str]]:
    """``url`` without ppdp's session options, and those options (defaults filled in).

    >>> split_session_options("postgresql://u@h:5/db?sslmode=disable&statement_timeout=5s")[0]
    'postgresql://u@h:5/db?sslmode=disable'
    >>> split_session_options("postgresql://u@h:5/db?statement_timeout=5s")[1]["statement_timeout"]
    '5s'
    """
    parts = urlsplit(url)
    options = dict(SESSION_OPTIONS)
    kept = []
    for item in parts.query.split("&") if parts.query else []:
        key, _, value = item.partition("=")
        if key in SESSION_OPTIONS:
            syntax, hint = _OPTION_SYNTAX[key]
            if not syntax.fullmatch(value):
                raise ConnectorError(f"URL option {key}={value!r} is not valid. Hint: {key} takes {hint}.")
            options[key] = value
        else:
            kept.append(item)
    return urlunsplit(parts._replace(query="&".join(kept))), options


def redact(url: str) -> str:
    """``url`` with any password (user-info or ``?password=``) replaced by ``***`` (redact.py)."""
    return redact_url(url)


def server_message(exc: Exception) -> str:
    """The server's own words from an ADBC error: primary message, detail, hint, SQLSTATE."""
    diag = {}
    for key, value in getattr(exc, "details", None) or []:
        k = key.decode() if isinstance(key, bytes) else str(key)
        diag[k] = value.decode(errors="replace") if isinstance(value, bytes) else str(value)
    primary = diag.get("PG_DIAG_MESSAGE_PRIMARY")
    if primary is None:  # not a server error (connection, driver): the driver's text
        return str(exc).strip()
    text = primary
    if "PG_DIAG_MESSAGE_DETAIL" in diag:
        text += f" ({diag['PG_DIAG_MESSAGE_DETAIL']})"
    if "PG_DIAG_MESSAGE_HINT" in diag:
        text += f" Hint: {diag['PG_DIAG_MESSAGE_HINT']}"
    state = diag.get("PG_DIAG_SQLSTATE") or getattr(exc, "sqlstate", None)
    return f"{text} [SQLSTATE {state}]" if state else text


def _short(sql: str, limit: int = 300) -> str:
    one_line = " ".join(sql.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 3] + "..."


def _plain_arrow(table: pa.Table) -> pa.Table:
    """PostgreSQL types ADBC hands over as opaque extensions -> plain Arrow (numeric -> float64)."""
    if not any(isinstance(f.type, pa.BaseExtensionType) for f in table.schema):
        return table
    columns, fields = [], []
    for field, col in zip(table.schema, table.columns, strict=True):
        if isinstance(field.type, pa.BaseExtensionType):
            col = pa.chunked_array([c.storage for c in col.chunks], type=field.type.storage_type)
            if getattr(field.type, "type_name", None) == "numeric":
                try:
                    col = col.cast(pa.float64())
                except pa.ArrowInvalid:  # e.g. numeric 'Infinity': keep the text
                    pass
            field = pa.field(field.name, col.type, field.nullable)
        columns.append(col)
        fields.append(field)
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


def _ingestable(frame: pl.DataFrame) -> pa.Table:
    """The frame as Arrow types the driver's COPY writer accepts."""
    casts = [pl.col(n).cast(pl.String) for n, t in frame.schema.items() if t in (pl.Null, pl.Categorical) or isinstance(t, pl.Enum)]
    return (frame.with_columns(casts) if casts else frame).to_arrow()


class PostgresConnector:
    dialect = POSTGRES
    default_schema = "public"
    capabilities = frozenset({ROLES, ADVISORY_LOCKS, TRANSACTIONAL_DDL, STATEMENT_TIMEOUT, SKIP_LOCKED, DEFINER_FUNCTIONS})
    max_identifier_length = 63  # NAMEDATALEN - 1 bytes; the server's own value replaces it on connect

    def __init__(self, url: str, *, read_only: bool = False, create: bool = True) -> None:
        self.url = redact(url)  # for messages; the password is used below to connect and kept nowhere
        self.read_only = read_only
        self.statements: list[str] = []
        self.bytes_in = 0  # Arrow bytes of query results
        self.bytes_out = 0  # Arrow bytes of ingested frames
        self._in_tx = False
        self._use_copy = True  # the driver's default
        libpq_url = "postgresql://" + url.split("://", 1)[1] if "://" in url else url
        libpq_url, self.session_options = split_session_options(libpq_url)
        try:
            self.con = pg_dbapi.connect(libpq_url, autocommit=True)
        except adbc_driver_manager.Error as exc:
            raise ConnectorError(
                f"Cannot connect to PostgreSQL at {redact(url)}: {' '.join(server_message(exc).split())} "  # one line
                "Hint: check host, port, database and credentials in the URL."
            ) from None
        self.cur = self.con.cursor()
        self._configure_session()

    def _configure_session(self) -> None:
        """Session settings (module docstring): timeouts, client checks, read-only; values bound."""
        row = self.query(S.POSTGRES_SERVER_SETTINGS).row(0, named=True)
        self.server_version = int(row["v"])
        self.max_identifier_length = int(row["m"])
        settings = {k: v for k, v in self.session_options.items() if k != "client_connection_check_interval"}
        if self.server_version >= 140000:
            settings["client_connection_check_interval"] = self.session_options["client_connection_check_interval"]
        if self.read_only:
            settings["default_transaction_read_only"] = "on"
        for name, value in settings.items():
            self.query(S.POSTGRES_SET_CONFIG, [name, value])

    # -- statements ------------------------------------------------------------------------

    def _run(self, sql: str, params: list[Any] | None, *, fetch: bool) -> pa.Table | None:
        text, n = number_placeholders(sql)
        values = list(params or [])
        if n != len(values):
            raise ConnectorError(f"The statement has {n} placeholder(s) but {len(values)} parameter(s) were given: {_short(sql)}")
        self.statements.append(text)
        try:
            if fetch:
                self._set_copy(first_keyword(text) in _COPY_KEYWORDS)
            self.cur.execute(text, tuple(values) if values else None)
            if not fetch:
                target = insert_select_target(text)
                if target is not None:  # see the module docstring: statistics for the planner
                    self.statements.append(S.postgres_analyze(target))
                    self.cur.execute(S.postgres_analyze(target))
                return None
            table = self.cur.fetch_arrow_table()
        except adbc_driver_manager.Error as exc:
            what = "query" if fetch else "statement"
            raise ConnectorError(f"PostgreSQL refused a {what}: {server_message(exc)}. Statement: {_short(text)}") from exc
        self.bytes_in += table.nbytes
        return table

    def _set_copy(self, on: bool) -> None:
        """Results of parameterless queries stream through COPY ... TO STDOUT (fast), which only
        wraps SELECT-like statements; EXPLAIN, SHOW and the like need the plain protocol."""
        if on != self._use_copy:
            self.cur.adbc_statement.set_options(**{pg_options.USE_COPY.value: "true" if on else "false"})
            self._use_copy = on

    def query(self, sql: str, params: list[Any] | None = None) -> pl.DataFrame:
        table = self._run(sql, params, fetch=True)
        frame = pl.from_arrow(_plain_arrow(table))
        assert isinstance(frame, pl.DataFrame)
        return frame

    def execute(self, sql: str, params: list[Any] | None = None) -> None:
        self._run(sql, params, fetch=False)

    def write_frame(self, schema: str, name: str, frame: pl.DataFrame) -> None:
        table = _ingestable(frame)
        self.statements.append(S.postgres_copy_log(schema, name, table.num_rows))
        try:
            self.cur.adbc_ingest(name, table, mode="create", db_schema_name=schema)
        except adbc_driver_manager.Error as exc:
            raise ConnectorError(f"PostgreSQL refused to create {quote_table(schema, name, self.dialect)} from a frame: "
                                 f"{server_message(exc)}") from exc
        self.bytes_out += table.nbytes
        # A fresh table has no statistics until autovacuum comes by; the planner would take it
        # for a few rows and nest loops over it (ANALYZE also works inside a transaction).
        self.execute(S.postgres_analyze(quote_table(schema, name, self.dialect)))

    @contextmanager
    def transaction(self) -> Iterator[None]:
        if self._in_tx:  # nested: join the outer transaction
            yield
            return
        self.execute(S.POSTGRES_BEGIN)
        self._in_tx = True
        try:
            yield
        except BaseException:
            try:
                self.execute(S.POSTGRES_ROLLBACK)
            except ConnectorError:  # the session is gone (and its transaction with it): keep the cause
                pass
            raise
        else:
            self.execute(S.POSTGRES_COMMIT)
        finally:
            self._in_tx = False

    def relation_columns(self, schema: str, name: str) -> list[tuple[str, str]] | None:
        rows = self.query(S.POSTGRES_RELATION_COLUMNS, [schema, name])
        return [(r[0], r[1]) for r in rows.iter_rows()] or None

    def try_lock(self, name: str) -> bool:
        """A session-level advisory lock on a 64-bit hash of ``name`` (freed by ``unlock`` or on close)."""
        return bool(self.query(S.POSTGRES_TRY_LOCK, [lock_key(name)])["ok"][0])

    def unlock(self, name: str) -> None:
        self.query(S.POSTGRES_UNLOCK, [lock_key(name)])

    def lock_transaction(self, name: str) -> None:
        """A transaction-level advisory lock on a 64-bit hash of ``name``, waited for."""
        self.execute(S.POSTGRES_TRANSACTION_LOCK, [lock_key(name)])

    def identity(self) -> str:
        """The cluster's system identifier (pg_control_system) and the database name; the server's
        address and port stand in where the function is not granted to the connecting role. Runs
        outside any transaction (identify), so a refused probe poisons nothing."""
        name = str(self.query(S.POSTGRES_DATABASE)["d"][0])
        try:
            system = str(self.query(S.POSTGRES_SYSTEM_IDENTIFIER)["s"][0])
        except ConnectorError:
            row = self.query(S.POSTGRES_SERVER_ADDRESS).row(0)
            system = f"{row[0]}:{row[1]}"
        return f"postgres:{system}/{name}"

    def close(self) -> None:
        if self.con is None:
            return
        try:
            self.cur.close()
            self.con.close()
        except adbc_driver_manager.Error:  # closing a broken connection: nothing left to do
            pass
        finally:
            self.con = None
