"""Summary statistics and contingency tables of a version beside its source, counted by SQL in
the database (ARX's analysis view; docs/concepts/utility.md).

Per published attribute: the number of records, distinct values and the mode with its share;
for a numeric attribute on both sides, the mean, sample variance and median, and the release's
range. The distance between the two distributions is

- for a numeric attribute on both sides (a microaggregated one): Kolmogorov-Smirnov's,
  the largest difference between the two empirical distribution functions;
- otherwise the total variation distance (half the L1 distance) between the source's
  distribution and the release's, a generalized label's records spread evenly over the leaves it
  covers (the version's hierarchy level, as query precision assumes them spread; a heterogeneous
  release's value set ``a|b`` over its members); records the release suppresses are simply
  absent from it.

What leaves the database is aggregates only. The source's least and greatest values are values of
single individuals and are never reported; a mode, a median and a contingency cell are reported
only when at least ``min_count`` records share them (otherwise ``None``, a cell ``"<min_count"``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ppdp.engine.core import catalog
from ppdp.engine.utility.sdc import _NUMERIC, released_number
from ppdp.engine.utility.version import PublishedVersion, published_version
from ppdp.errors import SpecError
from ppdp.sql import analysis as A
from ppdp.sql.heterogeneous import SET_SEPARATOR
from ppdp.sql.relations import version_name

MIN_COUNT = 10  # the smallest count a reported value or cell may have


def is_numeric_type(type_name: str) -> bool:
    return bool(_NUMERIC.search(type_name or ""))


@dataclass(frozen=True)
class Side:
    """One side's summary of an attribute."""

    records: int
    distinct: int
    mode: str | None
    mode_share: float | None
    mean: float | None = None
    variance: float | None = None
    median: float | None = None
    range: tuple[float, float] | None = None  # the release's only

    def to_json(self) -> dict[str, Any]:
        return {"records": self.records, "distinct": self.distinct, "mode": self.mode, "mode_share": self.mode_share,
                "mean": self.mean, "variance": self.variance, "median": self.median,
                "range": list(self.range) if self.range is not None else None}


@dataclass(frozen=True)
class AttributeSummary:
    attribute: str
    numeric: bool
    source: Side
    release: Side
    distance: float | None
    distance_kind: str  # "ks" or "tv"
    # the two distributions as shares, for plots: value -> share (values shared by fewer than
    # min_count records folded into "other")
    source_shares: dict[str, float] = field(default_factory=dict)
    release_shares: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"attribute": self.attribute, "numeric": self.numeric, "source": self.source.to_json(),
                "release": self.release.to_json(), "distance": self.distance, "distance_kind": self.distance_kind,
                "source_shares": dict(self.source_shares), "release_shares": dict(self.release_shares)}


@dataclass(frozen=True)
class Contingency:
    """The two-way table of two attributes on each side: (a, b) -> count, small cells masked."""

    first: str
    second: str
    source: list[tuple[str, str, int | str]]
    release: list[tuple[str, str, int | str]]

    def to_json(self) -> dict[str, Any]:
        return {"first": self.first, "second": self.second, "source": [list(c) for c in self.source],
                "release": [list(c) for c in self.release]}


@dataclass(frozen=True)
class Summary:
    release: str
    version: int
    min_count: int
    attributes: tuple[AttributeSummary, ...]
    tables: tuple[Contingency, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"release": self.release, "version": self.version, "min_count": self.min_count,
                "columns": [a.to_json() for a in self.attributes], "tables": [t.to_json() for t in self.tables]}

    def lines(self) -> list[str]:
        out = [f"summary of version {self.version} against its source (values shared by fewer than {self.min_count} records not shown)"]
        for a in self.attributes:
            s, r = a.source, a.release
            line = f"  {a.attribute:<16} {a.distance_kind} distance {a.distance:.4f}" if a.distance is not None \
                else f"  {a.attribute:<16} distance n/a"
            line += f"; mode {s.mode!s} ({_pct(s.mode_share)}) -> {r.mode!s} ({_pct(r.mode_share)}); distinct {s.distinct} -> {r.distinct}"
            if s.mean is not None or r.mean is not None:
                line += f"; mean {_num(s.mean)} -> {_num(r.mean)}, variance {_num(s.variance)} -> {_num(r.variance)}, " \
                        f"median {_num(s.median)} -> {_num(r.median)}"
            out.append(line)
        for t in self.tables:
            out.append(f"  {t.first} x {t.second}: source cells | release cells")
            src = {(a, b): n for a, b, n in t.source}
            rel = {(a, b): n for a, b, n in t.release}
            for cell in sorted(set(src) | set(rel)):
                out.append(f"    {cell[0]!s:<20} {cell[1]!s:<20} {src.get(cell, 0)!s:>10} | {rel.get(cell, 0)!s:>10}")
        return out


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.6g}"


