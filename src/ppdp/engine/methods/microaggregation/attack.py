"""A sensitive-value difference attacker against a sequence of microaggregation releases.

None of the papers measures this. The attacker keeps every published version
and knows, between two consecutive versions, who was inserted, deleted or modified and their
QIDs (for a modification: the new QIDs). For each changed person it computes the probability of
the person's exact sensitive value and of its catalogue category.

Model (the DRASL paper's difference attack of Tables 6-8, without row ids: DRASL publishes
tables). A published version is a list of groups; a group is its generalized QID box (per QID a
numeric range or the set of values its generalization covers) and the multiset of its SA values.
Real and forged rows are indistinguishable. For one change between versions ``v`` and ``v + 1``:

1. The *located* version is ``v + 1`` for an insertion or a modification (the person's new SA is
   the target) and ``v`` for a deletion (the deleted SA is the target); the other version is the
   *reference*.
2. Groups present in one version and not in the other (same box and same multiset count as the
   same group) are the *changed* groups. The candidate groups are the changed groups of the
   located version whose box covers the person's QIDs.
3. For each candidate group, its counterpart in the reference version is the changed group
   there whose SA multiset differs least from it (smallest symmetric difference; ties go to the
   one with the same box, then the first), accepted only if the two share more than half of the
   candidate's values. No accepted counterpart means the group is new (insertion) or dissolved
   (deletion).
4. If exactly one candidate group has a counterpart and a non-empty difference, the candidate
   values are that difference: values added to the group (insertion, modification) or removed
   from it (deletion). Otherwise (no candidate group, several, a new or dissolved group, or an
   empty difference) the attacker falls back to the union of the whole multisets of the
   candidate groups; with no candidate group at all, of every group of the located version
   covering the QIDs; with none of those either, of the whole located version.
5. P(exact) is the share of the true value among the candidate values, P(category) the share of
   values in the true value's catalogue category.

So an insertion into a group that gets no forged row gives P = 1; DRASL's forged row with Link 0
to the new value gives P(exact) = P(category) = 1/2 (two added values in different
categories). Several changes between the same two versions blur each other: the attacker uses
the same rule, and the differences then hold every change's values.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ppdp.engine.methods.microaggregation.linkage import SensitiveCatalogue
from ppdp.errors import DataError

ChangeKind = Literal["insert", "delete", "modify"]


@dataclass(frozen=True)
class PublishedGroup:
    """One published group: per QID a numeric ``(lo, hi)`` range or a frozenset of covered
    values (``box``, a tuple of (column, range-or-set) pairs in QID order), and its SA values
    as a sorted tuple (a multiset; real and forged rows alike)."""

    box: tuple[tuple[str, Any], ...]
    sa: tuple[str, ...]
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sa", tuple(sorted(self.sa)))
        object.__setattr__(self, "_hash", hash((self.box, self.sa)))

    def __hash__(self) -> int:
        return self._hash

    def covers(self, qids: Mapping[str, Any]) -> bool:
        """Whether the person's QID values fall inside this group's generalization."""
        for column, gen in self.box:
            x = qids[column]
            if isinstance(gen, frozenset):
                if x not in gen:
                    return False
            else:
                lo, hi = gen
                if not lo <= float(x) <= hi:
                    return False
        return True


@dataclass(frozen=True)
class Change:
    """One change between two versions as the attacker knows it: the person, the kind, their
    QIDs (new QIDs for a modification), and, for scoring only, their true SA value (the
    inserted, new, or deleted value)."""

    person: int
    kind: ChangeKind
    qids: Mapping[str, Any]
    true_sa: str


@dataclass(frozen=True)
class AttackResult:
    """The attacker's inference for one changed person after version ``version``."""

    person: int
    kind: ChangeKind
    version: int
    p_exact: float
    p_category: float
    candidates: int
    fallback: bool


