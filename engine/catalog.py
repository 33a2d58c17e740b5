"""ppdp's private state in the database: schema ``_ppdp`` (never part of a published copy).

Tables: ``hierarchies`` (every hierarchy of every release version, long format), ``suppressed``
(keys withheld from each version), ``runs`` (one row per run, succeeded or failed), and
per-run staging tables that are dropped after use.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from connectors.base import Connector
from sql.queries import PRIVATE_SCHEMA
from sql.quoting import quote_ident, quote_table

DDL = [
    f"CREATE SCHEMA IF NOT EXISTS {quote_ident(PRIVATE_SCHEMA)}",
    f"CREATE TABLE IF NOT EXISTS {quote_table(PRIVATE_SCHEMA, 'hierarchies')} ("
    "release VARCHAR NOT NULL, version INTEGER NOT NULL, attribute VARCHAR NOT NULL, level INTEGER NOT NULL, "
    "leaf VARCHAR NOT NULL, value VARCHAR NOT NULL, leaf_count BIGINT NOT NULL, "
    # The key's index serves the release SELECT's one join per QID (PostgreSQL would otherwise
    # nest loops over scans of this table) and forbids duplicate leaves (they would duplicate rows).
    "PRIMARY KEY (release, version, attribute, level, leaf))",
    f"CREATE TABLE IF NOT EXISTS {quote_table(PRIVATE_SCHEMA, 'suppressed')} ("
    "release VARCHAR NOT NULL, version INTEGER NOT NULL, key VARCHAR NOT NULL)",
    f"CREATE TABLE IF NOT EXISTS {quote_table(PRIVATE_SCHEMA, 'runs')} ("
    "run_id VARCHAR PRIMARY KEY, release VARCHAR NOT NULL, version INTEGER, status VARCHAR NOT NULL, "
    "started_at TIMESTAMP NOT NULL, finished_at TIMESTAMP, source_rows BIGINT, spec VARCHAR, solution VARCHAR, "
    "metrics VARCHAR, verification VARCHAR, error VARCHAR, job VARCHAR, run_key VARCHAR, source_fingerprint VARCHAR, "
    "changes VARCHAR, cross_version VARCHAR)",
    # Release jobs registered in the database (README: "Release jobs"); spec is the JSON form.
    f"CREATE TABLE IF NOT EXISTS {quote_table(PRIVATE_SCHEMA, 'jobs')} ("
    "name VARCHAR PRIMARY KEY, spec VARCHAR NOT NULL, created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, "
    "updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, enabled BOOLEAN DEFAULT TRUE)",
    # Stable random release row ids per source key, and the row hash at the last release.
    f"CREATE TABLE IF NOT EXISTS {quote_table(PRIVATE_SCHEMA, 'row_ids')} ("
    "release VARCHAR NOT NULL, key VARCHAR NOT NULL, row_id VARCHAR NOT NULL, PRIMARY KEY (release, key))",
    f"CREATE TABLE IF NOT EXISTS {quote_table(PRIVATE_SCHEMA, 'row_state')} ("
    "release VARCHAR NOT NULL, key VARCHAR NOT NULL, row_hash VARCHAR NOT NULL)",
]


@dataclass(frozen=True)
class RunRecord:
    """One row of ``_ppdp.runs``."""

    run_id: str
    release: str
    version: int | None
    status: str  # running, succeeded, failed
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


def ensure_schema(con: Connector) -> None:
    for stmt in DDL:
        con.execute(stmt)


def has_catalog(con: Connector) -> bool:
    return con.relation_columns(PRIVATE_SCHEMA, "runs") is not None


def next_version(con: Connector, release: str) -> int:
    rows = con.query(f"SELECT MAX(version) AS v FROM {quote_table(PRIVATE_SCHEMA, 'runs')} WHERE release = ? AND status = 'succeeded'", [release])
    v = rows["v"][0]
    return 1 if v is None else int(v) + 1


def insert_run(con: Connector, rec: RunRecord) -> None:
    con.execute(
        f"INSERT INTO {quote_table(PRIVATE_SCHEMA, 'runs')} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [rec.run_id, rec.release, rec.version, rec.status, rec.started_at, rec.finished_at, rec.source_rows,
         json.dumps(rec.spec, default=str), json.dumps(rec.solution, default=str), json.dumps(rec.metrics, default=str),
         json.dumps(rec.verification, default=str), rec.error, rec.job, rec.run_key, rec.source_fingerprint,
         json.dumps(rec.changes or {}, default=str), json.dumps(rec.cross_version or {}, default=str)],
    )


def update_run(con: Connector, rec: RunRecord) -> None:
    """Replace a run's row (running -> succeeded/failed)."""
    con.execute(f"DELETE FROM {quote_table(PRIVATE_SCHEMA, 'runs')} WHERE run_id = ?", [rec.run_id])
    insert_run(con, rec)


def mark_abandoned(con: Connector, release: str) -> int:
    """Runs left "running" by a process that died: the caller holds the run lock, so no live
    run of this release exists. They become "failed" with a note."""
    runs = con.query(f"SELECT COUNT(*) AS n FROM {quote_table(PRIVATE_SCHEMA, 'runs')} WHERE release = ? AND status = 'running'", [release])
    n = int(runs["n"][0])
    if n:
        con.execute(
            f"UPDATE {quote_table(PRIVATE_SCHEMA, 'runs')} SET status = 'failed', finished_at = CURRENT_TIMESTAMP, "
            "error = 'abandoned: the process ended before the run finished; nothing was published' "
            "WHERE release = ? AND status = 'running'", [release])
    return n


def list_runs(con: Connector, release: str | None = None) -> list[RunRecord]:
    if not has_catalog(con):
        return []
    where, params = ("WHERE release = ?", [release]) if release else ("", [])
    df = con.query(f"SELECT * FROM {quote_table(PRIVATE_SCHEMA, 'runs')} {where} ORDER BY started_at", params)
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


def latest_success(con: Connector, release: str) -> RunRecord | None:
    """The run that published the current version (dry runs publish nothing)."""
    runs = [r for r in list_runs(con, release) if r.status == "succeeded" and r.version is not None]
    return max(runs, key=lambda r: r.version) if runs else None
