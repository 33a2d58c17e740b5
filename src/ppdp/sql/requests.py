"""SQL of release requests: the table ``_ppdp.requests``, the claim with a lease, and, on
PostgreSQL, the function ``ppdp.request_run(job)`` a role may EXECUTE with no other right.

A request is a row: ``job``, ``requested_by``, ``requested_at``, ``status`` (requested ->
running -> the run's outcome: published, skipped, refused, error, verification_failed,
internal_error), ``run_id``, ``error``; the worker's bookkeeping: ``worker``, ``attempts``,
``started_at``, ``heartbeat_at``, ``lease_until``, ``finished_at``. A ``running`` row whose lease
has expired belongs to a worker that died: it is claimed again like a ``requested`` one.

Identifiers are ppdp's own and quoted; every value is a bound parameter (the job name too).
Times are the database's ``LOCALTIMESTAMP``, so that workers on different machines share one clock.
"""

from __future__ import annotations

from ppdp.sql.dialect import Dialect
from ppdp.sql.quoting import quote_ident, quote_table

PRIVATE_SCHEMA = "_ppdp"
API_SCHEMA = "ppdp"  # where request_run lives: a schema of its own, so USAGE on it grants nothing else
FUNCTION = "request_run"
MAX_JOB_NAME = 200  # characters; longer names are refused by request_run before any lookup
REQUEST_COLUMNS = ("request_id", "job", "requested_by", "requested_at", "status", "run_id", "error", "worker",
                   "attempts", "started_at", "heartbeat_at", "lease_until", "finished_at")


def requests_table(d: Dialect) -> str:
    return quote_table(PRIVATE_SCHEMA, "requests", d)


def function_name(d: Dialect) -> str:
    """``"ppdp"."request_run"``, quoted."""
    return quote_table(API_SCHEMA, FUNCTION, d)


def ddl(d: Dialect) -> list[str]:
    """CREATE statements of the request table (idempotent). The id and the requester default in
    the database, so that a plain INSERT (DuckDB) or the function (PostgreSQL) fills them."""
    new_id = d.new_request_id
    return [
        f"CREATE SCHEMA IF NOT EXISTS {quote_ident(PRIVATE_SCHEMA, d)}",
        f"CREATE TABLE IF NOT EXISTS {requests_table(d)} ("
        f"request_id VARCHAR PRIMARY KEY DEFAULT {new_id}, job VARCHAR NOT NULL, "
        "requested_by VARCHAR NOT NULL DEFAULT CURRENT_USER, requested_at TIMESTAMP NOT NULL DEFAULT LOCALTIMESTAMP, "
        "status VARCHAR NOT NULL DEFAULT 'requested', run_id VARCHAR, error VARCHAR, worker VARCHAR, "
        "attempts INTEGER NOT NULL DEFAULT 0, started_at TIMESTAMP, heartbeat_at TIMESTAMP, lease_until TIMESTAMP, "
        "finished_at TIMESTAMP)",
        f"CREATE TABLE IF NOT EXISTS {requesters_table(d)} (job VARCHAR NOT NULL, role VARCHAR NOT NULL, "
        "PRIMARY KEY (job, role))",
    ]


def requesters_table(d: Dialect) -> str:
    """``_ppdp.job_requesters``: (job, role) pairs, the roles whose members may request a job."""
    return quote_table(PRIVATE_SCHEMA, "job_requesters", d)


def function_ddl(d: Dialect) -> list[str]:
    """PostgreSQL: ``ppdp.request_run(job_name text) RETURNS text`` (the request's id).

    SECURITY DEFINER so that a role holding only EXECUTE can insert into ``_ppdp.requests``; a
    fixed ``search_path`` (pg_catalog, then pg_temp last) so that the caller cannot shadow any
    name the body uses, and every name in the body is schema-qualified anyway. The requester is
    ``session_user``, the role that logged in, which SET ROLE and the definer's rights do not
    change. It may request a job only when the job is registered and enabled and the requester is
    a member of one of the job's roles in ``_ppdp.job_requesters``, or of the role owning
    ``_ppdp.jobs`` (who registers jobs and may run them anyway); every other call, a missing job
    included, gets the same error, so that the error tells a caller no job names. A request
    while one for the same job is still waiting returns that one's id (one per job at a time,
    under a transaction lock per job name), so repeated calls queue nothing more. EXECUTE is
    revoked from PUBLIC: an administrator grants it per role (docs/guides/requests.md).
    """
    fn = function_name(d)
    jobs, requests, allowed = quote_table(PRIVATE_SCHEMA, "jobs", d), requests_table(d), requesters_table(d)
    return [
        f"CREATE SCHEMA IF NOT EXISTS {quote_ident(API_SCHEMA, d)}",
        f"CREATE OR REPLACE FUNCTION {fn}(job_name text) RETURNS text "
        "LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $ppdp$\n"
        "DECLARE rid text;\n"
        "BEGIN\n"
        f"  IF job_name IS NULL OR length(job_name) > {MAX_JOB_NAME} OR NOT EXISTS (\n"
        f"      SELECT 1 FROM {jobs} AS j WHERE j.name = job_name AND j.enabled) OR NOT (\n"
        f"      EXISTS (SELECT 1 FROM {allowed} AS a JOIN pg_catalog.pg_roles AS r ON r.rolname = a.role\n"
        "              WHERE a.job = job_name AND pg_catalog.pg_has_role(session_user, r.oid, 'MEMBER'))\n"
        "      OR pg_catalog.pg_has_role(session_user, (SELECT c.relowner FROM pg_catalog.pg_class AS c\n"
        f"              WHERE c.oid = '{PRIVATE_SCHEMA}.jobs'::pg_catalog.regclass), 'MEMBER')) THEN\n"
        "    RAISE EXCEPTION 'ppdp: no enabled job named % that you may request', "
        "coalesce(quote_literal(left(job_name, 64)), 'NULL')\n"
        "      USING ERRCODE = '22023', HINT = 'ppdp job list shows the registered jobs; _ppdp.job_requesters says who may request each';\n"
        "  END IF;\n"
        "  PERFORM pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('ppdp-request:' || job_name));\n"
        f"  SELECT q.request_id INTO rid FROM {requests} AS q WHERE q.job = job_name AND q.status = 'requested'\n"
        "    ORDER BY q.requested_at, q.request_id LIMIT 1;\n"
        "  IF rid IS NOT NULL THEN\n"
        "    RETURN rid;\n"
        "  END IF;\n"
        f"  INSERT INTO {requests} (job, requested_by) VALUES (job_name, session_user) RETURNING request_id INTO rid;\n"
        "  RETURN rid;\n"
        "END\n$ppdp$",
        f"REVOKE ALL ON FUNCTION {fn}(text) FROM PUBLIC",
        # The schema holds only this function, whose EXECUTE is per role: USAGE for all is harmless
        # and spares a second grant.
        f"GRANT USAGE ON SCHEMA {quote_ident(API_SCHEMA, d)} TO PUBLIC",
    ]


