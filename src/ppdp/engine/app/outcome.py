"""What a run ended as, for machines: the exit code table and the frozen run record.

Orchestrators (Dagster, Airflow, cron, the request worker) must tell "the privacy model refused
this step" from "the spec is wrong" from "ppdp crashed". Every command of the CLI ends with one
of ``ExitCode``; ``run_release``/``run_job`` of the Python API (engine/app/api.py) return a
``RunResult`` that carries the same code. The table is repeated in README "Exit codes" and docs/reference/exit-codes.md; the JSON
form of a ``RunResult`` is described by ``data/schemas/run.schema.json``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from enum import IntEnum
from typing import Any

from ppdp.errors import PpdpError, PrivacyRefusal, VerificationError


class ExitCode(IntEnum):
    """Exit codes of ``ppdp`` (docs/reference/exit-codes.md). Values follow shell conventions where one
    exists: 2 for bad input (argparse uses it too), 70 = EX_SOFTWARE of sysexits.h, 99 = the code
    Airflow's BashOperator treats as "skipped" (``skip_on_exit_code``), 130 = 128 + SIGINT."""

    PUBLISHED = 0  # a new version was published (or: verify passed, a listing ended well)
    VERIFICATION_FAILED = 1  # the independent SQL verification failed; nothing was published
    SPEC_ERROR = 2  # the spec, the data or the database is wrong or unreachable; nothing was written
    REFUSED = 3  # the privacy model (no release can meet it) or the cross-version rule refused the step
    INTERNAL_ERROR = 70  # a bug in ppdp: the traceback is on stderr
    DRY_RUN = 98  # a dry run ended well: the SQL and the metrics printed, nothing published
    SKIPPED = 99  # nothing changed since the current version (same run key): nothing to publish
    INTERRUPTED = 130  # SIGINT or SIGTERM: the interrupted run published nothing (or had committed: the CLI says which)


