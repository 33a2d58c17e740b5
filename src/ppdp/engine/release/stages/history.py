"""Stage 6: privacy across versions and deltas (the difference attack), before publishing.

Threat: someone keeps every published version and every delta, knows each person's QIDs, and
knows exactly who joined, who left and whose record changed at each step. Published rows keep
their random ``ppdp_row_id`` across versions, so such a person can follow rows and narrow a
target down to the rows whose *history* (generalized labels in each version present, absences,
and the steps at which the sensitive value changed) matches the target's: a union of history
classes (sql/history.py). The guarantee: every history class satisfies each privacy model on
its sensitive values in every version in which it is present. Because k, distinct-l, entropy-l
and Euclidean t-closeness hold for a union when they hold for its parts, the attacker above can
never narrow anyone below the model; in particular, in each joint class the records inserted,
the records deleted and the records changed at a step each form classes that satisfy the model.

Mechanism, when a class of the new version fails: hold the step back for its records.
- a record that appears (inserted, or no longer suppressed) is withheld: published later, when
  enough others join its class;
- a record that vanishes (deleted, or newly suppressed) keeps its previous published row, and
- a changed record keeps its previous published row, until enough records of its class change
  the same way (a row of the previous version may stand only while the generalization is the
  same: ``ReleaseMethod.carries``; otherwise the change is withheld, or the step is refused).
First the records of the failing classes are held back; if a class still fails, every change
among the records that shared its history up to the previous version is held back, which
restores that class as it was published before. What cannot be restored (a model made stricter
since earlier versions, levels that changed under ``reoptimize``), or needs more than
``dynamic.max_repair_fraction`` of the rows, or any repair under ``policy = "strict"``, refuses
the step with a message naming the model, the classes and the remedy. We chose holding back
over fresh row ids per version (they do not stop counting by class: a class's multiset of
sensitive values still changes by exactly the changed person's) and over m-invariance's
counterfeit rows (fake rows in a warehouse table mislead every analyst's counts).
"""

from __future__ import annotations

import hashlib

import polars as pl

from ppdp.engine.core.person import failing_signatures
from ppdp.engine.core.spec import spec_diff
from ppdp.engine.methods.base import ChecksOwnHistory, ReleaseMethod, ReleasePlan
from ppdp.engine.methods.context import MAX_ROUNDS, RunContext
from ppdp.engine.methods.results import Candidate, HistoryOutcome, Prepared
from ppdp.engine.privacy import plan_oracle
from ppdp.errors import CrossVersionRefusal, VerificationError
from ppdp.sql import catalog as C
from ppdp.sql import history as H
from ppdp.sql import person as SP
from ppdp.sql import publish as P
from ppdp.sql import verify as V
from ppdp.sql.quoting import quote_table

NEW_HISTORY = hashlib.md5(b"").hexdigest()  # sig_prev of rows never published before


def version_tables(ctx: RunContext, versions: list[int]) -> list[tuple[int, str]]:
    return [(v, ctx.published.version_table(v)) for v in versions]


def failing_classes(ctx: RunContext, prep: Prepared, versions: list[tuple[int, str]], current: int,
                    sig: str | None = None) -> dict[str, list[str]]:
    """History classes that fail a model, by model description -> list of sig_now. Only the
    classes this step reveals anew, unless the models changed since the previous version (then
    every class must meet the new models). ``sig``: the row histories (default: computed from
    every version, ``sql.history.signatures``)."""
    if ctx.spec.counts_persons:
        return person_failing_classes(ctx, prep, sig or H.signatures(versions, ctx.spec.qid_columns, list(ctx.spec.sensitive),
                                                                     current, ctx.dialect))
    only_fresh = ctx.previous is not None and not spec_diff(ctx.previous.spec, ctx.spec.raw).changed("privacy")
    d, spec = ctx.dialect, ctx.spec
    qids, sens = spec.qid_columns, list(spec.sensitive)
    sig = sig or H.signatures(versions, qids, sens, current, d)
    if only_fresh:
        sig = H.fresh(sig, NEW_HISTORY)
    out: dict[str, list[str]] = {}
    present = [v for v, _ in versions]

    def values_at(v: int) -> str:
        return H.class_values(sig, versions, qids, sens, v, d)

    def q_at(v: int) -> str:
        return V.stored_q(ctx.release, v, d)

    for m in prep.models:
        bad: set[str] = set()
        queries = m.history_failures(sig, values_at, q_at, present, d=d)
        if queries is None:  # fail closed; engine/release/stages/guards.py refuses such a model before any write
            raise VerificationError(f"{m.name} has no history check across versions; nothing may be published under it.")
        for sql in queries:
            bad |= set(ctx.con.query(sql)["sig_now"].to_list())
        if bad:
            out[f"{m.name} {m.params()}"] = sorted(bad)
    return out


