"""Data of ``ppdp report``: what the page shows, read from ``_ppdp`` and the published relations.

Everything here is aggregates over the published version (class sizes, value counts, per-class
sensitive counts) and the run records; nothing is rendered here (html.py does that). With
``external=True`` nothing that lists a combination of quasi-identifier values gets into the
ReportData at all (so no renderer can show it): per-class sensitive distributions and
microaggregation group labels name the QID combination of each class, and a small class among
them is exactly what singles a person out; the source's sensitive distribution goes too (it
counts suppressed rows, so a value held only by suppressed people would show). Aggregates that
name no combination (how many classes have each size, how many records carry a range of each
width, a histogram of distances) stay, and so do the release's own counts and certificate.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ppdp.connectors.base import Connector
from ppdp.engine.app.shareable import shareable_check
from ppdp.engine.core import catalog
from ppdp.engine.release.columns import published_qid_columns
from ppdp.errors import SpecError
from ppdp.sql import catalog as C
from ppdp.sql import report as R
from ppdp.sql.dialect import Dialect
from ppdp.sql.relations import ReleaseRelation

# At most this many classes are listed with their sensitive distribution (internal report only).
LISTED_CLASSES = 25
# Class-size bins of the histogram: (low, high) inclusive, high None = open.
SIZE_BINS = ((1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 10), (11, 20), (21, 50), (51, 100), (101, 500), (501, None))
_RANGE = re.compile(r"^\[\s*(-?[0-9.eE+-]+)\s*,\s*(-?[0-9.eE+-]+)\s*\]$")


@dataclass(frozen=True)
class Bin:
    """One bar of a histogram: label, a count of groups (classes) and of records."""

    label: str
    groups: int
    records: int


@dataclass(frozen=True)
class QidView:
    """How one quasi-identifier is published: hierarchy level, ranges or value sets."""

    attribute: str
    columns: tuple[str, ...]  # published columns (two for a range as lo/hi columns)
    form: str  # "hierarchy level 2 of 4", "ranges", "value sets", ...
    published_values: int
    domain: int | None  # distinct source values the form can stand for (None: unknown)
    loss: float | None  # mean normalized loss per released record (Iyengar's LM), 0 = as in the source
    exact_share: float | None  # share of released records whose value is not generalized
    widths: tuple[Bin, ...] = ()  # for ranges and sets: records per width / set size


@dataclass(frozen=True)
class SensitiveClass:
    """One class's sensitive distribution (internal report only: it names the class)."""

    labels: tuple[str, ...]
    size: int
    shares: tuple[tuple[str, float], ...]
    distance: float


@dataclass(frozen=True)
class SensitiveView:
    columns: tuple[str, ...]
    source: tuple[tuple[str, float], ...]  # Q at this version (every source row)
    released: tuple[tuple[str, float], ...]
    distance_bins: tuple[Bin, ...]  # classes (and their records) per Euclidean distance to Q
    max_distance: float
    classes: tuple[SensitiveClass, ...] | None  # None in the external report


@dataclass(frozen=True)
class VersionView:
    version: int
    published_at: str
    optimizer: str
    source_rows: int | None
    released_rows: int | None
    suppressed: int
    inserted: int | None
    deleted: int | None
    updated: int | None
    delta_added: int | None
    delta_removed: int | None
    inserts_withheld: int
    deletes_delayed: int
    changes_delayed: int
    history_classes: int | None
    smallest_history_class: int | None
    verified: bool


@dataclass(frozen=True)
class RiskView:
    """``ppdp risk --json`` of the source and of this version (None when not measured)."""

    qids: tuple[str, ...]
    source: dict[str, Any] | None
    release: dict[str, Any] | None
    note: str


@dataclass(frozen=True)
class GroupsView:
    """Microaggregation's groups: sizes, and (internal report only) each group's labels."""

    sizes: tuple[Bin, ...]
    count: int
    labels: tuple[tuple[int, tuple[tuple[str, str], ...]], ...] | None


