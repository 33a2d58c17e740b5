"""The release method as the stages see it: ``ReleasePlan`` (its result) and ``ReleaseMethod``
(the protocol every method in engine/methods/ implements).

This module imports no method: the stages receive the method object as an argument typed by
this protocol, and the methods import the stages' pieces (context, results, history), never the
other way round. The registry ``METHODS`` is here too: each method module registers its method,
built-ins are listed in ppdp/registry.py ``KINDS``, other packages add entry points of group
``ppdp.methods`` (docs/extending.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ppdp.connectors.base import Connector
from ppdp.engine.core.catalog import RunRecord
from ppdp.engine.core.spec import ReleaseSpec
from ppdp.engine.methods.context import RunContext
from ppdp.engine.methods.results import Candidate, HistoryOutcome, Prepared
from ppdp.engine.privacy import PrivacyModel
from ppdp.registry import Registry, registry
from ppdp.sql.dialects import RebuildRows


@dataclass(frozen=True, eq=False)
class ReleasePlan:
    """What a method decided: the run record's solution and metrics, the rows it publishes, and
    its own state for the stages it implements (``state``, read only by the method)."""

    method: str
    solution: dict[str, Any]
    metrics: dict[str, Any]
    released_rows: int
    state: Any = None
    notices: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class WarmUpModels:
    """The model sets ``ppdp warm-up`` offers each method: k-anonymity alone (``base``), and
    each other registered model that has a warm-up example beside k = 2 and all of them in one
    set (``others``, by model name, then engine/app/warmup.py ``EVERY_MODEL``). Each set is a
    list of ``[[privacy.models]]`` tables."""

    base_name: str
    base: tuple[dict[str, Any], ...]
    others: tuple[tuple[str, tuple[dict[str, Any], ...]], ...]


@dataclass(frozen=True)
class WarmUp:
    """One release ``ppdp warm-up`` runs on its 400-row sample of adult (columns of
    engine/app/warmup.py ``QIDS``, sensitive ``salary-class`` or ``disease``, a diseases32
    catalogue value), so that the method's kernels are compiled for the argument types a real
    release uses."""

    label: str
    models: tuple[dict[str, Any], ...]
    optimizer: str = "lattice"
    method_params: tuple[tuple[str, Any], ...] = ()  # [method] params
    optimizer_params: tuple[tuple[str, Any], ...] = ()  # [optimizer] params
    sensitive: str = "salary-class"
    budget: int = 300
    objective: str = "td"  # [utility] objective


class ReleaseMethod(Protocol):
    name: str
    # True when the published rows fall into equivalence classes (equal QID values), so the
    # privacy models' class-based SQL checks and the history classes apply to them.
    publishes_classes: bool
    # True when every published row is its source row with each QID generalized to one hierarchy
    # level per QID (the version's ``levels``), so a population can be generalized alike and
    # counted per class (models with ``Requirements.population`` or ``research_subset``).
    generalizes_by_levels: bool
    # The method's own tables in ``_ppdp`` that hold rows per (release, version): what a failed
    # run leaves there without a rollback is removed before the version number is reused
    # (engine/release/leftovers.py). The shared ones are sql/catalog.py ``VERSIONED_TABLES``.
    private_tables: tuple[str, ...]

    def warm_ups(self, models: WarmUpModels) -> list[WarmUp]:
        """The releases ``ppdp warm-up`` runs to compile this method's kernels ([] if none)."""
        ...

    def check_params(self, spec: ReleaseSpec) -> None:
        """Refuse bad ``[method] params`` (SpecError), before anything is read or written."""
        ...

    def check_database(self, spec: ReleaseSpec, con: Connector) -> None:
        """Refuse what the database makes wrong for this method (e.g. a release it starts from),
        before anything is written; reads only."""
        ...

    def plan(self, ctx: RunContext, prep: Prepared, *, progress: bool) -> ReleasePlan:
        """Choose the release (search, or reuse of the previous version's decisions in
        ``ctx.previous``); may read the source through ``ctx.con``, writes nothing."""
        ...

    def write_private_state(self, ctx: RunContext, prep: Prepared, plan: ReleasePlan) -> None:
        """Store in ``_ppdp`` what the candidate SELECT and a later rebuild need (``ctx.version``)."""
        ...

    def candidate_select(self, ctx: RunContext, prep: Prepared, plan: ReleasePlan) -> str:
        """SELECT of the candidate rows: ``ppdp_row_id`` then the released columns in order."""
        ...

    def carries(self, plan: ReleasePlan, previous: RunRecord) -> bool:
        """Whether a row of the previous version may stand unchanged in this one (held back)."""
        ...

    def covers(self, model: PrivacyModel) -> bool:
        """Whether the method's own checks (``extra_checks``, ``cross_version``) verify ``model``;
        read only when ``publishes_classes`` is False (the guards stage refuses the others)."""
        ...

    def extra_checks(self, ctx: RunContext, prep: Prepared, plan: ReleasePlan, table: str) -> list[dict[str, Any]]:
        """The method's own independent SQL checks of the written version (each a dict with
        ``check``, ``passed`` and what it found); [] when the model checks say everything."""
        ...

    def rebuild_rows(self, con: Connector, run: RunRecord, spec: ReleaseSpec) -> RebuildRows:
        """For ``ppdp sql``: the private state of ``run``'s version that the script ships, and the
        SELECT that derives the published rows from it and the source. A method whose rows cannot
        be derived that way raises a one-line SpecError saying why."""
        ...


# built-ins: ppdp/registry.py KINDS; other packages: entry points of group ``ppdp.methods``
METHODS: Registry[ReleaseMethod] = registry("method")


@runtime_checkable
class ChecksOwnHistory(Protocol):
    """A method with ``publishes_classes = False`` also implements this: the history stage calls
    it instead of the class-based check from the second version on (it checks the method's own
    cross-version rule, holds back what it can, or raises VerificationError)."""

    def cross_version(self, ctx: RunContext, prep: Prepared, plan: ReleasePlan, candidate: Candidate,
                      published: list[int]) -> HistoryOutcome: ...


@runtime_checkable
class ChecksInput(Protocol):
    """A method that refuses some validated inputs implements this: the guards stage calls it
    before anything is written (found by the plan, they would come after the run record was written)."""

    def check_input(self, prep: Prepared) -> None: ...


@runtime_checkable
class ChecksContinuation(Protocol):
    """A method that can refuse to continue the release's current version (``ctx.previous``)
    implements this: a version guard calls it once ``identify`` has found that version, before
    the run record or anything else is written."""

    def check_continuation(self, ctx: RunContext, prep: Prepared) -> None: ...


@runtime_checkable
class RechecksVersion(Protocol):
    """A method with ``publishes_classes = False`` implements this for ``ppdp verify``: its own
    checks of a published version, rebuilt from the run record and its private state (the
    class-based model checks do not apply to its rows). Checks that read the source run only
    when ``source_unchanged`` (a changed source is not what was published)."""

    def recheck(self, con: Connector, run: RunRecord, spec: ReleaseSpec, table: str,
                source_unchanged: bool) -> list[dict[str, Any]]: ...
