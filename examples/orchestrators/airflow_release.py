"""A ppdp release job in Airflow: two ways, one DAG (not run by the tests; syntax-checked, and
imported when Airflow is installed).

1. ``BashOperator`` on the CLI: ``ppdp job run NAME --json`` prints one JSON object (pushed to
   XCom as the task's last line) and exits with the exit codes of docs/reference/exit-codes.md: 99 = nothing changed is
   Airflow's own ``skip_on_exit_code`` default, so an unchanged source marks the task skipped;
   every other non-zero code fails it (3 refused, 2 bad input, 1 verification failed, ...).
2. ``@task`` on the Python API: the frozen ``ppdp.RunResult`` says the same in Python.

    PPDP_DB=postgresql://ppdp@db/warehouse  PPDP_JOB=adult_k5
"""

from __future__ import annotations

import os
from datetime import datetime

from airflow.decorators import dag, task
from airflow.exceptions import AirflowFailException, AirflowSkipException
from airflow.operators.bash import BashOperator

DB = os.environ.get("PPDP_DB", "duckdb:///opt/warehouse.duckdb")
JOB = os.environ.get("PPDP_JOB", "adult_k5")


@dag(schedule="@daily", start_date=datetime(2026, 1, 1), catchup=False, tags=["ppdp"])
def ppdp_release():
    BashOperator(task_id="release_cli", bash_command=f"ppdp job run {JOB} --db {DB} --json",
                 skip_on_exit_code=99, do_xcom_push=True)

    @task(task_id="release_api")
    def release() -> dict:
        import ppdp

        result = ppdp.run_job(JOB, db=DB)
        if result.status == "skipped":
            raise AirflowSkipException(f"nothing changed since version {result.version}")
        if not result.ok:  # a refusal or a bad spec will not heal by retrying: fail without retries
            raise AirflowFailException(f"ppdp {result.status}: {result.error}")
        return result.to_json()

    release()


ppdp_release()
