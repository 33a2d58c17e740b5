"""``ppdp report``: one self-contained HTML page about a published release version.

gather.py reads what the page shows (``_ppdp`` and the published relations, through the
connector; SQL in sql/report.py), html.py and svg.py render it; nothing here writes to the
database.
"""

from __future__ import annotations

from pathlib import Path

from ppdp.connectors.base import Connector
from ppdp.engine.app.report.gather import ReportData, gather
from ppdp.engine.app.report.html import render

__all__ = ["ReportData", "build_report", "gather", "render", "write_report"]


def build_report(con: Connector, name: str, *, version: int | None = None, external: bool = False,
                 classify: str | None = None) -> str:
    """The report page of version ``version`` (default: current) of release ``name``;
    ``classify``: a target to train the classifier of release against source on."""
    from ppdp.engine.app.report.risk_view import measured_risk
    from ppdp.engine.app.report.utility_view import measured_analysis

    return render(gather(con, name, version=version, external=external, risk=measured_risk,
                         analysis=measured_analysis(classify)))


def write_report(con: Connector, name: str, out: str | Path, *, version: int | None = None, external: bool = False,
                 classify: str | None = None) -> int:
    """Write the page to ``out``; returns its size in bytes."""
    page = build_report(con, name, version=version, external=external, classify=classify).encode("utf-8")
    Path(out).write_bytes(page)
    return len(page)
