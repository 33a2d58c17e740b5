"""What the stages of one run share: the connector, the run's identity, its timings.

``RunContext`` is frozen. Its identity (spec, connector, release, run id, job, start time) is
fixed when the orchestrator creates it; the per-run facts that later stages read (``key``: the
fingerprint, run key and previous version, from the identify stage; ``version``: the version
number reserved by materialize) are added only by the orchestrator, as a new context made with
``dataclasses.replace`` from those stages' results. No stage sets anything on it.

Two members are deliberately not values: ``clock`` accumulates each stage's wall time for the
run record (every stage may add its own timing, none reads another's), and ``on_phase`` is the
tests' fault-injection hook.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ppdp.connectors.base import Connector
from ppdp.engine.core import catalog
from ppdp.engine.core.catalog import RunRecord
from ppdp.engine.core.spec import ReleaseSpec
from ppdp.engine.methods.results import RunKey
from ppdp.sql.dialect import Dialect
from ppdp.sql.relations import ReleaseRelation


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


class StageClock:
    """Wall time per stage of a run, for the run record and benchmarks/scale.py."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._t = time.perf_counter()

    def mark(self, name: str) -> None:
        t = time.perf_counter()
        self.seconds[name] = round(self.seconds.get(name, 0.0) + t - self._t, 4)
        self._t = t


def no_phase(phase: str) -> None:
    """The product injects no faults."""


@dataclass(frozen=True, eq=False)
class RunContext:
    """One run: created by the orchestrator, read by every stage (see the module docstring)."""

    spec: ReleaseSpec
    con: Connector
    release: str  # identity: output schema and name (catalog.release_id)
    run_id: str
    job: str | None
    started: dt.datetime = field(default_factory=now)
    clock: StageClock = field(default_factory=StageClock)
    on_phase: Callable[[str], None] = no_phase
    key: RunKey = field(default_factory=RunKey)  # the identify stage's result
    version: int = 0  # the version this run writes (materialize.reserve_version; dry runs: the next one)

    @property
    def dialect(self) -> Dialect:
        return self.con.dialect

    @property
    def published(self) -> ReleaseRelation:
        """The release's view, version tables and delta table, named for the connector."""
        return ReleaseRelation(self.spec.output_schema, self.spec.output_name, self.con.dialect)

    @property
    def fingerprint(self) -> str:
        return self.key.fingerprint

    @property
    def run_key(self) -> str:
        return self.key.run_key

    @property
    def previous(self) -> RunRecord | None:
        """The run that published the release's current version (None for a first version)."""
        return self.key.previous


# Rounds of holding back records before a cross-version check refuses the step.
MAX_ROUNDS = 4


def published_versions(ctx: RunContext) -> list[int]:
    """The release's published versions, oldest first (read inside the run's transaction)."""
    return [r.version for r in catalog.published_runs(ctx.con, ctx.release) if r.version is not None]
