"""The report's risk section: ``ppdp risk`` of the source and of the reported version.

Read from ``_ppdp.risk``, where the run that published the version stored both (the source as it
was then), or, for versions published before runs stored risk, measured now by
``ppdp.engine.risk.assess``. Either way with its defaults (f = 1, threshold 0.2), so each column of
the page's table is what ``ppdp risk --json`` prints for the same relation and columns: the
version's table (``ppdp risk RELEASE --version V``; a heterogeneous release publishes a numeric
QID as its _min/_max columns) and the source on the QIDs (``ppdp risk --table SCHEMA.TABLE``).
"""

from __future__ import annotations

from typing import Any

from ppdp.connectors.base import Connector
from ppdp.engine import catalog
from ppdp.engine.report.gather import RiskView
from ppdp.sql.quoting import quote_table


def measured_risk(con: Connector, relation: str, version: int, qids: list[str], published: list[str], run: Any) -> RiskView:
    """Risk of the source and of version ``version`` (``relation``) for an attacker who knows the
    QIDs: as the run stored it in ``_ppdp.risk`` (the source as it was when the version was
    published), else measured now."""
    import json

    from ppdp.sql import report as R

    if con.relation_columns(catalog.PRIVATE_SCHEMA, "risk") is not None:
        rows = con.query(R.select_risk(con.dialect), [run.release, version])
        if rows.height:
            row = rows.row(0, named=True)
            cols = json.loads(row["columns"])
            kept = json.loads(row["kept_columns"] or "null")
            note = (f"Stored by the run that published version {version} (_ppdp.risk): the source as it was then "
                    f"(ppdp risk --table SOURCE --qids {','.join(cols)} --json) and the version (ppdp risk RELEASE "
                    f"--version {version} --qids {','.join(published)} --json).")
            if kept and kept.get("message"):
                note += f" Kept columns ({kept.get('policy')}): {kept['message']}"
            elif kept:
                note += (f" Kept columns {', '.join(kept.get('kept', []))}: single out no record the QIDs alone do not "
                         f"({kept.get('unique_on_released', 0):,} unique on the published columns).")
            return RiskView(tuple(published), json.loads(row["source"]), json.loads(row["released"]), note)
    return _measure_now(con, relation, version, qids, published, run)


def _measure_now(con: Connector, relation: str, version: int, qids: list[str], published: list[str], run: Any) -> RiskView:
    """Versions published before runs stored their risk: both sides measured now."""
    from ppdp.engine.risk import assess

    release_json = assess(con, relation, published).to_json() if published else None
    src = run.spec.get("source", {})
    source_json, note = None, ""
    table = src.get("table")
    if table:
        sschema = src.get("schema") or con.default_schema
        if con.relation_columns(sschema, table) is not None:
            source_json = assess(con, quote_table(sschema, table, con.dialect), qids).to_json()
            note = (f"Source: ppdp risk --table {sschema}.{table} --qids {','.join(qids)} --json, measured on the source as it "
                    "is now (it may have changed since this version was published).")
        else:
            note = f"The source table {sschema}.{table} is not readable here; only the release is measured."
    else:
        note = "The source is a query or a file; only the release is measured."
    note += f" Release: ppdp risk RELEASE --version {version} --qids {','.join(published)} --json."
    return RiskView(tuple(published), source_json, release_json, note)

