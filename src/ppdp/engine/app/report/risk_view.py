"""The report's risk section: ``ppdp risk`` of the source and of the reported version.

Read from ``_ppdp.risk`` (``catalog.version_risks``), where the run that published the version
stored both (the source as it was then); what is not stored there is measured now by
``ppdp.engine.risk.assess``: versions published before runs stored risk, and the version side of
a heterogeneous release (its rows are not equivalence classes, so the run skips it; an attacker
still matches on the published columns, a numeric QID being its _min/_max pair). Either way with
assess's defaults (f = 1, threshold 0.2), so each column of the page's table is what
``ppdp risk --json`` prints for the same relation and columns.
"""

from __future__ import annotations

from typing import Any

from ppdp.connectors.base import Connector
from ppdp.engine.app.report.gather import RiskView
from ppdp.engine.core import catalog
from ppdp.engine.core.person import ROW_UNIT_ASSUMED, unit_label
from ppdp.sql.quoting import quote_table


def measured_risk(con: Connector, relation: str, version: int, qids: list[str], published: list[str], run: Any) -> RiskView:
    """Risk of the source and of version ``version`` (``relation``, whose ``published`` columns
    carry the QIDs) for an attacker who knows the QIDs."""
    from ppdp.engine.risk import assess

    stored = next((r for r in catalog.version_risks(con, run.release) if r["version"] == version), None)
    notes = []
    if stored is not None:
        source_json = stored["source"]
        notes.append(f"Source: stored by the run that published version {version} (_ppdp.risk), the source as it was then "
                     f"(ppdp risk --table SOURCE --qids {','.join(stored['columns'])} --json).")
        kept = stored.get("kept_columns")
        if kept and kept.get("message"):
            notes.append(f"Kept columns ({kept.get('policy')}): {kept['message']}")
        elif kept:
            notes.append(f"Kept columns {', '.join(kept.get('kept', []))} single out no record the QIDs alone do not.")
    else:
        source_json, note = _source_now(con, qids, run)
        notes.append(note)
    release_json = stored["release"] if stored is not None else None
    if release_json is not None:
        notes.append(f"Release: stored with it (ppdp risk RELEASE --version {version} --json).")
    elif published:
        release_json = assess(con, relation, published).to_json()
        notes.append(f"Release: measured now (ppdp risk RELEASE --version {version} --qids {','.join(published)} --json).")
    # the unit every figure counted (docs/design/person_unit.md): stored with the risk since the
    # person unit exists; a version measured now, or stored before, counted rows
    person = (run.spec.get("source") or {}).get("person")
    unit = (source_json or {}).get("unit") or (unit_label(person) if person and stored is not None else ROW_UNIT_ASSUMED)
    notes.insert(0, f"Counted per: {unit}.")
    return RiskView(tuple(published), source_json, release_json, " ".join(notes))


def _source_now(con: Connector, qids: list[str], run: Any) -> tuple[dict[str, Any] | None, str]:
    """The source table's risk measured now (no stored row for this version)."""
    from ppdp.engine.risk import assess

    src = run.spec.get("source", {})
    table = src.get("table")
    if not table:
        return None, "The source is a query or a file and its risk was not stored; only the release is measured."
    schema = src.get("schema") or con.default_schema
    if con.relation_columns(schema, table) is None:
        return None, f"The source table {schema}.{table} is not readable here; only the release is measured."
    return (assess(con, quote_table(schema, table, con.dialect), qids).to_json(),
            f"Source: ppdp risk --table {schema}.{table} --qids {','.join(qids)} --json, measured on the source as it is now "
            "(it may have changed since this version was published).")
