"""A column's profile: what ``auto`` hierarchies and ``ppdp suggest`` decide from.

``profile_table`` reads every column's statistics in one aggregate statement (sql/profile.py):
non-NULL and distinct counts, text lengths, code-shaped values, and for numbers and dates the
range and approximate quantiles. ``kind_of`` reads a SQL type as number, date, timestamp, bool
or text, the way DuckDB, PostgreSQL and Spark name their types.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ppdp.connectors.base import Connector
from ppdp.sql import profile as P

_NUMBER = re.compile(r"^(tiny|small|big|huge|u?)?int|^integer|^decimal|^numeric|^double|^float|^real|^long|^short|^byte|^ubigint|^usmallint|^utinyint|^uinteger", re.I)


def kind_of(sql_type: str | None) -> str:
    """number, date, timestamp, bool or text (unknown types and strings: text)."""
    t = (sql_type or "").strip().lower()
    if _NUMBER.match(t):
        return "number"
    if t == "date":
        return "date"
    if t.startswith("timestamp"):
        return "timestamp"
    if t in ("boolean", "bool"):
        return "bool"
    return "text"


@dataclass(frozen=True)
class ColumnProfile:
    name: str
    kind: str  # number, date, timestamp, bool, text
    rows: int
    nonnull: int
    distinct: int  # approximate on DuckDB and Spark (HyperLogLog), exact on PostgreSQL
    min_len: int | None  # text columns only (None for numbers and dates)
    max_len: int | None
    code_share: float  # share of the non-NULL values whose text is code-shaped (text columns; else 0)
    vmin: object = None
    vmax: object = None
    quantiles: tuple[float, ...] = ()  # at sql/profile.py QUANTILES

    @property
    def nulls(self) -> int:
        return self.rows - self.nonnull

    def quantile(self, q: float) -> float:
        return self.quantiles[P.QUANTILES.index(q)]


def profile_table(con: Connector, relation: str, types: dict[str, str | None]) -> dict[str, ColumnProfile]:
    """Every column of ``types`` (name -> SQL type) profiled in one statement over ``relation``
    (SQL text, already quoted: a table or ``Source.sql()``)."""
    kinds = {c: kind_of(t) for c, t in types.items()}
    cols = [(c, {"number": "number", "date": "date", "timestamp": "date"}.get(k, "text")) for c, k in kinds.items()]
    row = con.query(P.profile_query(relation, cols, con.dialect)).row(0, named=True)
    n = int(row["n"])
    out = {}
    for i, (c, _) in enumerate(cols):
        nn = int(row[f"c{i}_nn"] or 0)
        qs = row.get(f"c{i}_q")
        out[c] = ColumnProfile(
            c, kinds[c], n, nn, min(int(row[f"c{i}_nd"] or 0), nn), _int(row.get(f"c{i}_lmin")), _int(row.get(f"c{i}_lmax")),
            (int(row.get(f"c{i}_code") or 0) / nn) if nn else 0.0, row.get(f"c{i}_vmin"), row.get(f"c{i}_vmax"),
            tuple(float(q) for q in qs) if qs is not None and all(q is not None for q in qs) else ())
    return out


def _int(v) -> int | None:
    return None if v is None else int(v)


def from_counts(name: str, kind: str | None, counts: dict[str, int], rows: int) -> ColumnProfile:
    """A profile from a column's value counts. ``kind`` None: not described (a source.query's
    columns): a column whose every value reads as a number is a number, else text."""
    values = list(counts)
    nonnull = sum(counts.values())
    if kind is None:
        try:
            [float(v) for v in values]
            kind = "number"
        except ValueError:
            kind = "text"
    lens = [len(v) for v in values]
    code = sum(c for v, c in counts.items() if re.match(P.CODE_PATTERN, v))
    prof = ColumnProfile(name, kind, rows, nonnull, len(values), min(lens, default=None), max(lens, default=None),
                         code / nonnull if nonnull else 0.0)
    if kind == "number" and values:
        ordered = sorted(((v, float(v)) for v in values), key=lambda kv: kv[1])
        cum, qs, i = 0, [], 0
        for q in P.QUANTILES:
            while i < len(ordered) - 1 and cum + counts[ordered[i][0]] < q * nonnull:
                cum += counts[ordered[i][0]]
                i += 1
            qs.append(ordered[i][1])
        prof = ColumnProfile(name, kind, rows, nonnull, len(values), prof.min_len, prof.max_len, prof.code_share,
                             ordered[0][1], ordered[-1][1], tuple(qs))
    elif kind in ("date", "timestamp") and values:
        prof = ColumnProfile(name, kind, rows, nonnull, len(values), prof.min_len, prof.max_len, prof.code_share,
                             min(values), max(values))
    return prof
