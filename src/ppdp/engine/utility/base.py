"""The utility measure: the unit of extension of ``ppdp utility`` and of each version's stored utility.

A measure is one module of engine/utility/measures/ that registers a ``UtilityMeasure`` in
``UTILITY_MEASURES`` (built-ins: ppdp/registry.py ``KINDS``; other packages: entry points of group
``ppdp.utility_measures``). It computes its JSON value from the ``UtilityInput``: the paired
histogram of the version (what each source row held and what the version shows of it, counted
in the database by sql/utility.py) and the version's hierarchies.

Every measure is defined on that histogram, so it is defined for every release method: a
generalization or a microaggregation publishes hierarchy values (ARX's local recoding model),
a heterogeneous release publishes a range or a value set per QID, which ``UtilityInput`` turns
into the hierarchy value that covers exactly the same leaves when there is one, and otherwise
into a value of its own with the leaves it covers (docs/design/utility.md).

The measures read the histogram as NumPy arrays over its cells (``counts``, ``kept``,
``suppressed``) and each QID's values as ``Codes``: the distinct values once, and per cell an
index into them, so a hierarchy lookup is made once per distinct value, not once per cell.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ppdp.engine.core.hierarchy import Hierarchy
from ppdp.registry import Registry, registry

# ARX's suppressed value (QualityConfiguration.getSuppressedValue): what a withheld row shows.
SUPPRESSED = "*"


@dataclass(frozen=True)
class Cell:
    """One cell of the paired histogram: the input QID values (canonical text), the published
    values (None: the row is withheld, ARX's outlier) and the number of source rows."""

    inputs: tuple[str, ...]
    outputs: tuple[str, ...] | None
    count: int


@dataclass(frozen=True, eq=False)
class Codes:
    """One QID's values over the cells: ``values`` the distinct values in order of first
    appearance, ``index`` (int64, one per cell) the position of each cell's value in ``values``."""

    values: tuple[str, ...]
    index: np.ndarray

    @staticmethod
    def of(column: Sequence[str]) -> Codes:
        seen: dict[str, int] = {}
        index = np.array([seen.setdefault(v, len(seen)) for v in column], dtype=np.int64)
        return Codes(tuple(seen), index)

    def map(self, f: Callable[[str], Any], dtype: Any = np.float64) -> np.ndarray:
        """``f`` of every cell's value, ``f`` called once per distinct value (a KeyError of
        ``f`` propagates, as the measures' unavailable-column paths expect)."""
        return np.array([f(v) for v in self.values], dtype=dtype)[self.index]

    def get(self, mapping: Mapping[str, Any], default: Any, dtype: Any = np.float64) -> np.ndarray:
        """``mapping.get(value, default)`` of every cell's value."""
        return np.array([mapping.get(v, default) for v in self.values], dtype=dtype)[self.index]


def ordered_sum(terms: np.ndarray, start: float = 0.0) -> float:
    """``start`` plus ``terms`` added left to right, as a loop over the cells adds them
    (``np.sum`` adds pairwise, which differs in the last bits)."""
    if len(terms) == 0:
        return start
    return float(np.cumsum(np.concatenate(([start], np.asarray(terms, dtype=np.float64))))[-1])


@dataclass(frozen=True, eq=False)
class UtilityInput:
    """What every measure may read."""

    columns: tuple[str, ...]
    hierarchies: tuple[Hierarchy, ...]
    cells: tuple[Cell, ...]
    method: str = "generalization"
    # per QID, extra leaves-covered sets of published values that are not hierarchy values
    # (heterogeneous ranges and value sets): value -> frozenset of leaves
    extra_values: tuple[Mapping[str, frozenset[str]], ...] = ()
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    @cached_property
    def rows(self) -> int:
        """Source rows (published and withheld): ARX's number of rows of the output."""
        return sum(c.count for c in self.cells)

    @cached_property
    def withheld(self) -> int:
        return sum(c.count for c in self.cells if c.outputs is None)

    def shown(self, cell: Cell) -> tuple[str, ...]:
        """What ARX's output handle shows of a cell: a withheld row is ``*`` in every QID."""
        return cell.outputs if cell.outputs is not None else (SUPPRESSED,) * len(self.columns)

    @cached_property
    def arx(self) -> tuple[Any, ...]:
        """Per QID, ARX's view of its hierarchy (measures/_arx.py ``ArxHierarchy``)."""
        from ppdp.engine.utility.measures._arx import ArxHierarchy

        extra = self.extra_values or tuple({} for _ in self.columns)
        return tuple(ArxHierarchy.of(h, e) for h, e in zip(self.hierarchies, extra, strict=True))

    @cached_property
    def counts(self) -> np.ndarray:
        """Rows per cell (int64)."""
        return np.fromiter((c.count for c in self.cells), dtype=np.int64, count=len(self.cells))

    @cached_property
    def kept(self) -> np.ndarray:
        """Per cell: published (True) or withheld."""
        return np.fromiter((c.outputs is not None for c in self.cells), dtype=bool, count=len(self.cells))

    @cached_property
    def input_codes(self) -> tuple[Codes, ...]:
        """Per QID, the cells' input values."""
        columns = zip(*(c.inputs for c in self.cells), strict=True) if self.cells else [() for _ in self.columns]
        return tuple(Codes.of(column) for column in columns)

    @cached_property
    def shown_codes(self) -> tuple[Codes, ...]:
        """Per QID, the cells' values as ARX's output handle shows them (``shown``)."""
        withheld = (SUPPRESSED,) * len(self.columns)
        rows = (withheld if c.outputs is None else c.outputs for c in self.cells)
        columns = zip(*rows, strict=True) if self.cells else [() for _ in self.columns]
        return tuple(Codes.of(column) for column in columns)

    @cached_property
    def suppressed(self) -> np.ndarray:
        """Per cell, ARX's QualityModel.isSuppressed(handle, indices, row): an outlier
        (withheld), or a row whose QID values are all equal (ARX's test for a row shown as ``*``
        everywhere; true for a single QID)."""
        same = np.ones(len(self.cells), dtype=bool)
        shown = self.shown_codes
        for a, b in zip(shown, shown[1:], strict=False):
            common = {v: j for j, v in enumerate(a.values)}
            # b's values as positions in a's (-1: a value a never shows)
            b_in_a = np.array([common.get(v, -1) for v in b.values], dtype=np.int64)[b.index]
            same &= a.index == b_in_a
        return ~self.kept | same

    @cached_property
    def input_classes(self) -> dict[tuple[str, ...], int]:
        out: dict[tuple[str, ...], int] = {}
        for c in self.cells:
            out[c.inputs] = out.get(c.inputs, 0) + c.count
        return out

    @cached_property
    def output_classes(self) -> dict[tuple[str, ...], int]:
        """Equivalence classes of the published rows (withheld rows are in none, as ARX's groupify)."""
        out: dict[tuple[str, ...], int] = {}
        for c in self.cells:
            if c.outputs is not None:
                out[c.outputs] = out.get(c.outputs, 0) + c.count
        return out


@dataclass(frozen=True)
class UtilityMeasure:
    """A registered measure: its name, a one-line description, and ``compute`` (input -> JSON
    value: a number or a dict with ``value`` and details). ``arx``: the name of ARX's
    StatisticsQuality getter it equals (for the harness), or None for ppdp's own."""

    name: str
    title: str
    compute: Callable[[UtilityInput], Any]
    arx: str | None = None
    order: int = 100


UTILITY_MEASURES: Registry[UtilityMeasure] = registry("utility measure")


def ordered_measures() -> list[UtilityMeasure]:
    """Every registered measure, in display order."""
    return sorted((UTILITY_MEASURES.get(n) for n in UTILITY_MEASURES.names()), key=lambda m: (m.order, m.name))


def register(m: UtilityMeasure) -> UtilityMeasure:
    return UTILITY_MEASURES.register(m.name)(m)


def row_quality(minimum: float, result: float, maximum: float) -> float:
    """ARX's QualityMeasureRowOriented.getValue: 1 - the result normalized into [min, max], clamped."""
    val = (result - minimum) / (maximum - minimum) if maximum != minimum else float("nan")
    if val != val:  # noqa: PLR0124 (NaN)
        return float("nan")
    return 1.0 - min(1.0, max(0.0, val))


def column_quality(columns: tuple[str, ...], minimum: list[float], result: list[float], maximum: list[float]) -> dict[str, Any]:
    """ARX's QualityMeasureColumnOriented: per column 1 - normalized result, and the arithmetic
    mean aggregate (normalized after aggregation, getArithmeticMean(false)); NaN columns are left out."""
    keep = [i for i, r in enumerate(result) if r == r]  # noqa: PLR0124
    per = {}
    for i in keep:
        per[columns[i]] = row_quality(minimum[i], result[i], maximum[i])
    if not keep:
        return {"value": float("nan"), "columns": per}
    mean = lambda xs: sum(xs[i] for i in keep) / len(keep)  # noqa: E731
    return {"value": row_quality(mean(minimum), mean(result), mean(maximum)), "columns": per}
