"""How ``ppdp utility`` prints a version's utility (engine/app/cli.py stays a thin parser)."""

from __future__ import annotations

from typing import Any

from ppdp.engine.utility import UtilityAssessment
from ppdp.engine.utility.base import measures


def _number(v: Any) -> str:
    if v is None or (isinstance(v, float) and v != v):  # noqa: PLR0124
        return "n/a"
    return f"{v:,.4f}" if abs(v) < 1e6 else f"{v:,.1f}"


def describe(a: UtilityAssessment) -> str:
    """A header, then one line per measure: its value and, for ARX's models, its per-QID values."""
    values = dict(a.measures)
    lines = [f"utility of {a.relation}: {a.rows:,} source rows, {a.withheld:,} withheld ({a.method}); quality, higher is better"]
    for m in measures():
        v = values.get(m.name)
        if isinstance(v, dict):
            line = f"  {m.title:<32} {_number(v.get('value'))}"
            cols = v.get("columns")
            if cols:
                line += "   (" + ", ".join(f"{c} {_number(x)}" for c, x in cols.items()) + ")"
        else:
            line = f"  {m.title:<32} {_number(v)}"
        lines.append(line)
    return "\n".join(lines)
