"""Dates and timestamps: ARX's granularities, each a calendar period that nests in the next.

``ladder`` lists the levels above the leaves, finest first, from ``GRANULARITIES``: minute
(``2020-03-14 10:23``), hour (``2020-03-14 10h``), day (``2020-03-14``), month (``2020-03``),
quarter (``2020-Q1``), year (``2020``), decade (``2020-2029``), century (``2000-2099``); then the
root ``*``. (ARX's week does not nest in month or year, so it is not offered in a ladder.) A leaf
is the database's text of a DATE or TIMESTAMP (ISO 8601). Time is read as written (a zone
suffix is ignored: the database wrote every value in one zone). A value outside the years 1..9999
(which the databases accept and Python's calendar does not) is refused with one line.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from ppdp.engine.core.hierarchy import Hierarchy, from_rows
from ppdp.errors import HierarchyError

NAME = "temporal"
GRANULARITIES = ("minute", "hour", "day", "month", "quarter", "year", "decade", "century")
_EPOCH = dt.datetime(1, 1, 1)


def parse(v: str, attribute: str = "?") -> dt.datetime:
    """The leaf text as a naive datetime (a DATE at midnight)."""
    text = v.strip()
    try:
        if len(text) == 10:
            return dt.datetime.combine(dt.date.fromisoformat(text), dt.time())
        core = text[:19].replace("T", " ")
        return dt.datetime.fromisoformat(core)
    except ValueError:
        raise HierarchyError(f"The auto hierarchy of {attribute!r} reads dates, but {v!r} is not a date of the years 1..9999 "
                             "(YYYY-MM-DD[ hh:mm:ss]). Hint: set such values to NULL, or give another hierarchy type.") from None


def seconds(t: dt.datetime) -> float:
    """A point on the builder's number line: seconds since 0001-01-01."""
    return (t - _EPOCH).total_seconds()


def _start(t: dt.datetime, g: str) -> dt.datetime:
    if g == "minute":
        return t.replace(second=0, microsecond=0)
    if g == "hour":
        return t.replace(minute=0, second=0, microsecond=0)
    d = t.replace(hour=0, minute=0, second=0, microsecond=0)
    if g == "day":
        return d
    if g == "month":
        return d.replace(day=1)
    if g == "quarter":
        return d.replace(month=3 * ((d.month - 1) // 3) + 1, day=1)
    if g == "year":
        return d.replace(month=1, day=1)
    span = 10 if g == "decade" else 100
    return d.replace(year=max(1, d.year - d.year % span), month=1, day=1)


def _end(start: dt.datetime, g: str) -> dt.datetime:
    """The first instant after the period that starts at ``start``."""
    if g in ("minute", "hour", "day"):
        return start + {"minute": dt.timedelta(minutes=1), "hour": dt.timedelta(hours=1), "day": dt.timedelta(days=1)}[g]
    months = {"month": 1, "quarter": 3, "year": 12, "decade": 120, "century": 1200}[g]
    if g in ("decade", "century") and start.year == 1:  # the first decade is 1..9, the first century 1..99
        months -= 12
    total = start.month - 1 + months
    return start.replace(year=start.year + total // 12, month=total % 12 + 1)


def _end_seconds(start: dt.datetime, g: str) -> float:
    try:
        return seconds(_end(start, g))
    except (ValueError, OverflowError):  # the period ending after 9999-12-31
        return seconds(dt.datetime(9999, 12, 31, 23, 59, 59)) + 1.0


def label(t: dt.datetime, g: str) -> str:
    s = _start(t, g)
    if g == "minute":
        return f"{s.year:04d}-{s.month:02d}-{s.day:02d} {s.hour:02d}:{s.minute:02d}"
    if g == "hour":
        return f"{s.year:04d}-{s.month:02d}-{s.day:02d} {s.hour:02d}h"
    if g == "day":
        return f"{s.year:04d}-{s.month:02d}-{s.day:02d}"
    if g == "month":
        return f"{s.year:04d}-{s.month:02d}"
    if g == "quarter":
        return f"{s.year:04d}-Q{(s.month - 1) // 3 + 1}"
    if g == "year":
        return f"{s.year:04d}"
    span = 10 if g == "decade" else 100
    first = s.year - s.year % span
    return f"{first:04d}-{first + span - 1:04d}"


def bounds(params: dict[str, Any], leaf: str, level: int) -> tuple[float, float]:
    """[start, end) in seconds of ``leaf``'s period at ``level``."""
    t = parse(leaf)
    ladder = list(params["ladder"])
    if level == 0:
        return seconds(t), seconds(t)
    if level > len(ladder):
        return float("-inf"), float("inf")
    g = ladder[level - 1]
    s = _start(t, g)
    return seconds(s), _end_seconds(s, g)


def ladder_for(lo: str, hi: str, *, timestamp: bool) -> list[str]:
    """The granularities above the leaves that still tell ``lo`` and ``hi`` apart (ARX's
    granularities, coarser than the leaves' own unit)."""
    a, b = parse(lo), parse(hi)
    start = 0 if timestamp else GRANULARITIES.index("month")
    out = [g for g in GRANULARITIES[start:] if label(a, g) != label(b, g)]
    if timestamp and len(out) > 6:  # a long ladder makes a deep lattice: keep ARX's common ones
        out = [g for g in out if g not in ("minute", "quarter")]
    return out


def build(attribute: str, leaves: list[str], params: dict[str, Any], counts: dict[str, int]) -> Hierarchy:
    ladder = list(params["ladder"])
    bad = [g for g in ladder if g not in GRANULARITIES]
    if bad or [GRANULARITIES.index(g) for g in ladder] != sorted(GRANULARITIES.index(g) for g in ladder):
        raise HierarchyError(f"The date hierarchy of {attribute!r} needs granularities from {', '.join(GRANULARITIES)}, "
                             f"finest first; got {ladder}.")
    rows = []
    for v in sorted(set(leaves)):
        t = parse(v, attribute)
        rows.append([v] + [label(t, g) for g in ladder] + ["*"])
    return from_rows(attribute, rows, source=f"auto: temporal ({' > '.join(ladder) or 'flat'})")
