"""The report's risk section: ``ppdp risk`` of the source and of the reported version.

Both are measured now by ``ppdp.engine.risk.assess`` with its defaults (f = 1, threshold 0.2),
so each column of the page's table is exactly what ``ppdp risk --json`` prints for the same
relation and columns: the version's table on its published QID columns (``ppdp risk RELEASE
--version V``; a heterogeneous release publishes a numeric QID as its _min/_max columns) and the
source table on the QIDs (``ppdp risk --table SCHEMA.TABLE --qids ...``).
"""

from __future__ import annotations

from typing import Any

from ppdp.connectors.base import Connector
from ppdp.engine.report.gather import RiskView
from ppdp.sql.quoting import quote_table


def measured_risk(con: Connector, relation: str, version: int, qids: list[str], published: list[str], run: Any) -> RiskView:
    """Risk of the source table and of version ``version`` (``relation``) for an attacker who knows the QIDs."""
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

