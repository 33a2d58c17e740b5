"""``ppdp worker``: serve release requests written to ``_ppdp.requests`` (sql/requests.py).

A SQL user who may not open a shell asks for a release with ``SELECT ppdp.request_run('job')``
(PostgreSQL) or an INSERT (DuckDB); a scheduler (pg_cron, any cron) can do the same. The worker:

1. claims the oldest claimable request in one short transaction (``FOR UPDATE SKIP LOCKED`` where
   the connector has it: two workers never take one request), marking it ``running`` with a
   lease;
2. runs the job once through the Python API (engine/app/api.py), while a heartbeat thread extends the
   lease; a worker killed mid-run stops renewing it, so the request becomes claimable again when
   the lease expires, and the run itself left nothing visible (its transaction died with it; the
   next run of the release marks the abandoned run row failed, engine/release/stages/record.py);
3. writes the outcome back: the run's status, ``run_id`` and one-line error.

A request whose release is being run by someone else (the run lock) is given back, not failed.
SIGINT/SIGTERM give the current request back too (retryable) and stop the worker.

DuckDB has no SKIP LOCKED and one writer per file: run one ``ppdp worker --once`` at a time
there (a second process cannot even open the file for writing while the first holds it).
"""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from ppdp.connectors import connect
from ppdp.connectors.base import DEFINER_FUNCTIONS, SKIP_LOCKED, Connector
from ppdp.engine.app.outcome import ExitCode, RunResult, result_of_error, result_of_outcome
from ppdp.engine.core import catalog
from ppdp.errors import ConnectorError, PpdpError, RunInProgress
from ppdp.sql import requests as R


@dataclass(frozen=True)
class Served:
    """One request as the worker left it."""

    request_id: str
    job: str
    status: str
    run_id: str | None
    version: int | None
    error: str | None


@dataclass(frozen=True)
class WorkerSummary:
    """What one ``ppdp worker`` process did (``--json``: data/schemas/worker.schema.json)."""

    status: str  # done, interrupted
    exit_code: ExitCode
    worker: str
    served: tuple[Served, ...]

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "exit_code": int(self.exit_code), "worker": self.worker,
                "served": [asdict(s) for s in self.served]}


def ensure_requests(con: Connector) -> None:
    """Create ``_ppdp`` (all of it) and the request table; on a database with definer functions
    also ``ppdp.request_run``. Idempotent; one transaction."""
    with con.transaction():
        catalog.ensure_schema(con)
        for stmt in R.ddl(con.dialect):
            con.execute(stmt)
        if DEFINER_FUNCTIONS in con.capabilities:
            for stmt in R.function_ddl(con.dialect):
                con.execute(stmt)


def _requests_ready(con: Connector) -> bool:
    if con.relation_columns(R.PRIVATE_SCHEMA, "requests") is None or con.relation_columns(R.PRIVATE_SCHEMA, "job_requesters") is None:
        return False  # (no job_requesters: made by an older ppdp, whose request_run let any EXECUTE holder request any job)
    return DEFINER_FUNCTIONS not in con.capabilities or bool(con.query(R.function_exists(con.dialect))["ok"][0])


def _ensure_once(con: Connector) -> None:
    """ensure_requests unless done already. Workers started together may race on the DDL
    (PostgreSQL: "tuple concurrently updated"): the loser finds it done by the winner."""
    if _requests_ready(con):
        return
    try:
        ensure_requests(con)
    except ConnectorError:
        time.sleep(1.0)
        if not _requests_ready(con):
            raise


def list_requests(con: Connector) -> list[dict[str, Any]]:
    """Every request, oldest first (tests and ``ppdp worker`` logs)."""
    return con.query(R.select_requests(con.dialect)).to_dicts()


