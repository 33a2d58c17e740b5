"""A ppdp release as a Dagster asset, with an asset check from ppdp's own SQL verification.

    PPDP_DB=duckdb:///path/warehouse.duckdb PPDP_JOB=adult_k5 dagster dev -f dagster_release.py

The asset runs a release job stored in the database (``ppdp job register`` or a SQL INSERT into
``_ppdp.jobs``) through ppdp's Python API. Each materialization records the outcome as metadata
(status, version, k = smallest published class, suppressed records, TD, run id, the published
view); the check ``ppdp_verified`` re-runs ppdp's verification queries on the current version
(``ppdp.verify_release``). A run that changed nothing materializes with ``status = skipped``
and the same version; a refusal by the privacy model or the cross-version rule, a bad spec or a
failed verification fails the step with ppdp's one-line message (the exit-code table of
docs/reference/exit-codes.md names each). Tested by tests/releases/test_orchestrator_examples.py.
"""

# No "from __future__ import annotations": Dagster reads the context annotation as a class.
import os

import dagster as dg

import ppdp

CHECK = "ppdp_verified"


def release_asset(job: str, db: str, *, asset_name: str | None = None) -> dg.AssetsDefinition:
    """An asset that publishes ppdp job ``job`` of database ``db`` (a ppdp URL)."""
    name = asset_name or job

    @dg.asset(name=name, check_specs=[dg.AssetCheckSpec(CHECK, asset=name,
                                                        description="ppdp re-verifies the current version in SQL")],
              description=f"ppdp release job {job!r}", kinds={"ppdp"})
    def _release(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        result = ppdp.run_job(job, db=db)
        if not result.ok:  # refused, bad input, verification failed: nothing was published
            raise dg.Failure(description=f"ppdp {result.status} (exit code {int(result.exit_code)}): {result.error}",
                             metadata={"status": result.status, "exit_code": int(result.exit_code)})
        context.log.info(f"ppdp job {job}: {result.status}, version {result.version} of {result.output}")
        check = ppdp.verify_release(result.release or job, db=db)
        return dg.MaterializeResult(
            metadata={"status": result.status, "version": result.version, "k": result.k,
                      "suppressed": result.suppressed, "td": result.td, "run_id": result.run_id or "",
                      "output": result.output or "", "exit_code": int(result.exit_code)},
            check_results=[dg.AssetCheckResult(
                check_name=CHECK, passed=bool(check.passed),
                metadata={"version": check.version, "rows": check.rows, "expected_rows": check.expected_rows,
                          "models": ", ".join(f"{m.model} {m.params}: {m.achieved}" for m in check.models)})])

    return _release


defs = dg.Definitions(assets=[release_asset(os.environ.get("PPDP_JOB", "adult_k5"),
                                            os.environ.get("PPDP_DB", "duckdb://warehouse.duckdb"))])