def person_failing_classes(ctx: RunContext, prep: Prepared, sig: str) -> dict[str, list[str]]:
    """A person release (docs/design/person_unit.md): the attacker knows all of a person's rows,
    so a person's *signature* -- the set of history classes its rows are in -- must be shared by
    at least k persons; the history classes of the persons it is not are returned (all of them,
    not only those this step reveals: a person's signature can split when another person of its
    group changes)."""
    k = plan_oracle(prep.models).params.k
    pairs = ctx.con.query(SP.history_persons(sig, ctx.release, ctx.dialect))
    classes, _, _ = failing_signatures(pairs, k)
    return {f"k-anonymity per person {{'k': {k}}}": classes} if classes else {}


def check_history(ctx: RunContext, prep: Prepared, method: ReleaseMethod, plan: ReleasePlan,
                  candidate: Candidate, published: list[int]) -> HistoryOutcome:
    """Hold back what would single someone out across versions, or refuse the step."""
    if not published:
        return HistoryOutcome(None)
    if not method.publishes_classes:  # no equivalence classes: the method's own rule (cross_version)
        if not isinstance(method, ChecksOwnHistory):
            raise TypeError(f"release method {method.name!r} publishes no classes and has no cross_version check")
        return method.cross_version(ctx, prep, plan, candidate, published)
    con, d, spec = ctx.con, ctx.dialect, ctx.spec
    previous = version_tables(ctx, published)
    prev_rel = previous[-1][1]
    prev_cols = tuple(c for c, _ in con.relation_columns(spec.output_schema, ctx.published.version_name(published[-1])) or [])
    carry_ok = ctx.previous is not None and method.carries(plan, ctx.previous) and prev_cols == candidate.columns
    name = f"reverts_{ctx.run_id}"
    reverts = quote_table(C.PRIVATE_SCHEMA, name, d)
    con.execute(C.reverts_table(name, d))
    effective = P.effective_version(candidate.relation, prev_rel if carry_ok else None, reverts, d)
    versions = previous + [(ctx.version, effective)]
    # the histories up to the previous version, once; each round joins the new version to them
    prefix_name = f"prefix_{ctx.run_id}"
    prefix = quote_table(C.PRIVATE_SCHEMA, prefix_name, d)
    con.execute(P.create_as(prefix, H.prefix_select(previous, spec.qid_columns, list(spec.sensitive), published[-1], d)))
    step = H.step_signatures(prefix, (ctx.version, effective), spec.qid_columns, list(spec.sensitive), NEW_HISTORY, d)
    sig_name = f"sig_{ctx.run_id}"
    sig_table = quote_table(C.PRIVATE_SCHEMA, sig_name, d)
    sig = P.select_all(sig_table)  # each round's histories, written once and read by every query of the round
    actions: dict[str, str] = {}
    limit = int(spec.max_repair_fraction * prep.source_rows)
    failing: dict[str, list[str]] = {}
    for round_ in range(MAX_ROUNDS):
        con.execute(C.drop_private(sig_name, d, if_exists=True))
        con.execute(P.create_as(sig_table, step))
        failing = failing_classes(ctx, prep, versions, ctx.version, sig)
        if not failing:
            break
        if not spec.holds_back_changes:
            _refuse(ctx, failing, "dynamic.policy \"strict\" publishes a step whole or not at all",
                    "use dynamic.policy = \"stable-levels\" to hold such records back until their class is large enough")
        new = _actions(ctx, sig, failing, widen=round_ > 0, carry_ok=carry_ok, done=actions)
        if not new:
            _refuse(ctx, failing, _why_unrepairable(carry_ok),
                    "publish under a new output name (a fresh release), or keep the earlier levels and models")
        actions |= new
        if len(actions) > limit:
            _refuse(ctx, failing, f"holding them back needs {len(actions)} rows, more than dynamic.max_repair_fraction "
                    f"allows ({limit} of {prep.source_rows})", "raise dynamic.max_repair_fraction, or publish less often "
                    "so that more changes share each class")
        con.execute(C.drop_private(name, d))
        con.write_frame(C.PRIVATE_SCHEMA, name, pl.DataFrame({"row_id": list(actions), "action": list(actions.values())},
                                                             schema={"row_id": pl.String, "action": pl.String}))
    else:
        _refuse(ctx, failing, f"{MAX_ROUNDS} rounds of holding back did not make every class safe", "raise k's margin or publish less often")
    counts = {a: sum(1 for x in actions.values() if x == a) for a in ("withhold", "carry", "keep")}
    size = con.query(H.class_count(sig)).row(0, named=True)
    con.execute(C.drop_private(prefix_name, d))
    con.execute(C.drop_private(sig_name, d))
    if not actions:  # nothing held back: publish never reads (nor drops) it
        con.execute(C.drop_private(name, d))
    record = {"versions_checked": len(versions), "passed": True, "history_classes": int(size["classes"]),
              "rows_ever_published": int(size["rows_ever"]), "smallest_history_class": int(size["smallest"] or 0),
              "held_back": {"inserts_withheld": counts["withhold"], "deletes_delayed": counts["carry"], "changes_delayed": counts["keep"]}}
    return HistoryOutcome(reverts if actions else None, counts["withhold"], counts["carry"], record)


