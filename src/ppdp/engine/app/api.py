"""The Python API for orchestrators: ``ppdp.run_release``, ``ppdp.run_job``, ``ppdp.verify_release``.

Each returns a frozen record (engine/app/outcome.py) instead of raising for the outcomes an
orchestrator must branch on: published, skipped, refused by the privacy model or the
cross-version rule, spec or data error, verification failed. ``KeyboardInterrupt`` and bugs
propagate (a Python caller handles them as it handles any other).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ppdp.engine.app.outcome import (
    ExitCode,
    ModelCheck,
    RunResult,
    model_checks,
    result_of_error,
    result_of_outcome,
)
from ppdp.engine.core.spec import ReleaseSpec
from ppdp.errors import PpdpError


def run_release(spec: str | Path | ReleaseSpec, *, db: str | None = None, progress: bool = False,
                dry_run: bool = False) -> RunResult:
    """Run the release spec (a TOML path or a loaded ReleaseSpec) against ``db`` (default: the
    spec's ``source.database``) and return its RunResult."""
    from ppdp.engine.core.spec import load_spec
    from ppdp.engine.release import run as release

    try:
        loaded = spec if isinstance(spec, ReleaseSpec) else load_spec(spec)
        outcome = release.run_release(loaded, database=db, progress=progress, dry_run=dry_run)
    except PpdpError as exc:
        return result_of_error(exc)
    return result_of_outcome(outcome, dry_run=dry_run)


def run_job(name: str, *, db: str, progress: bool = False, dry_run: bool = False) -> RunResult:
    """Run the job ``name`` stored in ``db``'s ``_ppdp.jobs`` and return its RunResult."""
    from ppdp.engine.app import jobs

    try:
        outcome = jobs.run_job(db, name, dry_run=dry_run, progress=progress)
    except PpdpError as exc:
        return result_of_error(exc, job=name)
    return result_of_outcome(outcome, dry_run=dry_run)


@dataclass(frozen=True)
class VerifyResult:
    """``ppdp verify``: the current version of a release checked again in SQL."""

    status: str  # verified, verification_failed, error
    exit_code: ExitCode
    release: str | None = None
    version: int | None = None
    models: tuple[ModelCheck, ...] = ()
    rows: int | None = None
    expected_rows: int | None = None
    passed: bool | None = None
    source_changed: bool | None = None  # None: the source could not be read to compare
    error: str | None = None

    @property
    def ok(self) -> bool:
        """The verification passed (exit code 0), as ``RunResult.ok``."""
        return self.exit_code == ExitCode.PUBLISHED

    def to_json(self) -> dict[str, Any]:
        """The JSON object ``ppdp verify --json`` prints (data/schemas/verify.schema.json)."""
        return {"status": self.status, "exit_code": int(self.exit_code), "release": self.release,
                "version": self.version, "models": [asdict(m) for m in self.models], "rows": self.rows,
                "expected_rows": self.expected_rows, "passed": self.passed, "source_changed": self.source_changed,
                "error": self.error}


def verify_release(name: str, *, db: str) -> VerifyResult:
    """Re-run the SQL verification of release ``name``'s current version (read-only)."""
    from ppdp.connectors import connect
    from ppdp.engine.release.run import reverify

    try:
        con = connect(db, read_only=True)
        try:
            found = reverify(con, name)
        finally:
            con.close()
    except PpdpError as exc:
        failed = result_of_error(exc)
        return VerifyResult(status=failed.status, exit_code=failed.exit_code, error=failed.error)
    code = ExitCode.PUBLISHED if found["passed"] else ExitCode.VERIFICATION_FAILED
    return VerifyResult(status="verified" if found["passed"] else "verification_failed", exit_code=code,
                        release=found["release"], version=found["version"],
                        models=model_checks(found["checks"]),
                        rows=found["rows"], expected_rows=found["expected_rows"], passed=bool(found["passed"]),
                        source_changed=found["source_changed"],
                        error=(f"{found['release']} v{found['version']}: verification FAILED: {found['tampered']}"
                               if found.get("tampered") else None))