# The ``status`` of a RunResult for each code (also the value the request worker writes back).
STATUS = {ExitCode.PUBLISHED: "published", ExitCode.VERIFICATION_FAILED: "verification_failed",
          ExitCode.SPEC_ERROR: "error", ExitCode.REFUSED: "refused", ExitCode.INTERNAL_ERROR: "internal_error",
          ExitCode.SKIPPED: "skipped", ExitCode.INTERRUPTED: "interrupted", ExitCode.DRY_RUN: "dry_run"}


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGINT turned into an exception (the CLI's handlers), so that the run unwinds
    like on Ctrl-C: its transaction rolls back and the run row records the failure."""


def exit_code_of(exc: BaseException) -> ExitCode:
    """The table's code for an exception that ended a command. A refusal is checked before its
    base classes (a cross-version refusal is a VerificationError, a model refusal a DataError)."""
    if isinstance(exc, PrivacyRefusal):
        return ExitCode.REFUSED
    if isinstance(exc, VerificationError):
        return ExitCode.VERIFICATION_FAILED
    if isinstance(exc, PpdpError):
        return ExitCode.SPEC_ERROR
    if isinstance(exc, KeyboardInterrupt):
        return ExitCode.INTERRUPTED
    return ExitCode.INTERNAL_ERROR


@dataclass(frozen=True)
class ModelCheck:
    """One privacy model as verified in SQL on the published version: its achieved value (AD)."""

    model: str
    params: dict[str, Any]
    achieved: Any
    passed: bool


@dataclass(frozen=True)
class HeldBack:
    """Changes of the source the cross-version rule kept out of this version (delayed, not lost)."""

    inserts_withheld: int = 0
    deletes_delayed: int = 0
    changes_delayed: int = 0


@dataclass(frozen=True)
class RunResult:
    """One run as an orchestrator sees it. ``status`` is ``STATUS[exit_code]`` (``dry_run`` for a
    dry run that ended well); the metrics are None when the run did not get that far."""

    status: str
    exit_code: ExitCode
    release: str | None = None
    job: str | None = None
    run_id: str | None = None
    version: int | None = None
    output: str | None = None  # the published view (schema-qualified, quoted)
    table: str | None = None  # the version table behind it
    k: int | None = None  # the smallest published equivalence class
    models: tuple[ModelCheck, ...] = ()
    records: int | None = None
    released: int | None = None
    suppressed: int | None = None
    td: float | None = None
    verified: bool | None = None
    held_back: HeldBack | None = None
    error: str | None = None
    # The re-identification risk the run measured (stages/risk.py): the attacker's columns, the
    # source's and the release's measures (each risk estimator's keys) and the kept-columns check.
    risk: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """Published, skipped or a dry run: nothing for an orchestrator to alert on."""
        return self.exit_code in (ExitCode.PUBLISHED, ExitCode.SKIPPED, ExitCode.DRY_RUN)

    def to_json(self) -> dict[str, Any]:
        """The JSON object ``--json`` prints (data/schemas/run.schema.json)."""
        out = asdict(self)
        out["exit_code"] = int(self.exit_code)
        out["models"] = [asdict(m) for m in self.models]
        return out


@dataclass(frozen=True)
class Measured:
    """A measuring command's JSON (``ppdp risk --json``): its own object under the contract's
    ``status`` and ``exit_code`` (data/schemas/risk.schema.json); on an error only those and
    ``error``."""

    payload: dict[str, Any]
    status: str = "measured"
    exit_code: ExitCode = ExitCode.PUBLISHED

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "exit_code": int(self.exit_code), **strict_json(self.payload)}


def strict_json(value: Any) -> Any:
    """``value`` with every non-finite float replaced by None (JSON has no NaN or Infinity)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: strict_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [strict_json(v) for v in value]
    return value


def result_of_outcome(outcome: Any, *, dry_run: bool = False) -> RunResult:
    """The RunResult of a ReleaseOutcome (engine/release/run.py) that returned."""
    run = outcome.run
    m, v = run.metrics or {}, run.verification or {}
    skipped = run.status == "skipped"
    code = ExitCode.DRY_RUN if dry_run else ExitCode.SKIPPED if skipped else ExitCode.PUBLISHED
    held = (run.cross_version or {}).get("held_back") or m.get("held_back")
    sizes = m.get("class_sizes") or {}
    return RunResult(
        status=STATUS[code], exit_code=code, release=run.release, job=run.job,
        run_id=run.run_id, version=None if dry_run else run.version, output=outcome.view, table=outcome.table,
        k=_int(sizes.get("min")),
        models=model_checks(v.get("checks", [])),
        records=_int(m.get("records", run.source_rows)), released=_int(m.get("released_records")),
        suppressed=_int(m.get("suppressed")), td=_finite(m.get("td")),
        verified=None if skipped or dry_run else bool(v.get("passed", False)),
        held_back=HeldBack(**{f: int(held.get(f, 0)) for f in ("inserts_withheld", "deletes_delayed", "changes_delayed")})
        if held else None,
        risk=strict_json(v["risk"]) if not skipped and not dry_run and v.get("risk") else None)


def result_of_error(exc: BaseException, *, job: str | None = None) -> RunResult:
    """The RunResult of a run that raised ``exc`` (run_release attaches the run's id when it had one)."""
    code = exit_code_of(exc)
    from ppdp.redact import redact_text  # the JSON error is printed too

    message = redact_text(str(exc).strip().splitlines()[0]) if str(exc).strip() else type(exc).__name__
    if code == ExitCode.INTERNAL_ERROR:
        message = f"{type(exc).__name__}: {message}"
    verification = getattr(exc, "verification", None)
    return RunResult(status=STATUS[code], exit_code=code, job=job, run_id=getattr(exc, "run_id", None),
                     release=getattr(exc, "release", None), error=message,
                     verified=False if code == ExitCode.VERIFICATION_FAILED else None,
                     models=model_checks((verification or {}).get("checks", [])))


def model_checks(checks: list[dict[str, Any]]) -> tuple[ModelCheck, ...]:
    """The verification's checks as records; an infinite AD (the empty release) becomes None,
    so that ``--json`` stays strict JSON (no ``Infinity``)."""
    from ppdp.engine.app.shareable import shareable_params

    return tuple(ModelCheck(c["model"], shareable_params(c["model"], dict(c["params"])), _finite(c.get("achieved", c["ad"])),
                            bool(c["passed"]))
                 for c in checks)


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _finite(value: Any) -> float | None:
    return float(value) if value is not None and math.isfinite(float(value)) else None
