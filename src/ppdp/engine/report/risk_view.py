"""The report's risk section: ``ppdp risk`` of the source and of the reported version."""

from __future__ import annotations

from typing import Any

from ppdp.connectors.base import Connector
from ppdp.engine.report.gather import RiskView


def measured_risk(con: Connector, release: str, relation: str, version: int, qids: list[str], run: Any) -> RiskView:
    """Risk of the source and of the version on the release's QIDs (placeholder until ppdp.engine.risk lands)."""
    return RiskView(tuple(qids), None, None, "risk was not measured for this version")
