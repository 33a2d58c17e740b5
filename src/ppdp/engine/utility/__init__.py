"""Utility of a published version: ARX's quality models and ppdp's own measures.

``assess`` pairs every source row with what the version shows of it, counted in the database by
one GROUP BY (sql/utility.py), reads the version's hierarchies from ``_ppdp.hierarchies``, and
hands both to every registered measure (base.py), one module each in measures/: ARX's
granularity, generalization intensity, non-uniform entropy, AECS, discernibility, ambiguity,
attribute- and record-level squared error and SSE/SST (equal to ARX's StatisticsQuality on the
same transformation, benchmarks/utility_vs_arx.py), and ppdp's TD, query precision and workload
error. Each measure is a quality: higher is better.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ppdp.connectors.base import Connector
from ppdp.engine.core.catalog import RunRecord
from ppdp.engine.core.hierarchy import Hierarchy
from ppdp.engine.utility.base import SUPPRESSED, Cell, UtilityInput, ordered_measures
from ppdp.errors import DataError
from ppdp.sql import utility as U
from ppdp.sql.heterogeneous import SET_SEPARATOR
from ppdp.sql.queries import Source
from ppdp.sql.relations import ReleaseRelation

__all__ = ["HierarchyLoader", "UtilityAssessment", "assess", "assess_run", "assess_version", "canonical", "canonical_rows", "compute"]


@dataclass(frozen=True)
class UtilityAssessment:
    """The utility of one version: its rows and each measure's value in measure order."""

    relation: str
    columns: tuple[str, ...]
    rows: int
    withheld: int
    method: str
    measures: tuple[tuple[str, Any], ...]

    def summary(self) -> dict[str, Any]:
        """What a version stores of its utility (beside its risk)."""
        return {"rows": self.rows, "withheld": self.withheld, "method": self.method, **dict(self.measures)}

    def to_json(self) -> dict[str, Any]:
        """The ``ppdp utility --json`` object."""
        return self.summary() | {"relation": self.relation, "columns": list(self.columns)}


def _natural(s: str) -> tuple[Any, ...]:
    """Sort key that orders numbers by value inside strings (``9`` before ``10``)."""
    return tuple((0, float(t), "") if re.fullmatch(r"-?\d+(\.\d+)?", t) else (1, 0.0, t) for t in re.split(r"(-?\d+(?:\.\d+)?)", s) if t)


def canonical_rows(rows: list[tuple[str, ...]]) -> tuple[tuple[str, ...], ...]:
    """A hierarchy's rows in ppdp's canonical order: by the path from the root down to the leaf,
    numbers by value. The squared errors read a leaf's ordinal from this order, and the ARX
    harness is given the hierarchy in the same order (docs/design/utility.md)."""
    return tuple(sorted(rows, key=lambda r: tuple(_natural(v) for v in reversed(r))))


HierarchyLoader = Callable[[RunRecord], dict[str, Hierarchy]]


def _hierarchies(con: Connector, run: RunRecord, qids: list[str], load: HierarchyLoader | None = None) -> tuple[Hierarchy, ...]:
    frame = con.query(U.hierarchy_rows(con.dialect), [run.release, run.published_version])
    paths: dict[str, dict[str, dict[int, str]]] = {}
    for attribute, level, leaf, value in frame.select("attribute", "level", "leaf", "value").iter_rows():
        paths.setdefault(attribute, {}).setdefault(leaf, {})[int(level)] = value
    if load is not None and any(q not in paths for q in qids):
        loaded = load(run)
        return tuple(canonical(loaded[q]) if q in loaded and q not in paths else _stored(run, q, paths) for q in qids)
    return tuple(_stored(run, q, paths) for q in qids)


def _stored(run: RunRecord, q: str, paths: dict[str, dict[str, dict[int, str]]]) -> Hierarchy:
    if q not in paths:
        raise DataError(f"version {run.published_version} of {run.release} stores no hierarchy for {q!r}.")
    rows = [tuple(levels[lv] for lv in sorted(levels)) for levels in paths[q].values()]
    return Hierarchy(q, canonical_rows(rows), source="_ppdp.hierarchies")