def serve(db: str, *, once: bool = False, poll: float = 10.0, lease: float = 60.0,
          log: Callable[[str], None] = lambda line: None, worker: str | None = None) -> WorkerSummary:
    """Serve requests until interrupted, or (``once``) until none is claimable."""
    if poll <= 0 or lease <= 0:
        raise PpdpError(f"--poll and --lease must be positive seconds, got {poll} and {lease}.")
    name = worker or f"{socket.gethostname()}:{uuid.uuid4().hex[:8]}"
    con = connect(db, create=False)  # a mistyped DuckDB path is refused, as by run, not created
    served: list[Served] = []
    given_back: set[str] = set()
    try:
        _ensure_once(con)
        if not once:  # serving until interrupted: say so, once its signal handling is in place
            log(f"worker {name}: waiting for requests (polling every {poll:g} s)")
        while True:
            claimed = _claim(con, name, lease)
            if claimed is None or claimed[0] in given_back:
                if claimed is not None:  # only requests we gave back are left: leave them for later
                    _give_back(con, claimed[0], name, "the release was busy; retry")
                if once:
                    break
                given_back.clear()
                time.sleep(poll)
                continue
            request_id, job = claimed
            log(f"worker {name}: request {request_id} job {job!r}: running")
            try:
                with _Heartbeat(db, request_id, name, lease, enabled=SKIP_LOCKED in con.capabilities):
                    result = _run(job, db)
            except KeyboardInterrupt:
                _give_back(con, request_id, name, "interrupted; retryable")
                log(f"worker {name}: interrupted; request {request_id} is retryable")
                return WorkerSummary("interrupted", ExitCode.INTERRUPTED, name, tuple(served))
            if result is None:  # the release's run lock is held by another run
                _give_back(con, request_id, name, "the release was busy; retry")
                given_back.add(request_id)
                continue
            _finish(con, request_id, name, result)
            served.append(Served(request_id, job, result.status, result.run_id, result.version, result.error))
            log(f"worker {name}: request {request_id} job {job!r}: {result.status}"
                + (f" v{result.version}" if result.version else "") + (f" ({result.error})" if result.error else ""))
    finally:
        con.close()
    return WorkerSummary("done", ExitCode.PUBLISHED, name, tuple(served))


def _run(job: str, db: str) -> RunResult | None:
    """The job's RunResult; None when the release is being run by someone else. A bug in one job
    is written back as internal_error and does not stop the worker."""
    from ppdp.engine.app import jobs

    try:
        outcome = jobs.run_job(db, job, progress=False)
    except RunInProgress:
        return None
    except Exception as exc:  # noqa: BLE001 - recorded on the request row, the worker serves on
        return result_of_error(exc, job=job)
    return result_of_outcome(outcome)


def _claim(con: Connector, worker: str, lease: float) -> tuple[str, str] | None:
    with con.transaction():  # short: only the claim, committed before the run starts
        rows = con.query(R.claim(con.dialect, skip_locked=SKIP_LOCKED in con.capabilities), [worker, int(lease * 1e6)])
    if rows.height == 0:
        return None
    return str(rows["request_id"][0]), str(rows["job"][0])


def _finish(con: Connector, request_id: str, worker: str, result: RunResult) -> None:
    with con.transaction():
        con.execute(R.finish(con.dialect), [result.status, result.run_id, result.error, request_id, worker])


def _give_back(con: Connector, request_id: str, worker: str, why: str) -> None:
    with con.transaction():
        con.execute(R.release_claim(con.dialect), [why, request_id, worker])


class _Heartbeat:
    """Extends the lease every third of it on a connection of its own, while the job runs."""

    def __init__(self, db: str, request_id: str, worker: str, lease: float, *, enabled: bool) -> None:
        self.args = (db, request_id, worker, lease)
        self.enabled = enabled
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._beat, name="ppdp-heartbeat", daemon=True)

    def __enter__(self) -> _Heartbeat:
        if self.enabled:
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        if self.enabled:
            self.thread.join()

    def _beat(self) -> None:
        db, request_id, worker, lease = self.args
        con = connect(db)
        try:
            while not self.stop.wait(lease / 3):
                with con.transaction():
                    con.execute(R.heartbeat(con.dialect), [int(lease * 1e6), request_id, worker])
        except PpdpError:  # the database went away: the lease lapses, the request is retried
            pass
        finally:
            con.close()