@dataclass(frozen=True)
class ReportData:
    release: str
    version: int
    current_version: int
    external: bool
    method: str
    relation: str
    qids: tuple[str, ...]
    sensitive: tuple[str, ...]
    summary: tuple[tuple[str, str], ...]
    certificate: dict[str, Any]
    qid_views: tuple[QidView, ...]
    groups: GroupsView | None
    class_bins: tuple[Bin, ...]
    classes: int
    smallest_class: int | None
    records: int
    suppressed: int
    source_rows: int | None
    sensitive_view: SensitiveView | None
    risk: RiskView
    history: tuple[VersionView, ...]


# (connector, version relation, version, QIDs, their published columns, run record) -> RiskView
RiskProvider = Callable[[Connector, str, int, list[str], list[str], Any], RiskView]


def gather(con: Connector, name: str, *, version: int | None = None, external: bool = False,
           risk: RiskProvider | None = None) -> ReportData:
    """Everything the report shows for version ``version`` (default: current) of release ``name``.
    Reads only; a release or version that does not exist is a SpecError."""
    from ppdp.engine.app.jobs import certificate_of

    release = catalog.resolve_release(con, name)
    runs = catalog.published_runs(con, release)
    if not runs:
        raise SpecError(f"Release {name!r} has no published version. Hint: 'ppdp runs' lists its runs.")
    by_version = {r.published_version: r for r in runs}
    v = runs[-1].published_version if version is None else int(version)
    if v not in by_version:
        raise SpecError(f"Release {name!r} has no version {v} (published: {', '.join(map(str, sorted(by_version)))}).")
    run = by_version[v]
    d = con.dialect
    meta = con.query(C.select_release(d), [release])
    schema, short = str(meta["output_schema"][0]), str(meta["output_name"][0])
    tables = ReleaseRelation(schema, short, d)
    relation = tables.version_table(v)
    columns = [c for c, _ in (con.relation_columns(schema, tables.version_name(v)) or [])]
    if not columns:
        raise SpecError(f"The table of version {v} of {name!r} is gone ({schema}.{tables.version_name(v)}). "
                        f"Hint: 'ppdp sql {name}' rebuilds it.")
    spec = run.spec
    qids = [q["column"] for q in spec.get("quasi_identifiers", [])]
    sensitive = list(spec.get("sensitive", {}).get("columns", []))
    method = str(spec.get("method", {}).get("name", "generalization"))
    published = {q: _published_columns(q, columns) for q in qids}
    qid_cols = [c for q in qids for c in published[q]]

    sizes = con.query(R.class_size_counts(relation, qid_cols, d)) if qid_cols else None
    pairs = [(int(s), int(n)) for s, n in sizes.iter_rows()] if sizes is not None else []
    records = sum(s * n for s, n in pairs)
    m = run.metrics
    cert = certificate_of(run)
    qid_views = tuple(_qid_view(con, release, v, relation, q, published[q], run.solution) for q in qids)
    groups = _groups(con, release, v, external)
    sens = _sensitive(con, release, v, relation, qid_cols, sensitive, external) if sensitive and qid_cols else None
    risk_view = (risk or no_risk)(con, relation, v, qids, qid_cols, run)
    return ReportData(
        release=release, version=v, current_version=runs[-1].published_version, external=external, method=method,
        relation=relation, qids=tuple(qids), sensitive=tuple(sensitive), summary=_summary(run, method, records, external),
        certificate=cert, qid_views=qid_views, groups=groups, class_bins=_bins(pairs), classes=sum(n for _, n in pairs),
        smallest_class=min((s for s, _ in pairs), default=None), records=records, suppressed=int(m.get("suppressed", 0) or 0),
        source_rows=run.source_rows, sensitive_view=sens, risk=risk_view, history=_history(con, schema, short, runs, d),
    )


def no_risk(con: Connector, relation: str, version: int, qids: list[str], published: list[str], run: Any) -> RiskView:
    """A risk provider that measures nothing (the section says so)."""
    return RiskView(tuple(qids), None, None, "risk was not measured for this version")


