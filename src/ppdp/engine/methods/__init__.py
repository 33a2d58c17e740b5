"""Release methods, registered by name: how a release's published rows are chosen.

A method turns a validated input (``Prepared``) into a ``ReleasePlan`` and knows how to write
its private state and the SELECT of its candidate rows; everything after that (row ids, the
version table, the cross-version check, verification, delta, view, grants, the run record) is
shared by every method (engine/stages/). Adding a method is one new module that registers it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ppdp.engine.catalog import RunRecord
from ppdp.engine.models import PrivacyModel
from ppdp.engine.registry import Registry
from ppdp.engine.spec import ReleaseSpec
from ppdp.engine.stages.context import RunContext
from ppdp.engine.stages.validate import Prepared


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


class ReleaseMethod(Protocol):
    name: str
    # True when the published rows fall into equivalence classes (equal QID values), so the
    # privacy models' class-based SQL checks and the history classes apply to them.
    publishes_classes: bool

    def check_params(self, spec: ReleaseSpec) -> None:
        """Refuse bad ``[method] params`` (SpecError), before anything is read or written."""
        ...

    def check_database(self, spec: ReleaseSpec, con) -> None:
        """Refuse what the database makes wrong for this method (e.g. a release it starts from),
        before anything is written; reads only."""
        ...

    def plan(self, ctx: RunContext, prep: Prepared, *, progress: bool) -> ReleasePlan:
        """Choose the release (search, or reuse of the previous version's decisions in
        ``ctx.previous``); may read the source through ``ctx.con``, writes nothing."""
        ...

    def write_private_state(self, ctx: RunContext, prep: Prepared, plan: ReleasePlan) -> None:
        """Store in ``_ppdp`` what the candidate SELECT and a later rebuild need."""
        ...

    def candidate_select(self, ctx: RunContext, prep: Prepared, plan: ReleasePlan) -> str:
        """SELECT of the candidate rows: ``ppdp_row_id`` then the released columns in order."""
        ...

    def carries(self, plan: ReleasePlan, previous: RunRecord) -> bool:
        """Whether a row of the previous version may stand unchanged in this one (held back)."""
        ...

    # A method with ``publishes_classes = False`` also implements
    # ``cross_version(ctx, prep, plan, candidate, published) -> engine.stages.history.HistoryOutcome``:
    # the history stage calls it instead of the class-based check from the second version on (it
    # checks the method's own cross-version rule, holds back what it can, or raises VerificationError).

    def covers(self, model: PrivacyModel) -> bool:
        """Whether the method's own checks (``extra_checks``, ``cross_version``) verify ``model``;
        read only when ``publishes_classes`` is False (engine/guards.py refuses the others)."""
        ...

    def extra_checks(self, ctx: RunContext, prep: Prepared, plan: ReleasePlan, table: str) -> list[dict[str, Any]]:
        """The method's own independent SQL checks of the written version (each a dict with
        ``check``, ``passed`` and what it found); [] when the model checks say everything."""
        ...


METHODS: Registry[ReleaseMethod] = Registry("release method")

# Register the built-in methods.
from ppdp.engine.methods import generalization, heterogeneous, microaggregation  # noqa: E402,F401
