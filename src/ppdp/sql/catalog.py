"""SQL of ppdp's private schema ``_ppdp``: its tables and the statements on them.

Every table is keyed by ``release``, the release identity: the output schema and name quoted
together (``"published"."adult"``), so two releases that share a name in different schemas never
share state. Values are always bound parameters; the only identifiers are ppdp's own.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp

from ppdp.sql.dialect import Dialect
from ppdp.sql.quoting import quote_ident, quote_table, table_expr

PRIVATE_SCHEMA = "_ppdp"

RUN_COLUMNS = ("run_id", "release", "version", "status", "started_at", "finished_at", "source_rows", "spec", "solution",
               "metrics", "verification", "error", "job", "run_key", "source_fingerprint", "changes", "cross_version")


def private(table: str, d: Dialect) -> str:
    """``_ppdp.<table>``, quoted for dialect ``d``."""
    return quote_table(PRIVATE_SCHEMA, table, d)


def private_table(table: str, alias: str | None = None) -> exp.Table:
    """``_ppdp.<table>`` as a sqlglot table."""
    return table_expr(PRIVATE_SCHEMA, table, alias)


def version_rows(table: str, release: str, version: int | list[int], *columns: str, distinct: bool = False) -> exp.Select:
    """SELECT ``columns`` (all: none given) of private table ``table`` for one release and one
    version (or several): the release name is a user value, a sqlglot string literal here."""
    of_version: exp.Expr
    if isinstance(version, int):
        of_version = exp.column("version").eq(exp.Literal.number(int(version)))
    else:
        of_version = exp.column("version").isin(*[exp.Literal.number(int(v)) for v in version])
    cond = exp.and_(exp.column("release").eq(exp.Literal.string(release)), of_version)
    projection: list[exp.Expr] = [exp.column(c) for c in columns] or [exp.Star()]
    return exp.select(*projection).from_(private_table(table)).where(cond).distinct(distinct=distinct)


def ddl(d: Dialect) -> list[str]:
    """CREATE statements of the private schema (idempotent)."""
    p = lambda t: private(t, d)  # noqa: E731
    return [
        f"CREATE SCHEMA IF NOT EXISTS {quote_ident(PRIVATE_SCHEMA, d)}",
        f"CREATE TABLE IF NOT EXISTS {p('hierarchies')} ("
        "release VARCHAR NOT NULL, version INTEGER NOT NULL, attribute VARCHAR NOT NULL, level INTEGER NOT NULL, "
        "leaf VARCHAR NOT NULL, value VARCHAR NOT NULL, leaf_count BIGINT NOT NULL, "
        # The key's index serves the release SELECT's one join per QID (PostgreSQL would otherwise
        # nest loops over scans of this table) and forbids duplicate leaves (they would duplicate rows).
        "PRIMARY KEY (release, version, attribute, level, leaf))",
        f"CREATE TABLE IF NOT EXISTS {p('suppressed')} (release VARCHAR NOT NULL, version INTEGER NOT NULL, key VARCHAR NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {p('runs')} ("
        "run_id VARCHAR PRIMARY KEY, release VARCHAR NOT NULL, version INTEGER, status VARCHAR NOT NULL, "
        "started_at TIMESTAMP NOT NULL, finished_at TIMESTAMP, source_rows BIGINT, spec VARCHAR, solution VARCHAR, "
        "metrics VARCHAR, verification VARCHAR, error VARCHAR, job VARCHAR, run_key VARCHAR, source_fingerprint VARCHAR, "
        "changes VARCHAR, cross_version VARCHAR)",
        # Release jobs registered in the database (docs/guides/jobs.md); spec is the JSON form.
        f"CREATE TABLE IF NOT EXISTS {p('jobs')} ("
        "name VARCHAR PRIMARY KEY, spec VARCHAR NOT NULL, created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, "
        "updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, enabled BOOLEAN DEFAULT TRUE)",
        # One row per release: where it publishes and the secret salt of its source row hashes.
        f"CREATE TABLE IF NOT EXISTS {p('releases')} ("
        "release VARCHAR PRIMARY KEY, output_schema VARCHAR NOT NULL, output_name VARCHAR NOT NULL, salt VARCHAR NOT NULL)",
        # Stable random release row ids per source key, and the salted row hash at the last release.
        # No key index: keys are unique by construction (new ones only, under the run lock) and
        # every use is a bulk hash join; maintaining the index cost half the insert on PostgreSQL.
        f"CREATE TABLE IF NOT EXISTS {p('row_ids')} ("
        "release VARCHAR NOT NULL, key VARCHAR NOT NULL, row_id VARCHAR NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {p('row_state')} (release VARCHAR NOT NULL, key VARCHAR NOT NULL, row_hash VARCHAR NOT NULL)",
        # The source's sensitive-value distribution Q at each version (t-closeness is checked
        # against what was true when the version was published, not against today's source).
        # Re-identification risk of each version: the source's and the release's
        # measures side by side (JSON of ppdp risk --json), and the kept-columns check.
        f"CREATE TABLE IF NOT EXISTS {p('risk')} ("
        "release VARCHAR NOT NULL, version INTEGER NOT NULL, run_id VARCHAR NOT NULL, columns VARCHAR NOT NULL, "
        "source VARCHAR NOT NULL, released VARCHAR NOT NULL, kept_columns VARCHAR NOT NULL)",
        # Utility of each version (JSON of ppdp utility --json), beside its risk.
        f"CREATE TABLE IF NOT EXISTS {p('utility')} ("
        "release VARCHAR NOT NULL, version INTEGER NOT NULL, run_id VARCHAR NOT NULL, measures VARCHAR NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {p('distributions')} ("
        "release VARCHAR NOT NULL, version INTEGER NOT NULL, sa_key VARCHAR NOT NULL, sa_value VARCHAR NOT NULL, "
        "q DOUBLE PRECISION NOT NULL)",
        # The format of what the catalog stores computed by ppdp (name -> number): a catalog written
        # by an older ppdp lacks a row, and engine/core/catalog.py rewrites what it stored then.
        f"CREATE TABLE IF NOT EXISTS {p('formats')} (name VARCHAR PRIMARY KEY, fmt INTEGER NOT NULL)",
    ]


def insert_risk(d: Dialect) -> str:
    """INSERT of one version's risk row (release, version, run_id, columns, source, released, kept_columns)."""
    return f"INSERT INTO {private('risk', d)} VALUES (?, ?, ?, ?, ?, ?, ?)"