def _counts(con: Any, relation: str, column: A.Released) -> dict[str | None, int]:
    f = con.query(A.value_counts(relation, column, con.dialect))
    return {v: int(n) for v, n in zip(f["value"].to_list(), f["n"].to_list(), strict=True)}


def _median(counts: dict[str | None, int]) -> float | None:
    """R's median of the values (text) of a numeric column from their counts; NULLs left out."""
    items = sorted((float(v), n) for v, n in counts.items() if v is not None)
    total = sum(n for _, n in items)
    if total == 0:
        return None
    lo_rank, hi_rank = (total - 1) // 2, total // 2  # 0-based ranks of the middle value(s)
    seen, lo = 0, None
    for v, n in items:
        if lo is None and seen + n > lo_rank:
            lo = v
        if seen + n > hi_rank:
            assert lo is not None
            return (lo + v) / 2.0
        seen += n
    return None


def _mode(counts: dict[str | None, int], min_count: int) -> tuple[str | None, float | None]:
    total = sum(counts.values())
    if not counts or total == 0:
        return None, None
    value, n = max(counts.items(), key=lambda kv: (kv[1], str(kv[0])))
    return (value, n / total) if n >= min_count else (None, None)


def _ks(a: dict[str | None, int], b: dict[str | None, int]) -> float:
    va = {float(v): n for v, n in a.items() if v is not None}
    vb = {float(v): n for v, n in b.items() if v is not None}
    xs = np.array(sorted(set(va) | set(vb)))
    ca = np.cumsum([va.get(x, 0) for x in xs]) / max(sum(va.values()), 1)
    cb = np.cumsum([vb.get(x, 0) for x in xs]) / max(sum(vb.values()), 1)
    return float(np.max(np.abs(ca - cb))) if len(xs) else 0.0


def _tv(src: dict[str | None, int], rel: dict[str | None, int], leaves: dict[str, list[str]] | None) -> float:
    """Total variation between the source's distribution and the release's, each release label
    spread evenly over the leaves it covers (``leaves``: label -> leaves; None: labels are values)."""
    ns, nr = sum(src.values()), sum(rel.values())
    if ns == 0 or nr == 0:
        return 1.0
    p: dict[str | None, float] = {}
    for label, n in rel.items():
        covered = leaves.get(label) if leaves is not None and label is not None else None
        if covered:
            for leaf in covered:
                p[leaf] = p.get(leaf, 0.0) + n / nr / len(covered)
        else:
            p[label] = p.get(label, 0.0) + n / nr
    keys = set(p) | set(src)
    return 0.5 * sum(abs(src.get(k, 0) / ns - p.get(k, 0.0)) for k in keys)


def _shares(counts: dict[str | None, int], min_count: int, top: int = 12) -> dict[str, float]:
    """The largest values' shares; rare values (fewer than min_count records) and the tail folded into "other"."""
    total = sum(counts.values())
    if total == 0:
        return {}
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))
    out: dict[str, float] = {}
    other = 0
    for v, n in ordered:
        if n >= min_count and len(out) < top:
            out["NULL" if v is None else str(v)] = n / total
        else:
            other += n
    if other:
        out["other"] = other / total
    return out


def _side(con: Any, relation: str, column: str, counts: dict[str | None, int], numeric: bool, min_count: int,
          with_range: bool) -> Side:
    mode, share = _mode(counts, min_count)
    side = Side(records=sum(counts.values()), distinct=len(counts), mode=mode, mode_share=share)
    if not numeric:
        return side
    m = con.query(A.numeric_moments(relation, column, con.dialect)).row(0, named=True)
    med = _median(counts)
    # a median is a value of a record: shown only when at least min_count records have it
    if med is not None and sum(n for v, n in counts.items() if v is not None and float(v) == med) < min_count:
        med = None
    rng = (float(m["lo"]), float(m["hi"])) if with_range and m["lo"] is not None else None
    return Side(records=side.records, distinct=side.distinct, mode=mode, mode_share=share,
                mean=None if m["mean"] is None else float(m["mean"]),
                variance=None if m["variance"] is None else float(m["variance"]), median=med, range=rng)


def _as_numbers(counts: dict[str | None, int]) -> dict[str | None, int] | None:
    """Released values as the numbers they stand for (a range its midpoint: sdc.released_number),
    summed per number; None when some value is neither."""
    out: dict[str | None, int] = {}
    for v, n in counts.items():
        x = released_number(v)
        if np.isnan(x):
            return None
        key = repr(x)
        out[key] = out.get(key, 0) + n
    return out