def _actions(ctx: RunContext, sig: str, failing: dict[str, list[str]], *, widen: bool, carry_ok: bool,
             done: dict[str, str]) -> dict[str, str]:
    """Row id -> 'withhold' (appears: not yet), 'carry' (leaves: its previous row stays) or 'keep'
    (changes: its previous row stays) for the records whose step is to be held back."""
    con, d = ctx.con, ctx.dialect
    classes = sorted({s for sigs in failing.values() for s in sigs})
    stage = f"failing_{ctx.run_id}"
    con.execute(C.drop_private(stage, d, if_exists=True))
    con.write_frame(C.PRIVATE_SCHEMA, stage, pl.DataFrame({"sig": classes}, schema={"sig": pl.String}))
    rows = con.query(H.rows_of_classes(sig, C.private(stage, d), "sig_now"))
    if widen:  # every change among the records that shared a history up to the previous version
        groups = sorted(set(rows["sig_prev"].to_list()) - {NEW_HISTORY})
        con.execute(C.drop_private(stage, d))
        con.write_frame(C.PRIVATE_SCHEMA, stage, pl.DataFrame({"sig": groups}, schema={"sig": pl.String}))
        rows = pl.concat([rows, con.query(H.rows_of_classes(sig, C.private(stage, d), "sig_prev"))])
    con.execute(C.drop_private(stage, d))
    out: dict[str, str] = {}
    for rid, present_now, present_prev, changed in rows.select("rid", "present_now", "present_prev", "changed").iter_rows():
        if rid in done or rid in out:
            continue
        if present_now and not present_prev:
            out[rid] = "withhold"
        elif present_prev and not present_now:
            if carry_ok:
                out[rid] = "carry"
        elif present_now and present_prev and changed:
            out[rid] = "keep" if carry_ok else "withhold"
    return out


def _why_unrepairable(carry_ok: bool) -> str:
    if carry_ok:
        return ("the failing classes were formed by earlier versions (the models are stricter than when those were "
                "published), and no change of this step can be held back to restore them")
    return ("the generalization differs from the previous version's, so records that left or changed cannot keep "
            "their previous rows")


def _refuse(ctx: RunContext, failing: dict[str, list[str]], why: str, hint: str) -> None:
    detail = "; ".join(f"{model}: {len(sigs)} history class(es) fail" for model, sigs in failing.items())
    raise CrossVersionRefusal(
        f"Cross-version privacy check failed for release {ctx.release} v{ctx.version}: someone holding every version "
        f"and knowing who joined, left or changed could single out records ({detail}); {why}. Nothing was published. "
        f"Hint: {hint}."
    )