def _published_columns(con: Connector, schema: str, table: str, qids: list[str]) -> tuple[list[list[str]], str]:
    """Per QID the version's columns that show it: the QID itself, or a heterogeneous range
    (``q_min``, ``q_max``) or value set (``q_values``)."""
    present = [c for c, _ in con.relation_columns(schema, table) or []]
    out = []
    for q in qids:
        if q in present:
            out.append([q])
        elif f"{q}_min" in present and f"{q}_max" in present:
            out.append([f"{q}_min", f"{q}_max"])
        else:
            sets = [c for c in present if c.startswith(f"{q}_") and c not in (f"{q}_min", f"{q}_max")]
            if len(sets) != 1:
                raise DataError(f"{schema}.{table} shows no column for the quasi-identifier {q!r}.")
            out.append(sets)
    return out, "heterogeneous" if any(len(o) > 1 or o[0] != q for o, q in zip(out, qids, strict=True)) else ""


def _shown_value(h: Hierarchy, parts: tuple[str | None, ...], extra: dict[str, frozenset[str]]) -> str:
    """A heterogeneous published range or value set as a value of the hierarchy's vocabulary:
    the hierarchy value covering exactly the same leaves if there is one, else a value of its own
    (registered in ``extra`` with the leaves it covers)."""
    leaves = h.leaves
    if len(parts) == 2:
        lo, hi = (float(p) if p is not None else None for p in parts)
        covered = frozenset(x for x in leaves if _in_range(x, lo, hi))
        label = f"[{parts[0]}, {parts[1]}]"
    else:
        raw = parts[0] or ""
        covered = frozenset(v for v in raw.split(SET_SEPARATOR) if v)
        label = "{" + ", ".join(sorted(covered)) + "}"
    value = _value_of_leaves(h).get(covered)
    if value is not None:
        return value
    extra.setdefault(label, covered)
    return label


@functools.lru_cache(maxsize=64)
def _value_of_leaves(h: Hierarchy) -> dict[frozenset[str], str]:
    """Per set of leaves, the hierarchy value covering exactly them: the first such value going
    up the levels, in row order (``_shown_value``)."""
    out: dict[frozenset[str], str] = {}
    for lv in range(h.height + 1):
        groups: dict[str, set[str]] = {}
        for r in h.rows:
            groups.setdefault(r[lv], set()).add(r[0])
        for value, members in groups.items():
            out.setdefault(frozenset(members), value)
    return out


# A numeric range as a microaggregation publishes it: "[lo, hi]".
_RANGE = re.compile(r"\[\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*\]")


def _in_range(leaf: str, lo: float | None, hi: float | None) -> bool:
    try:
        x = float(leaf)
    except ValueError:
        return False
    return (lo is None or x >= lo) and (hi is None or x <= hi)


def assess_run(con: Connector, run: RunRecord, load: HierarchyLoader | None = None) -> UtilityAssessment:
    """The utility of the version ``run`` published; its hierarchies as stored with the version,
    else (a method that stores none, e.g. heterogeneous) as ``load`` reads them from its spec."""
    spec = run.spec
    src, out = spec.get("source", {}), spec.get("output", {})
    qids = [q["column"] for q in spec.get("quasi_identifiers", [])]
    source = Source(src.get("schema"), src.get("table"), src.get("query"), con.dialect)
    method = spec.get("method", {}).get("name", "generalization")
    held = (run.cross_version or {}).get("held_back") or (run.metrics or {}).get("held_back") or {}
    levels = (run.solution or {}).get("levels") if method == "generalization" and not any(held.values()) else None
    return assess_version(con, release=run.release, version=run.published_version, source=source, key=src["key"], qids=qids,
                          hierarchies=_hierarchies(con, run, qids, load), schema=out.get("schema", "published"), name=out["name"],
                          method=method, levels=levels)