def _counted_side(labels: dict[str | None, int], numbers: dict[str | None, int], min_count: int) -> Side:
    """A release side whose values are ranges: records, distinct labels and mode from the labels;
    mean, variance, median and range of the numbers they stand for (midpoints)."""
    mode, share = _mode(labels, min_count)
    xs = np.array([float(v) for v in numbers if v is not None])
    ns = np.array([numbers[v] for v in numbers if v is not None], dtype=float)
    total = ns.sum()
    mean = float(np.dot(xs, ns) / total) if total else None
    var = float(np.dot(ns, (xs - mean) ** 2) / (total - 1)) if total > 1 and mean is not None else None
    med = _median(numbers)
    if med is not None and numbers.get(repr(med), 0) < min_count:
        med = None
    return Side(records=sum(labels.values()), distinct=len(labels), mode=mode, mode_share=share, mean=mean,
                variance=var, median=med, range=(float(xs.min()), float(xs.max())) if len(xs) else None)


def _masked(frame: Any, min_count: int) -> list[tuple[str, str, int | str]]:
    cells = []
    for a, b, n in zip(frame["a"].to_list(), frame["b"].to_list(), frame["n"].to_list(), strict=True):
        cells.append((str(a), str(b), int(n) if n >= min_count else f"<{min_count}"))
    return sorted(cells, key=lambda c: (c[0], c[1]))


def summarize(con: Any, release: str, *, version: int | None = None, attributes: list[str] | None = None,
              pairs: list[tuple[str, str]] | None = None, min_count: int = MIN_COUNT) -> Summary:
    """Source against version, per attribute, and the two-way tables of ``pairs``."""
    pv = published_version(con, release, version)
    source = pv.source(con)
    d = con.dialect
    src_types: dict[str, str] = {}
    if source.table is not None:
        src_types = dict(con.relation_columns(source.schema or getattr(con, "default_schema", "main"), source.table) or [])
    schema, _, table = _unquoted(pv)
    rel_types = dict(con.relation_columns(schema, table) or [])
    attrs = attributes or [c for c in src_types if pv.released(c) is not None]
    for a in attrs:
        if pv.released(a) is None or (src_types and a not in src_types):
            raise SpecError(f"{a!r} is not a column of both the source and version {pv.version} of {release!r}.")
    src_rel = A.source_relation(source.sql())
    levels = _levels(con, pv)
    method = pv.method
    out = []
    for a in attrs:
        shown = pv.released(a)
        assert shown is not None
        sc, rc = _counts(con, src_rel, a), _counts(con, pv.table, shown)
        src_numeric = is_numeric_type(src_types.get(a, ""))
        rel_numeric = isinstance(shown, str) and is_numeric_type(rel_types.get(a, ""))
        ranges = _as_numbers(rc) if src_numeric and not rel_numeric else None  # microaggregated ranges
        numeric = src_numeric and (rel_numeric or ranges is not None)
        if numeric:
            dist, kind = _ks(sc, ranges if ranges is not None else rc), "ks"
        else:
            leaves: dict[str, list[str]] | None = None
            if a in levels:
                f = con.query(A.hierarchy_leaves(pv.release, pv.version, a, levels[a], d))
                leaves = {}
                for leaf, label in zip(f["leaf"].to_list(), f["value"].to_list(), strict=True):
                    leaves.setdefault(label, []).append(leaf)
            elif method == "heterogeneous":  # a value set "a|b" covers its members
                leaves = {v: v.split(SET_SEPARATOR) for v in rc if v is not None and SET_SEPARATOR in v}
            dist, kind = _tv(sc, rc, leaves), "tv"
        out.append(AttributeSummary(attribute=a, numeric=numeric,
                                    source=_side(con, src_rel, a, sc, src_numeric, min_count, with_range=False),
                                    release=_side(con, pv.table, a, rc, rel_numeric, min_count, with_range=True)
                                    if ranges is None else _counted_side(rc, ranges, min_count),
                                    distance=dist, distance_kind=kind, source_shares=_shares(sc, min_count),
                                    release_shares=_shares(rc, min_count)))
    tables = []
    for first, second in pairs or []:
        for c in (first, second):
            if c not in attrs and c not in rel_types:
                raise SpecError(f"{c!r} is not a published column of version {pv.version} of {release!r}.")
        tables.append(Contingency(first, second, _masked(con.query(A.pair_counts(src_rel, first, second, d)), min_count),
                                  _masked(con.query(A.pair_counts(pv.table, first, second, d)), min_count)))
    return Summary(release=pv.release, version=pv.version, min_count=min_count, attributes=tuple(out), tables=tuple(tables))


def _unquoted(pv: PublishedVersion) -> tuple[str, str, str]:
    out = pv.spec.get("output", {})
    return out.get("schema", "published"), "", version_name(out["name"], pv.version)


def _levels(con: Any, pv: PublishedVersion) -> dict[str, int]:
    """The hierarchy level of each generalized QID in the version (none for other methods)."""
    for run in catalog.published_runs(con, pv.release):
        if run.version == pv.version:
            lv = (run.solution or {}).get("levels")
            return {str(k): int(v) for k, v in lv.items()} if isinstance(lv, dict) else {}
    return {}
