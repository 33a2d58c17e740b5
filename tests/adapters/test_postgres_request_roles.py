"""Who may request which job with ``ppdp.request_run`` (probe 37, item 22), on the throwaway
PostgreSQL: a role with EXECUTE requests only the jobs ``_ppdp.job_requesters`` lists for one of
its roles; every refusal reads the same whether or not the job exists; a request while one for
the same job waits returns that one. The catalog is made by ``ppdp init`` (the command under
test: ``PPDP_CLI_SRC`` runs an older one, tests/support/cli.py).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator

import pytest

from ppdp.connectors import connect
from ppdp.errors import ConnectorError
from tests.adapters.test_postgres_release import adult_frame
from tests.releases.test_jobs import SPEC
from tests.support.cli import assert_ok, ppdp

pytestmark = pytest.mark.postgres


def _job(output: str) -> str:
    spec = json.loads(json.dumps(SPEC))
    spec["output"]["name"] = output
    return json.dumps(spec)


def _as(url: str, role: str) -> str:
    return url.replace("postgresql://postgres@", f"postgresql://{role}@")


@pytest.fixture
def db(postgres_database) -> Iterator[str]:
    """public.adult (500 rows), the catalog made by ``ppdp init``, jobs job_a and job_b."""
    con = connect(postgres_database)
    try:
        con.write_frame("public", "adult", adult_frame().head(500))
    finally:
        con.close()
    assert_ok(ppdp("init", "--db", postgres_database))
    con = connect(postgres_database)
    try:
        for name in ("job_a", "job_b"):
            con.execute('INSERT INTO "_ppdp"."jobs" (name, spec) VALUES (?, ?)', [name, _job(name)])
    finally:
        con.close()
    yield postgres_database


def _refusal(con, job: str | None) -> str:
    """The error of a refused request, the job name in it replaced by <job>."""
    with pytest.raises(ConnectorError) as exc:
        con.query("SELECT ppdp.request_run(?) AS id", [job])
    return re.sub(r"'[^']*'|\bNULL\b", "<job>", " ".join(str(exc.value).split()))


def test_only_listed_roles_request_a_job_and_every_refusal_reads_the_same(db):
    analyst, other = f"analyst_{uuid.uuid4().hex[:6]}", f"other_{uuid.uuid4().hex[:6]}"
    admin = connect(db)
    try:
        for role in (analyst, other):
            admin.execute(f'CREATE ROLE "{role}" LOGIN')
            admin.execute(f'GRANT EXECUTE ON FUNCTION "ppdp"."request_run"(text) TO "{role}"')
        if admin.relation_columns("_ppdp", "job_requesters") is not None:
            admin.execute('INSERT INTO "_ppdp"."job_requesters" (job, role) VALUES (?, ?)', ["job_a", analyst])
    finally:
        admin.close()

    a, o = connect(_as(db, analyst)), connect(_as(db, other))
    try:
        # the other role holds EXECUTE but is listed for no job: job_a reads as if it did not exist
        refusals = {_refusal(o, "job_a"), _refusal(o, "no_such_job"), _refusal(o, None),
                    _refusal(a, "job_b"), _refusal(a, "no_such_job")}
        assert len(refusals) == 1, refusals
        (refusal,) = refusals
        assert "no enabled job named <job> that you may request" in refusal
        first = a.query("SELECT ppdp.request_run('job_a') AS id")["id"][0]
        again = [a.query("SELECT ppdp.request_run('job_a') AS id")["id"][0] for _ in range(5)]
        assert again == [first] * 5  # coalesced while it waits
    finally:
        a.close()
        o.close()
    admin = connect(db)
    try:
        rows = admin.query('SELECT job, requested_by, status FROM "_ppdp"."requests"').rows()
    finally:
        admin.close()
    assert rows == [("job_a", analyst, "requested")]