def _published_columns(qid: str, columns: list[str]) -> tuple[str, ...]:
    """The published columns of a QID: itself, or its lower and upper bound columns."""
    return tuple(published_qid_columns([qid], columns))


def _bins(pairs: list[tuple[int, int]]) -> tuple[Bin, ...]:
    """(size, classes) pairs into the fixed SIZE_BINS (empty bins above the largest size dropped)."""
    out = []
    top = max((s for s, _ in pairs), default=0)
    for lo, hi in SIZE_BINS:
        if lo > top:
            break
        inside = [(s, n) for s, n in pairs if s >= lo and (hi is None or s <= hi)]
        label = str(lo) if hi == lo else (f"{lo}-{hi}" if hi is not None else f"{lo}+")
        out.append(Bin(label, sum(n for _, n in inside), sum(s * n for s, n in inside)))
    return tuple(out)


def _summary(run: Any, method: str, records: int, external: bool) -> tuple[tuple[str, str], ...]:
    m, s, v = run.metrics, run.solution, run.verification
    rows = [("release", run.release), ("version", str(run.version)), ("method", method),
            ("published at", str(run.finished_at)[:19] + " UTC"), ("run", run.run_id),
            ("source rows", f"{run.source_rows:,}" if run.source_rows is not None else "-"),
            ("released rows", f"{records:,}"), ("suppressed rows", f"{int(m.get('suppressed', 0) or 0):,}"),
            ("verification", "passed" if v.get("passed") else "FAILED")]
    for c in map(shareable_check, v.get("checks", [])):
        rows.append((f"model {c['model']}", f"{json.dumps(c['params'])}: achieved {c['ad']} -> {'PASS' if c['passed'] else 'FAIL'}"))
    for c in v.get("method_checks", []):
        rows.append((f"method check: {c.get('check')}", "pass" if c.get("passed") else "FAIL"))
    if s.get("optimizer"):
        rows.append(("optimizer", f"{s.get('optimizer')} ({s.get('evaluations')} evaluations, "
                                  f"{'certified optimal' if s.get('certified') else 'not certified optimal'})"))
    for key in ("td", "query_precision", "workload_error", "average_il", "total_pr", "gcp", "sil"):
        if isinstance(m.get(key), int | float):
            rows.append((f"utility: {key}", f"{m[key]:,.4f}"))
    rows.append(("audience", "external: every list of quasi-identifier combinations is left out" if external
                 else "internal: lists classes with their quasi-identifier values; do not hand it out"))
    return tuple(rows)