def function_exists(d: Dialect) -> str:
    """One row, column ``ok``: whether request_run(text) exists."""
    return f"SELECT to_regprocedure('{API_SCHEMA}.{FUNCTION}(text)') IS NOT NULL AS ok"


def grant_execute(role_sql: str, d: Dialect) -> str:
    """GRANT EXECUTE on request_run to ``role_sql`` (an identifier the caller quoted)."""
    return f"GRANT EXECUTE ON FUNCTION {function_name(d)}(text) TO {role_sql}"


def _lease(d: Dialect) -> str:
    """LOCALTIMESTAMP plus a lease of ``?`` microseconds (a bound BIGINT)."""
    return d.lease_until


def claim(d: Dialect, *, skip_locked: bool) -> str:
    """Take the oldest claimable request and mark it running for this worker, in one statement
    (parameters: worker, lease microseconds). Claimable: ``requested``, or ``running`` with an
    expired lease (its worker died), and no live run of the same job (the release's run lock
    would refuse it). With ``skip_locked`` (PostgreSQL) a row another worker is claiming is
    skipped instead of waited for, so two workers never take the same request; without it
    (DuckDB) there is one writer at a time."""
    t = requests_table(d)
    lock = " FOR UPDATE SKIP LOCKED" if skip_locked else ""
    return (f"UPDATE {t} SET status = 'running', worker = ?, attempts = attempts + 1, started_at = LOCALTIMESTAMP, "
            f"heartbeat_at = LOCALTIMESTAMP, lease_until = {_lease(d)}, run_id = NULL, error = NULL, finished_at = NULL "
            f"WHERE request_id = (SELECT c.request_id FROM {t} AS c "
            "WHERE (c.status = 'requested' OR (c.status = 'running' AND c.lease_until < LOCALTIMESTAMP)) "
            f"AND NOT EXISTS (SELECT 1 FROM {t} AS o WHERE o.job = c.job AND o.request_id <> c.request_id "
            "AND o.status = 'running' AND o.lease_until >= LOCALTIMESTAMP) "
            f"ORDER BY c.requested_at, c.request_id LIMIT 1{lock}) "
            "RETURNING request_id, job, attempts")


def heartbeat(d: Dialect) -> str:
    """Extend this worker's lease (parameters: lease microseconds, request_id, worker)."""
    return (f"UPDATE {requests_table(d)} SET heartbeat_at = LOCALTIMESTAMP, lease_until = {_lease(d)} "
            "WHERE request_id = ? AND worker = ? AND status = 'running'")


def finish(d: Dialect) -> str:
    """Write the outcome back (parameters: status, run_id, error, request_id, worker); only while
    the request is still this worker's."""
    return (f"UPDATE {requests_table(d)} SET status = ?, run_id = ?, error = ?, finished_at = LOCALTIMESTAMP, "
            "lease_until = NULL WHERE request_id = ? AND worker = ? AND status = 'running'")


def release_claim(d: Dialect) -> str:
    """Give a request back, retryable (parameters: error, request_id, worker)."""
    return (f"UPDATE {requests_table(d)} SET status = 'requested', worker = NULL, lease_until = NULL, error = ? "
            "WHERE request_id = ? AND worker = ? AND status = 'running'")


def select_requests(d: Dialect) -> str:
    return f"SELECT {', '.join(REQUEST_COLUMNS)} FROM {requests_table(d)} ORDER BY requested_at, request_id"
