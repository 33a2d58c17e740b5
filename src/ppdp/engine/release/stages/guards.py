"""Stage 2: refusals that depend on the combination of inputs, before any write.

``validate`` checks each input on its own (the spec, the source, the method's parameters, the
database); a guard checks what is wrong only in combination: models and a release method that
no check vouches for. Guards read only what models and methods declare (models/base.py), so a
new model or method that declares nothing is refused, never published unchecked:

- a method that publishes equivalence classes is verified by each model's own SQL check, so
  every model must have one (``PrivacyModel.version_sql``);
- a method that publishes no classes (heterogeneous k-anonymity) verifies its rows by its own
  checks, so every model must be one that those checks cover (``ReleaseMethod.covers``);
- a later version of a class-publishing release is safe because every history class (records
  that shared a class in every version) is a union of classes that each satisfy the models; that
  holds only for models declared ``union_closed`` that supply a history check.

``GUARDS`` run right after ``validate`` (before the lock); ``VERSION_GUARDS`` once ``identify``
has found the release's current version (still before the run record or anything else is
written). Each reads the context, the validated input and the method and raises a one-line
SpecError to refuse.
"""

from __future__ import annotations

from collections.abc import Callable

from ppdp.engine.core import catalog
from ppdp.engine.methods.base import ChecksContinuation, ChecksInput, ReleaseMethod
from ppdp.engine.methods.context import RunContext
from ppdp.engine.methods.results import Prepared
from ppdp.engine.privacy import plan_oracle
from ppdp.errors import CrossVersionRefusal, SpecError

Guard = Callable[[RunContext, Prepared, ReleaseMethod], None]


def every_model_is_verified(ctx: RunContext, prep: Prepared, method: ReleaseMethod) -> None:
    """Each model is checked by its own SQL, or covered by the method's own checks."""
    if method.publishes_classes:
        unchecked = [m.name for m in prep.models if not m.has_version_check]
        if unchecked:
            raise SpecError(f"{', '.join(unchecked)} has no SQL verification of a published version, so no release "
                            "under it can be verified; nothing was written. Hint: choose models with a version check.")
        return
    uncovered = [m.name for m in prep.models if not method.covers(m)]
    if uncovered:
        raise SpecError(f"method {method.name!r} publishes no equivalence classes and its own checks do not cover "
                        f"{', '.join(uncovered)}, so a release could not be verified; nothing was written.")


def later_versions_are_protected(ctx: RunContext, prep: Prepared, method: ReleaseMethod) -> None:
    """A version after the first rests on models that hold for unions of classes."""
    previous = ctx.key.previous
    if previous is None or not method.publishes_classes:
        return  # a first version; or the method's own cross-version rule covers its models (above)
    unsafe = [m.name for m in prep.models if not (m.union_closed and m.has_history_check)]
    if unsafe:
        raise CrossVersionRefusal(f"{', '.join(unsafe)} is not declared to hold for a union of classes (with a history check), "
                        f"so the cross-version check cannot protect a version after v{previous.version} of "
                        f"{ctx.release}; nothing was written. Hint: publish under a new output name.")


def quasi_identifiers_are_unchanged(ctx: RunContext, prep: Prepared, method: ReleaseMethod) -> None:
    """The cross-version rule compares history classes over this spec's quasi-identifiers; a
    column that was a QID before and is kept now (or kept before and a QID now) is published
    generalized in one version and as is in another, which no history class over one QID set
    accounts for: refused before the search."""
    previous = ctx.key.previous
    if previous is None or not method.publishes_classes:
        return
    before = [str(q.get("column")) for q in (previous.spec or {}).get("quasi_identifiers", []) if isinstance(q, dict)]
    now = list(ctx.spec.qid_columns)
    if sorted(before) != sorted(now):
        raise CrossVersionRefusal(
            f"the quasi-identifiers of {ctx.release} changed since v{previous.version} ({', '.join(before)} -> "
            f"{', '.join(now)}): the cross-version check compares classes over one set of quasi-identifiers, and a "
            "column generalized in one version and published as is in another would let the versions be joined "
            "against it; nothing was written. Hint: publish under a new output name.")


def population_models_have_levels(ctx: RunContext, prep: Prepared, method: ReleaseMethod) -> None:
    """A model that counts a population's persons per class (or releases a research subset of
    the source) is meaningful only for rows generalized by hierarchy levels: the population is
    generalized alike and matched class by class. Aggregated groups (microaggregation) or
    per-record generalizations (heterogeneous) have no such classes."""
    needs = [m.name for m in prep.models if m.requirements.population or m.requirements.research_subset]
    if needs and not method.generalizes_by_levels:
        raise SpecError(f"{', '.join(needs)} compares each released class with the persons of a population generalized "
                        f"to the same levels, but method {method.name!r} does not generalize rows by hierarchy levels, "
                        "so the population has no matching classes; nothing was written. Hint: method = \"generalization\".")