def insert_utility(d: Dialect) -> str:
    """INSERT of one version's utility row (release, version, run_id, measures)."""
    return f"INSERT INTO {private('utility', d)} VALUES (?, ?, ?, ?)"


def select_utility(d: Dialect) -> str:
    return f"SELECT * FROM {private('utility', d)} WHERE release = ? ORDER BY version"


def select_risk(d: Dialect) -> str:
    return f"SELECT * FROM {private('risk', d)} WHERE release = ? ORDER BY version"


def insert_run(d: Dialect) -> str:
    """INSERT of one run row (17 parameters in RUN_COLUMNS order)."""
    return f"INSERT INTO {private('runs', d)} VALUES ({', '.join('?' for _ in RUN_COLUMNS)})"


def delete_run(d: Dialect) -> str:
    return f"DELETE FROM {private('runs', d)} WHERE run_id = ?"


def select_runs(d: Dialect, *, by_release: bool) -> str:
    where = "WHERE release = ? " if by_release else ""
    return f"SELECT * FROM {private('runs', d)} {where}ORDER BY started_at"


def count_running(d: Dialect) -> str:
    return f"SELECT COUNT(*) AS n FROM {private('runs', d)} WHERE release = ? AND status = 'running'"


def mark_abandoned(d: Dialect) -> str:
    return (f"UPDATE {private('runs', d)} SET status = 'failed', finished_at = CURRENT_TIMESTAMP, "
            "error = 'abandoned: the process ended before the run finished; nothing was published' "
            "WHERE release = ? AND status = 'running'")


def max_version(d: Dialect) -> str:
    return f"SELECT MAX(version) AS v FROM {private('runs', d)} WHERE release = ? AND status = 'succeeded'"


def select_release(d: Dialect) -> str:
    return f"SELECT release, output_schema, output_name, salt FROM {private('releases', d)} WHERE release = ?"


def insert_release(d: Dialect) -> str:
    return f"INSERT INTO {private('releases', d)} (release, output_schema, output_name, salt) VALUES (?, ?, ?, ?)"


def releases_named(d: Dialect) -> str:
    """Release identities whose output name (or identity) is ``?``."""
    return f"SELECT release FROM {private('releases', d)} WHERE output_name = ? OR release = ? ORDER BY release"


