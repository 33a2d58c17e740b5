"""ppdp's private state in the database: schema ``_ppdp`` (never part of a published copy).

Tables (SQL in sql/catalog.py): ``releases`` (identity, output schema and name, row-hash salt),
``hierarchies`` (every hierarchy of every version, long format), ``suppressed`` (keys withheld
from each version), ``row_ids`` / ``row_state`` (random row ids per source key, salted row hashes
at the last release), ``distributions`` (the source's sensitive distribution per version),
``runs`` (one row per run) and ``jobs``.

A release's identity is its output schema and name together (``release_id``): two releases
with the same name in different schemas never share state.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any, cast

import polars as pl

from ppdp.connectors.base import Connector
from ppdp.errors import SpecError
from ppdp.redact import redact_text, redact_value
from ppdp.sql import catalog as C
from ppdp.sql.dialect import DUCKDB
from ppdp.sql.history import SA_KEY_FORMAT, tuple_key
from ppdp.sql.quoting import quote_table

PRIVATE_SCHEMA = C.PRIVATE_SCHEMA


def release_id(schema: str, name: str) -> str:
    """The identity of the release published as ``schema.name`` (both quoted: unambiguous). One
    text on every database (DuckDB's quoting), as stored in ``_ppdp``."""
    return quote_table(schema, name, DUCKDB)


@dataclass(frozen=True)
class RunRecord:
    """One row of ``_ppdp.runs``."""

    run_id: str
    release: str
    version: int | None
    status: str  # running, succeeded, failed, skipped, dry-run
    started_at: Any
    finished_at: Any
    source_rows: int | None
    spec: dict[str, Any]
    solution: dict[str, Any]
    metrics: dict[str, Any]
    verification: dict[str, Any]
    error: str | None
    job: str | None = None
    run_key: str | None = None
    source_fingerprint: str | None = None
    changes: dict[str, Any] | None = None
    cross_version: dict[str, Any] | None = None

    @property
    def published_version(self) -> int:
        """The version this run published. Every run ``published_runs`` returns has one (it keeps
        only those), and so do ``latest_success`` and a RunContext's ``previous``; a run still
        running or a failed one does not."""
        if self.version is None:
            raise ValueError(f"run {self.run_id} of release {self.release} published no version")
        return self.version


CATALOG_LOCK = "ppdp-catalog"  # the private schema's creation and upgrades, one session at a time


def ensure_schema(con: Connector) -> None:
    """The private schema's tables (those missing created), and what an older ppdp stored in
    them brought to this one's formats (``upgrade_sa_keys``). Call within a transaction. Runs of
    different releases may do this at once: under CATALOG_LOCK, the second waits for the first's
    commit, then finds its schema, tables and format (on PostgreSQL, two CREATE SCHEMA IF NOT
    EXISTS at once fail the second on a duplicate key, and two rewrites would store Q twice)."""
    con.lock_transaction(CATALOG_LOCK)
    for stmt in C.ddl(con.dialect):
        con.execute(stmt)
    upgrade_sa_keys(con)


def sa_key_format(con: Connector) -> int:
    """The format of the sensitive-value keys stored with Q (sql/history.py SA_KEY_FORMAT): 1 for a
    catalog written before the format was recorded, 0 for a catalog without a ``formats`` table
    that stores no Q (nothing to rewrite)."""
    if con.relation_columns(PRIVATE_SCHEMA, "formats") is not None:
        rows = con.query(C.select_format(con.dialect), ["sa_key"])
        if rows.height:
            return int(rows["fmt"][0])
    if con.relation_columns(PRIVATE_SCHEMA, "distributions") is None:
        return 0
    return 1 if int(con.query(C.count_distribution_rows(con.dialect))["n"][0]) else 0


def upgrade(con: Connector) -> None:
    """``ensure_schema`` in a transaction of its own when the catalog stores keys of an older
    format: what a run does first, under its lock, so that a run that publishes nothing (its
    key unchanged) upgrades the catalog too."""
    if sa_key_format(con) not in (0, SA_KEY_FORMAT):
        with con.transaction():
            ensure_schema(con)


def require_current_sa_keys(con: Connector) -> None:
    """Raise unless the stored Q's keys are in this ppdp's format (a read-only check of a
    catalog written by an older ppdp, which would otherwise match no stored value)."""
    found = sa_key_format(con)
    if found not in (0, SA_KEY_FORMAT):
        raise SpecError(f"The catalog in {con.url} stores the keys of its sensitive values in an older format ({found}; "
                        f"this ppdp reads {SA_KEY_FORMAT}). Hint: 'ppdp init --db ...' or any run rewrites them from the "
                        "stored values; no published version changes.")


def upgrade_sa_keys(con: Connector) -> None:
    """Rewrite every stored Q's keys in the current format and record it. The keys are md5s of
    the values' escaped texts (sql/history.py tuple_key); each row also stores its value (JSON of
    the joint value's texts), which the new key is computed from, so the rewrite is exact. Versions
    verified before the rewrite verify the same after it: only the name of each value changes."""
    if sa_key_format(con) == SA_KEY_FORMAT:
        return
    d = con.dialect
    stored = con.query(C.select_all_distributions(d))
    if stored.height:
        keys = [tuple_key(json.loads(v)) for v in stored["sa_value"].to_list()]
        stage = f"q_upgrade_{secrets.token_hex(8)}"
        con.write_frame(PRIVATE_SCHEMA, stage, stored.select(
            "release", "version", pl.Series("sa_key", keys, dtype=pl.String), "sa_value", "q"))
        con.execute(C.delete_all("distributions", d))
        con.execute(C.copy_staged("distributions", stage, d))
        con.execute(C.drop_private(stage, d))
    con.execute(C.insert_format(d), ["sa_key", SA_KEY_FORMAT])


def has_catalog(con: Connector) -> bool:
    return con.relation_columns(PRIVATE_SCHEMA, "runs") is not None


def next_version(con: Connector, release: str) -> int:
    v = con.query(C.max_version(con.dialect), [release])["v"][0]
    return 1 if v is None else int(v) + 1


def release_salt(con: Connector, release: str, schema: str, name: str) -> str:
    """The release's secret salt for source row hashes, created on first use."""
    rows = con.query(C.select_release(con.dialect), [release])
    if rows.height:
        return str(rows["salt"][0])
    salt = secrets.token_hex(16)
    con.execute(C.insert_release(con.dialect), [release, schema, name, salt])
    return salt


def resolve_release(con: Connector, name: str) -> str:
    """A release identity from what a user typed: ``schema.name``, the identity, or a bare name
    that only one release uses. SpecError when none or several match."""
    if not has_catalog(con) or con.relation_columns(PRIVATE_SCHEMA, "releases") is None:
        raise SpecError(f"No published release named {name!r} in {con.url}.")
    candidates = [name]
    if "." in name and not name.startswith('"'):
        schema, _, short = name.partition(".")
        candidates.append(release_id(schema, short))
    for c in candidates:
        rows = con.query(C.select_release(con.dialect), [c])
        if rows.height:
            return c
    rows = con.query(C.releases_named(con.dialect), [name, name])
    found = rows["release"].to_list()
    if len(found) == 1:
        return found[0]
    if not found:
        raise SpecError(f"No published release named {name!r} in {con.url}. Hint: 'ppdp runs' lists the releases.")
    raise SpecError(f"Several releases are named {name!r} ({', '.join(found)}). Hint: give it as schema.name.")


def _row(rec: RunRecord) -> list[Any]:
    """The stored row; the spec and the error never hold a URL's password."""
    return [rec.run_id, rec.release, rec.version, rec.status, rec.started_at, rec.finished_at, rec.source_rows,
            json.dumps(redact_value(rec.spec), default=str), json.dumps(rec.solution, default=str), json.dumps(rec.metrics, default=str),
            json.dumps(rec.verification, default=str), None if rec.error is None else redact_text(rec.error), rec.job, rec.run_key, rec.source_fingerprint,
            json.dumps(rec.changes or {}, default=str), json.dumps(rec.cross_version or {}, default=str)]


def insert_run(con: Connector, rec: RunRecord) -> None:
    con.execute(C.insert_run(con.dialect), _row(rec))


def update_run(con: Connector, rec: RunRecord) -> None:
    """Replace a run's row (running -> succeeded/failed)."""
    con.execute(C.delete_run(con.dialect), [rec.run_id])
    insert_run(con, rec)


def mark_abandoned(con: Connector, release: str) -> int:
    """Runs left "running" by a process that died: the caller holds the run lock, so no live
    run of this release exists. They become "failed" with a note."""
    n = int(con.query(C.count_running(con.dialect), [release])["n"][0])
    if n:
        con.execute(C.mark_abandoned(con.dialect), [release])
    return n


def list_runs(con: Connector, release: str | None = None) -> list[RunRecord]:
    if not has_catalog(con):
        return []
    df = con.query(C.select_runs(con.dialect, by_release=release is not None), [release] if release else [])
    out = []
    for r in df.iter_rows(named=True):
        out.append(RunRecord(
            run_id=r["run_id"], release=r["release"], version=r["version"], status=r["status"],
            started_at=r["started_at"], finished_at=r["finished_at"], source_rows=r["source_rows"],
            spec=json.loads(r["spec"] or "{}"), solution=json.loads(r["solution"] or "{}"),
            metrics=json.loads(r["metrics"] or "{}"), verification=json.loads(r["verification"] or "{}"), error=r["error"],
            job=r["job"], run_key=r["run_key"], source_fingerprint=r["source_fingerprint"],
            changes=json.loads(r["changes"] or "{}"), cross_version=json.loads(r["cross_version"] or "{}"),
        ))
    return out


def published_runs(con: Connector, release: str) -> list[RunRecord]:
    """The runs that published a version, oldest first."""
    return sorted((r for r in list_runs(con, release) if r.status == "succeeded" and r.version is not None),
                  key=lambda r: cast(int, r.version))  # (None filtered out above)


def latest_success(con: Connector, release: str) -> RunRecord | None:
    """The run that published the current version (dry runs publish nothing)."""
    runs = published_runs(con, release)
    return runs[-1] if runs else None


def append_version_rows(con: Connector, table: str, release: str, version: int, frame: pl.DataFrame, run_id: str) -> None:
    """Append ``frame``'s rows to ``_ppdp.<table>`` under (release, version): staged as a frame
    (one bulk write), then copied in SQL, so no row travels as a statement parameter."""
    stage = f"{table}_{run_id}"
    tagged = frame.select(pl.lit(release).alias("release"), pl.lit(int(version), dtype=pl.Int32).alias("version"), pl.all())
    con.write_frame(PRIVATE_SCHEMA, stage, tagged)
    con.execute(C.copy_staged(table, stage, con.dialect))
    con.execute(C.drop_private(stage, con.dialect))


def store_hierarchies(con: Connector, release: str, version: int, hierarchies, run_id: str) -> None:
    """A version's hierarchies in ``_ppdp.hierarchies`` (long format: the SQL joins read them)."""
    rows = [(h.attribute, lvl, leaf, value, cnt) for h in hierarchies for (lvl, leaf, value, cnt) in h.long_rows()]
    if not rows:
        return
    frame = pl.DataFrame(rows, schema={"attribute": pl.String, "level": pl.Int32, "leaf": pl.String, "value": pl.String,
                                       "leaf_count": pl.Int64}, orient="row")
    append_version_rows(con, "hierarchies", release, version, frame, run_id)


def store_distribution(con: Connector, release: str, version: int, distribution: pl.DataFrame, run_id: str) -> None:
    """Q of version ``version``: a frame of sa_key, sa_value (JSON of the joint value), q."""
    stage = f"q_{run_id}"
    con.write_frame(PRIVATE_SCHEMA, stage, distribution.select("sa_key", "sa_value", "q"))
    con.execute(C.insert_distribution(stage, con.dialect), [release, version])
    con.execute(C.drop_private(stage, con.dialect))


def stored_distribution(con: Connector, release: str, version: int) -> pl.DataFrame:
    """The (sa_key, sa_value, q) stored for a version (empty when none), each key computed from its
    value: the current format's even where a catalog not yet upgraded stores an older one
    (``upgrade_sa_keys``), as a run reads Q before it writes anything."""
    stored = con.query(C.select_distribution(con.dialect), [release, version])
    keys = [tuple_key(json.loads(v)) for v in stored["sa_value"].to_list()]
    return stored.with_columns(pl.Series("sa_key", keys, dtype=pl.String))


def version_risks(con: Connector, release: str) -> list[dict[str, Any]]:
    """The stored risk of each published version of ``release`` (``_ppdp.risk``):
    version, run id, QIDs, and the source's and the version's measures as ``ppdp risk --json``
    objects (the release's None when the method's rows are not classes), and the kept-columns check."""
    if con.relation_columns(PRIVATE_SCHEMA, "risk") is None:
        return []
    out = []
    for row in con.query(C.select_risk(con.dialect), [release]).iter_rows(named=True):
        out.append({"version": int(row["version"]), "run_id": row["run_id"], "columns": json.loads(row["columns"]),
                    "source": json.loads(row["source"]), "release": json.loads(row["released"]),
                    "kept_columns": json.loads(row["kept_columns"])})
    return out
