"""What the stages of one run share: the connector, the run's identity, its timings."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ppdp.connectors.base import Connector
from ppdp.engine.catalog import RunRecord
from ppdp.engine.spec import ReleaseSpec


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


@dataclass
class RunContext:
    """One run: set up by the orchestrator, read by every stage."""

    spec: ReleaseSpec
    con: Connector
    release: str  # identity: output schema and name (catalog.release_id)
    run_id: str
    job: str | None
    started: dt.datetime = field(default_factory=now)
    clock: StageClock = field(default_factory=StageClock)
    run_key: str = ""
    fingerprint: str = ""
    previous: RunRecord | None = None
    version: int = 0
    on_phase: Callable[[str], None] = lambda phase: None

    @property
    def dialect(self) -> str:
        return self.con.dialect