def method_accepts_the_input(ctx: RunContext, prep: Prepared, method: ReleaseMethod) -> None:
    """The method's own refusals of the validated input (``ChecksInput``), before any write."""
    if isinstance(method, ChecksInput):
        method.check_input(prep)


def earlier_versions_have_the_columns(ctx: RunContext, prep: Prepared, method: ReleaseMethod) -> None:
    """A later version's history classes group rows by their QID and sensitive values in every
    published version (docs/concepts/threat-model.md), so each published version must have
    those columns; refused here, before the search, not by the database after it."""
    if ctx.key.previous is None or not method.publishes_classes:
        return  # a first version; the heterogeneous method compares its own columns (_check_continuable)
    spec = ctx.spec
    wanted = [*spec.qid_columns, *spec.sensitive]
    for run in catalog.published_runs(ctx.con, ctx.release):
        cols = ctx.con.relation_columns(spec.output_schema, ctx.published.version_name(run.version))
        missing = [c for c in wanted if cols is not None and c not in {name for name, _ in cols}]
        if missing:
            raise SpecError(f"{ctx.release} v{run.version} does not publish {', '.join(map(repr, missing))}, which this spec "
                            "makes a quasi-identifier or sensitive column, so the versions cannot be compared across; "
                            "nothing was written. Hint: publish under a new output name.")


def method_can_continue(ctx: RunContext, prep: Prepared, method: ReleaseMethod) -> None:
    """The method's own refusal to continue the current version (``ChecksContinuation``)."""
    if ctx.key.previous is not None and isinstance(method, ChecksContinuation):
        method.check_continuation(ctx, prep)


def person_unit_is_supported(ctx: RunContext, prep: Prepared, method: ReleaseMethod) -> None:
    """A person release (docs/design/person_unit.md) needs a method that counts persons
    (``ReleaseMethod.counts_persons``) and models that do not count a population's persons
    (their population would have to be reduced to persons too: not implemented)."""
    spec = ctx.spec
    if not spec.counts_persons:
        return
    if not getattr(method, "counts_persons", False):
        raise SpecError(f"method {method.name!r} does not count persons yet, so source.person {spec.person!r} cannot be "
                        "honoured; nothing was written. Hint: method = \"generalization\".")
    if spec.person_varying:
        other = [m.name for m in prep.models if m.requirements.sensitive_counts or plan_oracle([m]).params.k <= 1]
        if other:
            raise SpecError(f"{', '.join(other)} cannot count persons when quasi-identifiers vary by row "
                            f"(source.person_varying {list(spec.person_varying)}) yet; nothing was written. "
                            "Hint: k-anonymity alone, or QIDs constant per person.")
    population = [m.name for m in prep.models if m.requirements.population or m.requirements.research_subset]
    if population:
        raise SpecError(f"{', '.join(population)} counts a population's persons, which a person release does not reduce "
                        "to persons yet; nothing was written. Hint: k-anonymity, l-diversity, t-closeness or "
                        "beta-likeness with source.person.")


def person_unit_later_versions(ctx: RunContext, prep: Prepared, method: ReleaseMethod) -> None:
    """A later version of a person release is checked by the signature rule over history classes
    (docs/design/person_unit.md), which is k-anonymity's: every model must be one whose
    guarantee is a number k of persons (no sensitive counts across versions per person yet)."""
    previous = ctx.key.previous
    if previous is None:
        return
    was_person = bool((previous.spec.get("source") or {}).get("person"))
    if was_person != ctx.spec.counts_persons:
        raise SpecError(f"{ctx.release} v{previous.version} was published {'per person' if was_person else 'per row'}; a later "
                        "version cannot change the privacy unit (source.person); nothing was written. "
                        "Hint: publish under a new output name.")
    if not ctx.spec.counts_persons:
        return
    other = [m.name for m in prep.models if m.requirements.sensitive_counts or plan_oracle([m]).params.k <= 1]
    if other:
        raise CrossVersionRefusal(f"{', '.join(other)} has no cross-version rule per person yet, so {ctx.release} cannot publish a "
                        f"version after v{previous.version} under it; nothing was written. Hint: k-anonymity alone, or "
                        "publish under a new output name.")


GUARDS: tuple[Guard, ...] = (person_unit_is_supported, population_models_have_levels, every_model_is_verified, method_accepts_the_input)
VERSION_GUARDS: tuple[Guard, ...] = (person_unit_later_versions, later_versions_are_protected, earlier_versions_have_the_columns,
                                     quasi_identifiers_are_unchanged, method_can_continue)


def guard(ctx: RunContext, prep: Prepared, method: ReleaseMethod) -> None:
    """Run every guard in order; the first refusal raises."""
    for check in GUARDS:
        check(ctx, prep, method)


def guard_versions(ctx: RunContext, prep: Prepared, method: ReleaseMethod) -> None:
    """Run every version guard in order (after ``identify``); the first refusal raises."""
    for check in VERSION_GUARDS:
        check(ctx, prep, method)