def _changed(a: Sequence[PublishedGroup], b: Sequence[PublishedGroup]) -> list[PublishedGroup]:
    """Groups of ``a`` that ``b`` does not have (as multisets of groups)."""
    left = Counter(b)
    out = []
    for g in a:
        if left[g] > 0:
            left[g] -= 1
        else:
            out.append(g)
    return out


def _counterpart(g: PublishedGroup, others: Sequence[PublishedGroup]) -> PublishedGroup | None:
    mine = Counter(g.sa)
    best, best_key = None, None
    for o in others:
        theirs = Counter(o.sa)
        sym = sum(((mine - theirs) + (theirs - mine)).values())
        key = (sym, o.box != g.box)
        if best_key is None or key < best_key:
            best, best_key = o, key
    if best is None:
        return None
    shared = sum((mine & Counter(best.sa)).values())
    return best if 2 * shared > len(g.sa) else None


def infer(before: Sequence[PublishedGroup], after: Sequence[PublishedGroup], change: Change,
          catalogue: SensitiveCatalogue) -> tuple[list[str], bool]:
    """The candidate SA values for one change (see the module docstring) and whether the
    attacker fell back to whole multisets."""
    located, reference = (before, after) if change.kind == "delete" else (after, before)
    changed_here = _changed(located, reference)
    changed_there = _changed(reference, located)
    candidates = [g for g in changed_here if g.covers(change.qids)]
    diffs: list[list[str] | None] = []
    for g in candidates:
        c = _counterpart(g, changed_there)
        if c is None:
            diffs.append(None)
        else:
            diffs.append(list((Counter(g.sa) - Counter(c.sa)).elements()))
    if len(candidates) == 1 and diffs[0]:
        return diffs[0], False
    pool = candidates or [g for g in located if g.covers(change.qids)] or list(located)
    return [v for g in pool for v in g.sa], True


def attack(versions: Sequence[Sequence[PublishedGroup]], changes: Sequence[Sequence[Change]],
           catalogue: SensitiveCatalogue) -> list[AttackResult]:
    """Run the difference attacker over a release history: ``changes[i]`` are the changes
    between ``versions[i]`` and ``versions[i + 1]``. One result per change."""
    if len(changes) != len(versions) - 1:
        raise DataError(f"Got {len(versions)} versions and {len(changes)} change lists. "
                        "Hint: give one list of changes between each two consecutive versions.")
    out = []
    for i, batch in enumerate(changes):
        for ch in batch:
            values, fallback = infer(versions[i], versions[i + 1], ch, catalogue)
            out.append(score(ch, values, fallback, i + 1, catalogue))
    return out


def score(change: Change, values: Sequence[str], fallback: bool, version: int,
          catalogue: SensitiveCatalogue) -> AttackResult:
    """P(exact) and P(category) of the change's true value among the candidate values."""
    n = len(values)
    if n == 0:
        return AttackResult(change.person, change.kind, version, 0.0, 0.0, 0, fallback)
    cat = catalogue.category(change.true_sa)
    exact = sum(1 for v in values if v == change.true_sa)
    same_cat = sum(1 for v in values if catalogue.category(v) == cat)
    return AttackResult(change.person, change.kind, version, exact / n, same_cat / n, n, fallback)


def summarize(results: Sequence[AttackResult]) -> dict[str, float]:
    """Mean and worst case of P(exact) and P(category) over the changed persons, and the share
    of changes where the attacker fell back to whole groups."""
    if not results:
        return {"changes": 0, "p_exact_mean": 0.0, "p_exact_max": 0.0, "p_category_mean": 0.0,
                "p_category_max": 0.0, "fallback_share": 0.0}
    pe = [r.p_exact for r in results]
    pc = [r.p_category for r in results]
    return {"changes": len(results), "p_exact_mean": sum(pe) / len(pe), "p_exact_max": max(pe),
            "p_category_mean": sum(pc) / len(pc), "p_category_max": max(pc),
            "fallback_share": sum(r.fallback for r in results) / len(results)}