def insert_distribution(stage: str, d: Dialect) -> str:
    """Copy a staged (sa_key, sa_value, q) frame as a version's Q (params: release, version)."""
    return (f"INSERT INTO {private('distributions', d)} (release, version, sa_key, sa_value, q) "
            f"SELECT ?, ?, s.sa_key, s.sa_value, s.q FROM {private(stage, d)} AS s")


def select_distribution(d: Dialect) -> str:
    return f"SELECT sa_key, sa_value, q FROM {private('distributions', d)} WHERE release = ? AND version = ?"


def select_format(d: Dialect) -> str:
    return f"SELECT fmt FROM {private('formats', d)} WHERE name = ?"


def insert_format(d: Dialect) -> str:
    return f"INSERT INTO {private('formats', d)} (name, fmt) VALUES (?, ?)"


def select_all_distributions(d: Dialect) -> str:
    """Every stored Q row (release, version, sa_value, q), to rewrite their keys."""
    return f"SELECT release, version, sa_value, q FROM {private('distributions', d)}"


def count_distribution_rows(d: Dialect) -> str:
    return f"SELECT COUNT(*) AS n FROM {private('distributions', d)}"


def delete_all(table: str, d: Dialect) -> str:
    return f"DELETE FROM {private(table, d)}"


def delete_rows_of_release(table: str, d: Dialect) -> str:
    return f"DELETE FROM {private(table, d)} WHERE release = ?"


def copy_staged(target: str, stage: str, d: Dialect) -> str:
    """Append a staging table of the private schema to ``target`` (same columns)."""
    return f"INSERT INTO {private(target, d)} SELECT * FROM {private(stage, d)}"


def drop_private(table: str, d: Dialect, *, if_exists: bool = False) -> str:
    return f"DROP TABLE {'IF EXISTS ' if if_exists else ''}{private(table, d)}"


def insert_suppressed(keys_select: str, d: Dialect) -> str:
    """Record the keys a SELECT returns (column ``key``) as suppressed (params: release, version)."""
    return f"INSERT INTO {private('suppressed', d)} SELECT ?, ?, k.key FROM ({keys_select}) AS k"


def new_row_ids(source_keys: str, d: Dialect) -> str:
    """Give every key a SELECT returns (column ``key``) without a row id a random one (param:
    release twice). An anti-join PostgreSQL plans with hashes (no NOT IN)."""
    ids = private("row_ids", d)
    return (f"INSERT INTO {ids} (release, key, row_id) SELECT ?, s.key, CAST(gen_random_uuid() AS VARCHAR) "
            f"FROM ({source_keys}) AS s WHERE NOT EXISTS (SELECT 1 FROM {ids} AS r WHERE r.release = ? AND r.key = s.key)")


def replace_row_state(state_select: str, d: Dialect) -> list[str]:
    """The source's (key, salted row hash) at this release (params: release; release)."""
    return [f"DELETE FROM {private('row_state', d)} WHERE release = ?",
            f"INSERT INTO {private('row_state', d)} SELECT ?, s.key, s.row_hash FROM ({state_select}) AS s"]


def changes(state_select: str, d: Dialect) -> str:
    """Inserted, deleted and updated source rows since the last release (param: release)."""
    return (
        "SELECT COALESCE(SUM(CASE WHEN o.key IS NULL THEN 1 ELSE 0 END), 0) AS inserted, "
        "COALESCE(SUM(CASE WHEN n.key IS NULL THEN 1 ELSE 0 END), 0) AS deleted, "
        "COALESCE(SUM(CASE WHEN o.key IS NOT NULL AND n.key IS NOT NULL AND o.row_hash <> n.row_hash THEN 1 ELSE 0 END), 0) AS updated "
        f"FROM ({state_select}) AS n FULL OUTER JOIN "
        f"(SELECT key, row_hash FROM {private('row_state', d)} WHERE release = ?) AS o ON n.key = o.key"
    )


def reverts_table(name: str, d: Dialect) -> str:
    return f"CREATE TABLE {private(name, d)} (row_id VARCHAR NOT NULL, action VARCHAR NOT NULL)"


def salted_state_select(source_from: str, key: str, columns: list[str], d: Dialect,
                        types: Mapping[str, str] | None = None) -> str:
    """(key text, md5 of the release's secret salt and the row's text) of every source row
    (param: salt). Salted, so a copy of ``_ppdp`` cannot be matched against guessed rows.
    ``types``: the columns' described SQL types (queries.row_text_expr)."""
    from ppdp.sql.queries import row_text_expr, text

    key_text = text(key, 'src', dialect=d, sql_type=(types or {}).get(key))
    return f"SELECT {key_text} AS key, md5(? || {row_text_expr(columns, d, types)}) AS row_hash FROM {source_from}"