def _qid_view(con: Connector, release: str, version: int, relation: str, qid: str, cols: tuple[str, ...],
              solution: dict[str, Any]) -> QidView:
    d = con.dialect
    if not cols:
        return QidView(qid, (), "not published", 0, None, None, None)
    counts = con.query(R.value_counts(relation, list(cols), d))
    total = int(counts["n"].sum()) if counts.height else 0
    if len(cols) == 2:  # numeric lower/upper bound columns (heterogeneous)
        ranges = [(_num(lo), _num(hi), int(n)) for lo, hi, n in counts.iter_rows()]
        return _range_view(qid, cols, ranges, total, None)
    values = [(str(val), int(n)) for val, n in counts.iter_rows()]
    hier = {}
    if con.relation_columns(catalog.PRIVATE_SCHEMA, "hierarchies") is not None:
        h = con.query(R.hierarchy_values(d), [release, version, qid, release, version, qid])
        hier = {str(val): (int(leaves), int(dom)) for val, leaves, dom in h.iter_rows()}
    parsed = [(_RANGE.match(val), val, n) for val, n in values]
    if parsed and all(p is not None for p, _, _ in parsed):  # "[lo, hi]" labels (microaggregation)
        bounds = solution.get("ranges", {}).get(qid)
        ranges = [(float(p.group(1)), float(p.group(2)), n) for p, _, n in parsed if p is not None]
        return _range_view(qid, cols, ranges, total, tuple(bounds) if bounds else None)
    levels, heights = solution.get("levels", {}), solution.get("heights", {})
    if hier:
        domain = next(iter(hier.values()))[1]
        losses = [((hier[val][0] - 1) / (domain - 1) if domain > 1 else 0.0, n) for val, n in values if val in hier]
        known = sum(n for _, n in losses)
        form = f"hierarchy level {levels[qid]} of {heights[qid]}" if qid in levels else "hierarchy labels"
        return QidView(qid, cols, form, len(values), domain, sum(x * n for x, n in losses) / known if known else None,
                       sum(n for x, n in losses if x == 0) / total if total else None)
    # value sets "a|b|c" (heterogeneous): the domain as far as the release shows it
    members = [(set(val.split("|")), n) for val, n in values]
    domain = len(set().union(*(s for s, _ in members))) if members else 0
    sizes: dict[int, int] = {}
    for s, n in members:
        sizes[len(s)] = sizes.get(len(s), 0) + n
    widths = tuple(Bin(str(k), 0, n) for k, n in sorted(sizes.items()))
    loss = sum((len(s) - 1) / (domain - 1) * n for s, n in members) / total if total and domain > 1 else 0.0
    return QidView(qid, cols, "value sets", len(values), domain, loss,
                   sum(n for s, n in members if len(s) == 1) / total if total else None, widths)


def _num(x: Any) -> float:
    return float("nan") if x is None else float(x)


def _range_view(qid: str, cols: tuple[str, ...], ranges: list[tuple[float, float, int]], total: int,
                bounds: tuple[float, float] | None) -> QidView:
    ok = [(lo, hi, n) for lo, hi, n in ranges if not (math.isnan(lo) or math.isnan(hi))]
    lo_all, hi_all = bounds if bounds else (min((r[0] for r in ok), default=0.0), max((r[1] for r in ok), default=0.0))
    span = hi_all - lo_all
    widths: dict[float, int] = {}
    for lo, hi, n in ok:
        widths[hi - lo] = widths.get(hi - lo, 0) + n
    loss = sum((hi - lo) / span * n for lo, hi, n in ok) / total if total and span > 0 else 0.0
    exact = sum(n for lo, hi, n in ok if hi == lo) / total if total else None
    return QidView(qid, cols, f"ranges over [{lo_all:g}, {hi_all:g}]", len(ranges), None, loss, exact,
                   tuple(Bin(f"{w:g}", 0, n) for w, n in sorted(widths.items())))


def _groups(con: Connector, release: str, version: int, external: bool) -> GroupsView | None:
    """Microaggregation groups when the version has them (read from _ppdp.micro_groups)."""
    d = con.dialect
    if con.relation_columns(catalog.PRIVATE_SCHEMA, "micro_groups") is None:
        return None
    sizes = [(int(s), int(n)) for s, n in con.query(R.micro_group_sizes(d), [release, version]).iter_rows()]
    if not sizes:
        return None
    labels = None
    if not external:
        per: dict[int, list[tuple[str, str]]] = {}
        for grp, attr, value in con.query(R.micro_group_labels(d), [release, version]).iter_rows():
            if int(grp) in per or len(per) < LISTED_CLASSES:
                per.setdefault(int(grp), []).append((str(attr), str(value)))
        labels = tuple((g, tuple(v)) for g, v in sorted(per.items()))
    return GroupsView(_bins(sizes), sum(n for _, n in sizes), labels)


