"""Risk stage: what an attacker can do with the published version, measured in SQL.

Two steps, both inside the run's transaction:

- ``check_kept_columns`` (right after materialize, before the history check): the models
  protect against an attacker who knows the quasi-identifiers. Kept columns are published as
  they are, so an attacker who also knows them (they are often just as public: race, marital
  status, occupation) sees classes on QIDs + kept columns. When those single out records the
  QIDs alone do not, the run says so in one line with the counts and the remedy, and refuses
  (``[privacy] kept_columns = "refuse"``, the default) or publishes with the warning ("warn").
  Refusal raises inside the transaction: nothing of the version is published.
- ``measure`` (after verify): the re-identification risk of the source and of the written
  version on the QIDs (engine/risk), stored side by side in ``_ppdp.risk`` and returned for the
  run record and the terminal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ppdp.engine.core.person import ROW_UNIT_ASSUMED, unit_label
from ppdp.engine.methods.base import ReleaseMethod
from ppdp.engine.methods.context import RunContext
from ppdp.engine.methods.results import Candidate, Prepared
from ppdp.engine.risk import assess, histogram
from ppdp.errors import KeptColumnsRefusal
from ppdp.sql import catalog as C
from ppdp.sql import person as SP


@dataclass(frozen=True)
class KeptColumnsCheck:
    """Records unique on the QIDs alone and on the released columns (QIDs + kept columns)."""

    kept: tuple[str, ...]
    rows: int
    unique_on_qids: int
    unique_on_released: int
    policy: str

    @property
    def singled_out(self) -> int:
        """Records the kept columns single out (unique on QIDs + kept, not on the QIDs alone)."""
        return self.unique_on_released - self.unique_on_qids

    def message(self) -> str:
        return (f"{self.unique_on_released:,} of {self.rows:,} published rows are unique on the published columns "
                f"(QIDs + kept {', '.join(self.kept)}), {self.unique_on_qids:,} on the QIDs alone: an attacker who knows "
                f"the kept columns singles out {self.singled_out:,} more. Remedy: make those kept columns quasi-identifiers "
                "(with a hierarchy) or drop them.")

    def as_dict(self) -> dict[str, Any]:
        return {"kept": list(self.kept), "rows": self.rows, "unique_on_qids": self.unique_on_qids,
                "unique_on_released": self.unique_on_released, "policy": self.policy,
                "singled_out": self.singled_out, "message": self.message() if self.singled_out > 0 else None}


def check_kept_columns(ctx: RunContext, prep: Prepared, method: ReleaseMethod, candidate: Candidate) -> KeptColumnsCheck | None:
    """Refuse (or warn about) kept columns that single out records; None without kept columns
    or for a method whose rows do not form classes (heterogeneous k-anonymity checks its own
    rows, kept columns included, against the source in its consistency graph)."""
    spec = ctx.spec
    if not method.publishes_classes:
        return None
    kept = tuple(c for c in spec.keep if c in candidate.columns)
    qids = [q for q in spec.qid_columns if q in candidate.columns]
    if not kept or not qids or candidate.rows == 0:
        return None
    if spec.counts_persons:  # persons unique, each counted once per published combination
        on_qids = histogram(ctx.con, _persons(ctx, prep, candidate.relation, qids), qids)
        on_all = histogram(ctx.con, _persons(ctx, prep, candidate.relation, [*qids, *kept]), [*qids, *kept])
    else:
        on_qids = histogram(ctx.con, candidate.relation, qids)
        on_all = histogram(ctx.con, candidate.relation, [*qids, *kept])
    check = KeptColumnsCheck(kept, on_qids.records, on_qids.of_size(1), on_all.of_size(1), spec.kept_columns)
    ctx.clock.mark("kept_columns_check")
    if check.singled_out > 0 and spec.kept_columns == "refuse":
        raise KeptColumnsRefusal(check.message() + " Nothing was published ([privacy] kept_columns = \"warn\" would publish anyway).")
    return check


def _persons(ctx: RunContext, prep: Prepared, relation: str, columns: list[str]) -> str:
    """``relation`` (a version table) projected onto persons (one row per person and combination
    of ``columns``; no person value), as a FROM-clause relation."""
    return SP.as_relation(SP.version_persons(relation, ctx.release, columns, ctx.dialect))


def measure(ctx: RunContext, prep: Prepared, method: ReleaseMethod, table: str, kept: KeptColumnsCheck | None) -> dict[str, Any]:
    """Risk of the source and of ``table`` (the written version) on the QIDs, stored in
    ``_ppdp.risk``; the source is taken as its own population (sampling fraction 1). A method
    whose rows do not form equivalence classes gets no class-based release risk (None)."""
    con, spec = ctx.con, ctx.spec
    qids = spec.qid_columns
    if not spec.counts_persons:
        source = assess(con, prep.source.sql(), qids, attributes=False).summary() | {"unit": ROW_UNIT_ASSUMED}
        released = assess(con, table, qids, attributes=False).summary() if method.publishes_classes else None
    else:  # counted per person (docs/design/person_unit.md): rows of one person are one record
        unit = unit_label(spec.person_column)
        source = assess(con, SP.as_relation(SP.table_persons(prep.source.sql(), spec.person_column, qids, ctx.dialect)), qids,
                        attributes=False).summary() | {"unit": unit}
        released = (assess(con, _persons(ctx, prep, table, qids), qids, attributes=False).summary()
                    if method.publishes_classes else None)
    if released is not None:
        released = released | {"unit": source["unit"]}
    out = {"columns": qids, "source": source, "release": released, "unit": source["unit"],
           "kept_columns": None if kept is None else kept.as_dict()}
    con.execute(C.insert_risk(ctx.dialect), [ctx.release, ctx.version, ctx.run_id, json.dumps(qids), json.dumps(source),
                                             json.dumps(released), json.dumps(out["kept_columns"])])
    ctx.clock.mark("risk")
    return out