def source_keys(source_from: str, key: str, d: Dialect) -> str:
    from ppdp.sql.queries import text

    return f"SELECT {text(key, 'src', dialect=d)} AS key FROM {source_from}"


def insert_withheld(reverts: str, d: Dialect) -> str:
    """Record as suppressed the keys of candidate rows withheld for cross-version privacy
    (params: release, version, release)."""
    return (f"INSERT INTO {private('suppressed', d)} SELECT ?, ?, i.key FROM {private('row_ids', d)} AS i "
            f"WHERE i.release = ? AND EXISTS (SELECT 1 FROM {reverts} AS r WHERE r.row_id = i.row_id AND r.action = 'withhold')")


def unsuppress_carried(reverts: str, d: Dialect) -> str:
    """Keys whose previous row stands in this version are published, not suppressed (params:
    release, version, release)."""
    return (f"DELETE FROM {private('suppressed', d)} WHERE release = ? AND version = ? AND key IN "
            f"(SELECT i.key FROM {private('row_ids', d)} AS i JOIN {reverts} AS r ON r.row_id = i.row_id "
            "WHERE i.release = ? AND r.action IN ('carry', 'keep'))")


def version_hierarchies(d: Dialect) -> str:
    """A version's hierarchy rows (params: release, version)."""
    return (f"SELECT release, version, attribute, level, leaf, value, leaf_count FROM {private('hierarchies', d)} "
            "WHERE release = ? AND version = ? ORDER BY attribute, level, leaf")


def version_suppressed(d: Dialect) -> str:
    return f"SELECT release, version, key FROM {private('suppressed', d)} WHERE release = ? AND version = ? ORDER BY key"


def release_row_ids(d: Dialect) -> str:
    return f"SELECT release, key, row_id FROM {private('row_ids', d)} WHERE release = ? ORDER BY key"


# -- release jobs (engine/app/jobs.py): one row of _ppdp.jobs per job, keyed by name -------------------

def delete_job(d: Dialect) -> str:
    """Remove the job named ``?`` (registering a job replaces one of the same name)."""
    return f"DELETE FROM {private('jobs', d)} WHERE name = ?"


def insert_job(d: Dialect) -> str:
    """Store an enabled job (params: name, spec JSON); the timestamps take their defaults."""
    return f"INSERT INTO {private('jobs', d)} (name, spec, enabled) VALUES (?, ?, TRUE)"


def select_job(d: Dialect) -> str:
    """name, spec and enabled of the job named ``?``."""
    return f"SELECT name, spec, enabled FROM {private('jobs', d)} WHERE name = ?"


def select_job_spec(d: Dialect) -> str:
    """The spec JSON of the job named ``?``."""
    return f"SELECT spec FROM {private('jobs', d)} WHERE name = ?"


def list_jobs(d: Dialect) -> str:
    """Every job with its state and timestamps, by name."""
    return f"SELECT name, enabled, created_at, updated_at FROM {private('jobs', d)} ORDER BY name"


# The shared private tables holding per-version rows (release, version, ...); each release
# method declares its own (``ReleaseMethod.private_tables``).
VERSIONED_TABLES = ("hierarchies", "suppressed", "distributions", "risk", "utility")


def delete_unpublished_versions(table: str, d: Dialect) -> str:
    """Remove a release's rows of versions from ``?`` on (params: release, version): what a run
    that failed without a rollback (Spark) left for a version number the next run reuses."""
    return f"DELETE FROM {private(table, d)} WHERE release = ? AND version >= ?"


def count_unpublished_versions(table: str, d: Dialect) -> str:
    """How many rows ``delete_unpublished_versions`` would remove (params: release, version)."""
    return f"SELECT COUNT(*) AS n FROM {private(table, d)} WHERE release = ? AND version >= ?"


def count_other_runs(d: Dialect) -> str:
    """One row: the number of runs of other releases than the bound one recorded in the private schema."""
    return f"SELECT COUNT(*) AS n FROM {private('runs', d)} WHERE release <> ?"


def drop_private_schema(d: Dialect) -> str:
    """DROP ppdp's private schema and all it holds (a failed first run's leftovers)."""
    return f"DROP SCHEMA IF EXISTS {quote_ident(PRIVATE_SCHEMA, d)} CASCADE"