def _sensitive(con: Connector, release: str, version: int, relation: str, qid_cols: list[str], sensitive: list[str],
               external: bool) -> SensitiveView:
    """Per-class sensitive distributions against the source's Q (stored per version) and the
    Euclidean distance of each to Q, as the t-closeness check measures it (HAEF eq. 2-4)."""
    d = con.dialect
    q_frame = catalog.stored_distribution(con, release, version)
    source = {_sa_label(json.loads(val)): float(q) for _, val, q in q_frame.iter_rows()} if q_frame.height else {}
    rows = con.query(R.class_sensitive_counts(relation, qid_cols, sensitive, d))
    nq = len(qid_cols)
    classes: dict[tuple[str, ...], dict[str, int]] = {}
    released: dict[str, int] = {}
    for row in rows.iter_rows():
        labels, sa, n = tuple("∅" if x is None else str(x) for x in row[:nq]), _sa_label(list(row[nq:-1])), int(row[-1])
        classes.setdefault(labels, {})[sa] = classes.get(labels, {}).get(sa, 0) + n
        released[sa] = released.get(sa, 0) + n
    total = sum(released.values())
    views = []
    for labels, counts in classes.items():
        size = sum(counts.values())
        p = {k: c / size for k, c in counts.items()}
        keys = set(p) | set(source)
        dist = math.sqrt(sum((p.get(k, 0.0) - source.get(k, 0.0)) ** 2 for k in keys)) if source else float("nan")
        views.append(SensitiveClass(labels, size, tuple(sorted(p.items(), key=lambda kv: -kv[1])), dist))
    edges = [0.05 * i for i in range(1, 21)]
    dbins = []
    for i, hi in enumerate(edges):
        lo = hi - 0.05
        inside = [c for c in views if not math.isnan(c.distance) and (lo < c.distance <= hi or (i == 0 and c.distance <= hi))]
        dbins.append(Bin(f"{hi:.2f}", len(inside), sum(c.size for c in inside)))
    while dbins and dbins[-1].groups == 0:
        dbins.pop()
    listed = None
    if not external:
        listed = tuple(sorted(views, key=lambda c: (-c.distance if not math.isnan(c.distance) else 0.0, c.size))[:LISTED_CLASSES])
    return SensitiveView(
        columns=tuple(sensitive),
        # The source's Q names values held by suppressed rows too: left out of the external page.
        source=() if external else tuple(sorted(source.items(), key=lambda kv: -kv[1])),
        released=tuple(sorted(((k, n / total) for k, n in released.items()), key=lambda kv: -kv[1])) if total else (),
        distance_bins=tuple(dbins), max_distance=max((c.distance for c in views if not math.isnan(c.distance)), default=0.0),
        classes=listed)


def _sa_label(values: list[Any]) -> str:
    return " / ".join("∅" if x is None else str(x) for x in values)


def _history(con: Connector, schema: str, short: str, runs: list[Any], d: Dialect) -> tuple[VersionView, ...]:
    delta: dict[tuple[int, str], int] = {}
    tables = ReleaseRelation(schema, short, d)
    if con.relation_columns(schema, tables.delta_name()) is not None:
        for ver, op, n in con.query(R.delta_counts(tables.delta_table(), d)).iter_rows():
            delta[(int(ver), str(op))] = int(n)
    out = []
    for r in runs:
        v, m, cv, ch = r.published_version, r.metrics, r.cross_version or {}, r.changes or {}
        held = cv.get("held_back") or m.get("held_back") or {}
        has_delta = any(k[0] == v for k in delta)
        out.append(VersionView(
            version=v, published_at=str(r.finished_at)[:19], optimizer=str(r.solution.get("optimizer") or r.solution.get("method") or "-"),
            source_rows=r.source_rows, released_rows=r.verification.get("rows"), suppressed=int(m.get("suppressed", 0) or 0),
            inserted=ch.get("inserted"), deleted=ch.get("deleted"), updated=ch.get("updated"),
            delta_added=delta.get((v, "+"), 0) if has_delta else None, delta_removed=delta.get((v, "-"), 0) if has_delta else None,
            inserts_withheld=int(held.get("inserts_withheld", 0)), deletes_delayed=int(held.get("deletes_delayed", 0)),
            changes_delayed=int(held.get("changes_delayed", 0)), history_classes=cv.get("history_classes"),
            smallest_history_class=cv.get("smallest_history_class"), verified=bool(r.verification.get("passed"))))
    return tuple(out)
