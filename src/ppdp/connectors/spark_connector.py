"""Apache Spark SQL (``pip install ppdp[spark]``, pyspark; Java 17 on the machine).

URLs:

* ``spark://local?warehouse=/path`` (or ``local[4]``): Spark in this process, tables as Parquet
  files under ``/path``, the table catalog in a Derby metastore beside them
  (``/path/metastore_db``), so a later process (``ppdp show``, the next release) finds them.
  ``catalog=in-memory`` keeps the catalog in the session only (scratch work).
* ``spark://host:7077?warehouse=hdfs:///ppdp&catalog=hive`` (a cluster): the master's URL is the
  URL itself; point ``warehouse`` at storage every executor reaches and use the cluster's Hive
  metastore (``hive.metastore.uris`` from the ``hive-site.xml`` in ``$SPARK_CONF_DIR``). Any other
  Spark setting can be given as ``conf.<key>=<value>`` (e.g. ``conf.spark.executor.memory=8g``).
* An existing ``SparkSession`` (a notebook, ``spark-submit``): ``SparkConnector.from_session(spark)``.

Every statement is rewritten for Spark by sql/spark.py (sqlglot; DELETE and UPDATE, which
Parquet tables lack, become a scratch table and an ``INSERT OVERWRITE``); ``?`` parameters are
bound there as escaped literals. The histogram GROUP BY, the materialization, the verification
queries and the view switch all run as Spark SQL; only results (counts, the histogram) come back
to Python, as Arrow.

What Spark cannot promise, declared by leaving capabilities out:

* no ``transactional_ddl``: ``transaction()`` cannot roll anything back. ppdp stays safe
  because of the order of its stages: the new version is written under a new table name
  (``<name>__v<N>``), verified by SQL, and only then does the view move; a failed or killed run
  leaves the view on the previous, verified version (tests/adapters/test_spark_connector.py checks this).
  What a failed run leaves behind is private: its unverified ``__v<N>`` table and its rows in
  ``_ppdp`` for version N, which is never a published version (``runs`` says ``failed``) and
  is written over by the next run (N is reused: it is the last *succeeded* version plus one).
* no ``advisory_locks``: the run lock is an ``flock`` on a file under a local warehouse, which
  excludes other processes on this machine only (and dies with its process); on a cluster, run
  one ppdp process per release (a scheduler's job, as for DuckDB files).
* no ``roles`` (GRANT needs an authorizer such as Ranger / Unity Catalog), no ``statement_timeout``.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import polars as pl
import pyarrow as pa

# Without pyspark this import fails and the connector registry names the extra (ppdp[spark]).
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from ppdp.errors import ConnectorError
from ppdp.sql import connectors as S
from ppdp.sql.dialect import SPARK
from ppdp.sql.spark import StatementError, spark_statements

_OPTIONS = ("warehouse", "catalog")


def _short(sql: str, limit: int = 300) -> str:
    one_line = " ".join(sql.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 3] + "..."


def parse_spark_url(url: str) -> tuple[str, str | None, str, dict[str, str]]:
    """(master, warehouse, catalog, extra Spark settings) of a ``spark://`` URL.

    >>> parse_spark_url("spark://local?warehouse=/tmp/w")[:3]
    ('local[*]', '/tmp/w', 'hive')
    >>> parse_spark_url("spark://h:7077?conf.spark.executor.memory=8g")
    ('spark://h:7077', None, 'hive', {'spark.executor.memory': '8g'})
    """
    rest = url.split("://", 1)[1]
    where, _, query = rest.partition("?")
    options = dict(parse_qsl(query, keep_blank_values=True))
    conf = {k[5:]: v for k, v in options.items() if k.startswith("conf.")}
    unknown = sorted(k for k in options if k not in _OPTIONS and not k.startswith("conf."))
    if unknown:
        raise ConnectorError(f"Unknown Spark URL option(s) {unknown}; known: warehouse, catalog, conf.<spark setting>.")
    catalog = options.get("catalog", "hive")
    if catalog not in ("hive", "in-memory"):
        raise ConnectorError(f"Spark URL option catalog={catalog!r} is not valid. Hint: catalog takes hive or in-memory.")
    if where in ("", "local"):
        master = "local[*]"
    elif where.startswith("local["):
        master = where
    else:
        master = "spark://" + urlsplit(url).netloc
    return master, options.get("warehouse") or None, catalog, conf


def _local_dir(warehouse: str | None) -> Path | None:
    """The warehouse as a local directory, or None when it lives elsewhere (hdfs://, s3a://)."""
    if warehouse is None:
        return None
    if warehouse.startswith("file:"):
        warehouse = warehouse[5:].lstrip("/")
        warehouse = "/" + warehouse
    if "://" in warehouse:
        return None
    return Path(warehouse).resolve()


def session_for(url: str) -> SparkSession:
    """The process's SparkSession, started for ``url`` when there is none yet.

    Spark runs one session per process: a second URL that needs other static settings (another
    warehouse or master) is refused rather than silently served by the first one's.
    """
    master, warehouse, catalog, conf = parse_spark_url(url)
    local = _local_dir(warehouse)
    active = SparkSession.getActiveSession()
    if active is not None:
        if local is not None and _local_dir(active.conf.get("spark.sql.warehouse.dir")) != local:
            raise ConnectorError(f"This process already runs a Spark session with warehouse "
                                 f"{active.conf.get('spark.sql.warehouse.dir')}; {url} needs {warehouse}. "
                                 "Hint: one Spark warehouse per process.")
        return active
    builder = (SparkSession.builder.master(master).appName("ppdp")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               # TIMESTAMP without a time zone, as DuckDB's and PostgreSQL's ``timestamp``
               .config("spark.sql.timestampType", "TIMESTAMP_NTZ").config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.legacy.createHiveTableByDefault", "false")  # CREATE TABLE -> Parquet
               .config("spark.sql.shuffle.partitions", "4" if master.startswith("local") else "200"))
    if warehouse is not None:
        builder = builder.config("spark.sql.warehouse.dir", str(local) if local is not None else warehouse)
    if catalog == "hive":
        builder = builder.enableHiveSupport()
        if local is not None:  # the Derby metastore beside the tables, not in the working directory
            local.mkdir(parents=True, exist_ok=True)
            builder = (builder.config("spark.hadoop.javax.jdo.option.ConnectionURL",
                                      f"jdbc:derby:;databaseName={local / 'metastore_db'};create=true")
                       .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={local}"))
    for key, value in conf.items():
        builder = builder.config(key, value)
    try:
        session = builder.getOrCreate()
    except Exception as exc:  # Java missing, master unreachable: py4j / pyspark errors alike
        raise ConnectorError(f"Cannot start Spark for {url}: {str(exc).splitlines()[0] if str(exc) else exc}. "
                             "Hint: Java 17 must be on PATH (JAVA_HOME), and a cluster's master reachable.") from None
    session.sparkContext.setLogLevel("ERROR")
    return session


def _message(exc: Exception) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    cls = getattr(exc, "getCondition", None) or getattr(exc, "getErrorClass", None)
    condition = cls() if callable(cls) else None
    if condition in ("TABLE_OR_VIEW_NOT_FOUND", "SCHEMA_NOT_FOUND"):
        text = f"the relation does not exist: {text}"
    return text


def _plain_arrow(table: pa.Table) -> pa.Table:
    """Spark's DECIMAL results (``x * 1.0``) as float64, as PostgreSQL's numeric comes back."""
    if not any(pa.types.is_decimal(f.type) for f in table.schema):
        return table
    return table.cast(pa.schema([pa.field(f.name, pa.float64(), f.nullable) if pa.types.is_decimal(f.type) else f
                                 for f in table.schema]))


class SparkConnector:
    dialect = SPARK
    default_schema = "default"
    capabilities: frozenset[str] = frozenset()  # see the module docstring: no transactions, locks, roles
    max_identifier_length = 1 << 20  # Spark does not truncate names

    def __init__(self, url: str, *, read_only: bool = False, create: bool = True, session: SparkSession | None = None) -> None:
        self.url = url
        self.read_only = read_only
        self.statements: list[str] = []
        self.session = session if session is not None else session_for(url)
        self._locks: dict[str, int] = {}

    @classmethod
    def from_session(cls, session: SparkSession, *, read_only: bool = False) -> SparkConnector:
        """A connector over an existing session (its master, warehouse and catalog as they are)."""
        return cls("spark://session", read_only=read_only, session=session)

    # -- statements ------------------------------------------------------------------------

    def _columns(self, table) -> list[str]:
        schema = table.args.get("db")
        cols = self.relation_columns(schema.name if schema else self.default_schema, table.name)
        if cols is None:
            raise ConnectorError(f"Spark cannot update {table.sql(dialect=self.dialect.name)}: it does not exist.")
        return [c for c, _ in cols]

    def _translate(self, sql: str, params: list[Any] | None) -> list[str]:
        try:
            return spark_statements(sql, params, columns=self._columns)
        except StatementError as exc:
            raise ConnectorError(f"Spark cannot run the statement: {exc}. Statement: {_short(sql)}") from None

    def _sql(self, text: str, what: str):
        if self.read_only and what == "statement":
            raise ConnectorError(f"This Spark connection is read-only. Statement: {_short(text)}")
        self.statements.append(text)
        try:
            return self.session.sql(text)
        except PySparkException as exc:
            raise ConnectorError(f"Spark refused a {what}: {_message(exc)}. Statement: {_short(text)}") from exc

    def query(self, sql: str, params: list[Any] | None = None) -> pl.DataFrame:
        texts = self._translate(sql, params)
        for text in texts[:-1]:
            self._sql(text, "statement")
        df = self._sql(texts[-1], "query")
        try:
            table = df.toArrow()
        except PySparkException as exc:  # analysis passed, execution failed (casts, overflow)
            raise ConnectorError(f"Spark refused a query: {_message(exc)}. Statement: {_short(texts[-1])}") from exc
        frame = pl.from_arrow(_plain_arrow(table))
        assert isinstance(frame, pl.DataFrame)
        return frame

    def execute(self, sql: str, params: list[Any] | None = None) -> None:
        for text in self._translate(sql, params):
            self._sql(text, "statement")  # session.sql runs DDL and DML eagerly

    def write_frame(self, schema: str, name: str, frame: pl.DataFrame) -> None:
        target = S.spark_table(schema, name)
        if self.relation_columns(schema, name) is not None:
            raise ConnectorError(f"Spark cannot create {target} from a frame: the table already exists.")
        casts = [pl.col(n).cast(pl.String) for n, t in frame.schema.items() if t in (pl.Null, pl.Categorical) or isinstance(t, pl.Enum)]
        table = (frame.with_columns(casts) if casts else frame).to_arrow()
        # Spark's Arrow reader takes string / binary, not Polars' large_string / string_view
        table = table.cast(pa.schema([pa.field(f.name, pa.string() if pa.types.is_large_string(f.type) or pa.types.is_string_view(f.type)
                                               else f.type, f.nullable) for f in table.schema]))
        self.statements.append(S.spark_table_log(target, table.num_rows))
        try:
            df = self.session.createDataFrame(table)
            df.write.format("parquet").mode("errorifexists").saveAsTable(target)
        except PySparkException as exc:
            raise ConnectorError(f"Spark refused to create {target} from a frame: {_message(exc)}") from exc

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Spark has no transactions: statements take effect one by one, nothing is rolled back
        (hence no ``transactional_ddl``; see the module docstring for why ppdp stays safe)."""
        yield

    def relation_columns(self, schema: str, name: str) -> list[tuple[str, str]] | None:
        try:
            fields = self.session.table(S.spark_table(schema, name)).schema.fields
        except PySparkException:
            return None
        return [(f.name, f.dataType.simpleString().upper()) for f in fields]

    # -- run lock --------------------------------------------------------------------------

    def _lock_path(self, name: str) -> Path | None:
        local = _local_dir(self.session.conf.get("spark.sql.warehouse.dir"))
        if local is None:
            return None
        folder = local / ".ppdp_locks"
        folder.mkdir(parents=True, exist_ok=True)
        return folder / (hashlib.blake2b(name.encode(), digest_size=8).hexdigest() + ".lock")

    def try_lock(self, name: str) -> bool:
        """An flock on a file of a local warehouse (this machine's processes only; released when the
        process dies); no lock without a local warehouse (one ppdp process per release)."""
        path = self._lock_path(name)
        if path is None:
            return True
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._locks[name] = fd
        return True

    def unlock(self, name: str) -> None:
        fd = self._locks.pop(name, None)
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def lock_transaction(self, name: str) -> None:
        """Nothing: Spark has no transactions to hold a lock for (its statements stand alone)."""
        return None

    def identity(self) -> str:
        """The session's warehouse location and catalog implementation (where its tables live)."""
        conf = self.session.conf
        # no '' default: Spark 4 validates a default against the option's allowed values
        warehouse = conf.get("spark.sql.warehouse.dir", None) or ""
        catalog = conf.get("spark.sql.catalogImplementation", None) or ""
        return f"spark:{warehouse}|{catalog}"

    def close(self) -> None:
        """Release this connector's locks. The session stays: it is the process's, shared by
        every connector of it (and starting one costs seconds); it stops with the process."""
        for name in list(self._locks):
            self.unlock(name)
