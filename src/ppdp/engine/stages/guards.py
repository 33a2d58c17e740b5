"""Stage 2: refusals that depend on the combination of inputs, before the lock and any write.

``validate`` checks each input on its own (the spec, the source, the method's parameters, the
database); a guard checks what is wrong only in combination, e.g. a privacy model whose
guarantee the chosen release method cannot give. Each guard reads the context, the validated
input and the method, and raises a one-line PpdpError to refuse; none writes. ``GUARDS`` is
empty today: the model/method guards are to be added here.
"""

from __future__ import annotations

from collections.abc import Callable

from ppdp.engine.stages.context import RunContext
from ppdp.engine.stages.method import ReleaseMethod
from ppdp.engine.stages.results import Prepared

Guard = Callable[[RunContext, Prepared, ReleaseMethod], None]

GUARDS: tuple[Guard, ...] = ()


def guard(ctx: RunContext, prep: Prepared, method: ReleaseMethod) -> None:
    """Run every guard in order; the first refusal raises."""
    for check in GUARDS:
        check(ctx, prep, method)