def assess_version(con: Connector, *, release: str, version: int, source: Source, key: str, qids: list[str],
                   hierarchies: tuple[Hierarchy, ...], schema: str, name: str, method: str = "generalization",
                   levels: dict[str, int] | None = None) -> UtilityAssessment:
    """The utility of version ``version`` of ``release`` (published as ``schema.name``), read
    against ``source`` through the release's row ids; ``hierarchies`` in canonical row order.

    ``levels`` (a generalization version with no row held back): every published row is its
    source row at those levels, every other row withheld (``_ppdp.suppressed``), so the pairs
    follow from the source's histogram alone; they are used when the version's classes count
    exactly what those pairs predict, else the rows are paired through the row ids."""
    d = con.dialect
    rel = ReleaseRelation(schema, name, d)
    table = rel.version_name(version)
    outputs, _ = _published_columns(con, schema, table, qids)
    if levels is not None and all(o == [q] for o, q in zip(outputs, qids, strict=True)):
        cells_fast = _generalized_cells(con, release, version, source, key, qids, hierarchies, levels, rel.version_table(version))
        if cells_fast is not None:
            inp = UtilityInput(tuple(qids), hierarchies, cells_fast, method)
            return compute(inp, relation=rel.version_table(version))
    frame = con.query(U.paired_histogram(source, key, rel.version_table(version), qids, outputs), [release])
    q = len(qids)
    extra: list[dict[str, frozenset[str]]] = [{} for _ in qids]
    vocabulary = [{v for r in h.rows for v in r} for h in hierarchies]
    cells = []
    # a published value as the measures read it, once per distinct value of each QID (a
    # version has few distinct ranges or sets, and many cells)
    seen: list[dict[tuple[Any, ...], str]] = [{} for _ in qids]

    def shown_value(j: int, parts: tuple[Any, ...]) -> str:
        value = seen[j].get(parts)
        if value is None:
            value = seen[j][parts] = _shown_value(hierarchies[j], parts, extra[j])
        return value

    for row in frame.iter_rows():
        inputs = tuple("" if v is None else str(v) for v in row[:q])
        pos = q
        shown: list[str] = []
        for j, cols in enumerate(outputs):
            parts = tuple(row[pos : pos + len(cols)])
            pos += len(cols)
            if len(cols) == 1 and cols[0] == qids[j]:
                value = SUPPRESSED if parts[0] is None else str(parts[0])
                if method == "heterogeneous" and SET_SEPARATOR in value:  # a value set (sql/heterogeneous.py)
                    value = shown_value(j, (value,))
                elif (m := _RANGE.fullmatch(value)) and value not in vocabulary[j]:  # a microaggregated range
                    value = shown_value(j, (m.group(1), m.group(2)))
                shown.append(value)
            else:
                shown.append(shown_value(j, parts))
        withheld = bool(row[pos])
        cells.append(Cell(inputs, None if withheld else tuple(shown), int(row[pos + 1])))
    inp = UtilityInput(tuple(qids), hierarchies, tuple(cells), method, tuple(extra))
    return compute(inp, relation=rel.version_table(version))


def _generalized_cells(con: Connector, release: str, version: int, source: Source, key: str, qids: list[str],
                       hierarchies: tuple[Hierarchy, ...], levels: dict[str, int], version_table: str) -> tuple[Cell, ...] | None:
    """The pairs of a generalization version from the source's histogram (``assess_version``),
    or None when the version's classes do not count what they predict."""
    q = len(qids)
    gen = []
    for h, col in zip(hierarchies, qids, strict=True):
        lv = int(levels[col])
        gen.append({r[0]: r[lv] for r in h.rows})
    frame = con.query(U.withheld_histogram(source, key, qids), [release, version])
    cells: list[Cell] = []
    expected: dict[tuple[str, ...], int] = {}
    for row in frame.iter_rows():
        inputs = tuple("" if v is None else str(v) for v in row[:q])
        n = int(row[q + 1])
        if row[q]:
            cells.append(Cell(inputs, None, n))
            continue
        try:
            out = tuple(gen[j][v] for j, v in enumerate(inputs))
        except KeyError:
            return None
        cells.append(Cell(inputs, out, n))
        expected[out] = expected.get(out, 0) + n
    published = con.query(U.published_classes(version_table, qids, con.dialect))
    actual = {tuple("" if v is None else str(v) for v in row[:q]): int(row[q]) for row in published.iter_rows()}
    return tuple(cells) if actual == expected else None


def canonical(h: Hierarchy) -> Hierarchy:
    """``h`` with its rows in canonical order (``canonical_rows``)."""
    return Hierarchy(h.attribute, canonical_rows(list(h.rows)), source=h.source)


def compute(inp: UtilityInput, *, relation: str = "") -> UtilityAssessment:
    """Every registered measure of ``inp``."""
    if inp.rows == 0:
        raise DataError(f"{relation or 'the version'} pairs with no source row; there is no utility to measure.")
    values = tuple((m.name, m.compute(inp)) for m in ordered_measures())
    return UtilityAssessment(relation, inp.columns, inp.rows, inp.withheld, inp.method, values)


def assess(con: Connector, release: str, version: int | None = None, load: HierarchyLoader | None = None) -> UtilityAssessment:
    """The utility of ``release``'s version ``version`` (default: the current one)."""
    from ppdp.engine.core import catalog
    from ppdp.errors import SpecError

    rid = catalog.resolve_release(con, release)
    runs = catalog.published_runs(con, rid)
    if not runs:
        raise SpecError(f"release {release!r} has no published version.")
    run = runs[-1] if version is None else next((r for r in runs if r.version == version), None)
    if run is None:
        raise SpecError(f"release {release!r} has no published version {version}; published: {[r.version for r in runs]}.")
    return assess_run(con, run, load)
