"""Synonymous linkage of sensitive values (eq. 10-13) from a sensitive-value catalogue.

A *catalogue* is a hierarchy over the SA values in ARX CSV format (``value;category;...;*``),
read with ``engine.core.hierarchy.read_arx_csv``. The catalogue category of a value is its ancestor
at **level 1** (the column after the value): two different values are synonymous (eq. 10,
gamma(a, b) not empty) when they share that ancestor. Levels above 1 are allowed (and ignored
here); a catalogue whose level 1 is already the root would make every pair synonymous, so it is
refused.

- ``link(a, b)`` (eq. 10): 2 for the same value, 1 for the same category, 0 otherwise.
- ``total_links(values)`` (eq. 11-12): the sum of ``link`` over the pairs i < j (the strictly
  upper triangular matrix U).
- ``linkage_probability(values)`` (eq. 13): ``Tlink / (n (n - 1))``, the share of the maximum
  (all values equal); 0 for fewer than two values, where the paper's ratio is 0/0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from pathlib import Path

import numpy as np

from ppdp.engine.core.hierarchy import Hierarchy, read_arx_csv
from ppdp.errors import DataError, HierarchyError

BUILTIN_CATALOGUES = {
    "diseases32": "diseases32.csv",
    "sparcs_ccs_by_mdc": "sparcs_ccs_by_mdc.csv",
}


@dataclass(frozen=True, eq=False)
class SensitiveCatalogue:
    """Sensitive values grouped into categories: the level-1 ancestors of a hierarchy."""

    hierarchy: Hierarchy

    def __post_init__(self) -> None:
        if self.hierarchy.height < 2:
            raise HierarchyError(
                f"The sensitive-value catalogue {self.hierarchy.source} has no category level below the root. "
                "Hint: give each value a category column before the final '*' (value;category;*)."
            )

    @property
    def values(self) -> list[str]:
        """Every catalogued sensitive value (code order)."""
        return self.hierarchy.leaves

    @cached_property
    def value_code(self) -> dict[str, int]:
        return self.hierarchy.leaf_code

    @cached_property
    def category_code(self) -> np.ndarray:
        """int32 array: value code -> category code (level 1 of the hierarchy)."""
        return self.hierarchy.level_codes[1]

    @property
    def categories(self) -> list[str]:
        """Category names in code order."""
        return self.hierarchy.level_values[1]

    def code(self, value: str) -> int:
        """The code of a sensitive value; DataError if the catalogue does not list it."""
        try:
            return self.value_code[str(value)]
        except KeyError:
            raise DataError(f"Sensitive value {value!r} is not in the catalogue {self.hierarchy.source}. "
                            "Hint: add it to the catalogue with its category.") from None

    def category(self, value: str) -> str:
        """The catalogue category of a value: its ancestor at level 1."""
        return self.hierarchy.rows[self.code(value)][1]

    def codes(self, values: Sequence[str]) -> np.ndarray:
        """Codes of many values as an int32 array."""
        return np.array([self.code(v) for v in values], dtype=np.int32)


def load_catalogue(path: str | Path, attribute: str = "sensitive") -> SensitiveCatalogue:
    """Read a catalogue from an ARX CSV file (``value;category;*``)."""
    return SensitiveCatalogue(read_arx_csv(path, attribute))


def builtin_catalogue(name: str, attribute: str = "sensitive") -> SensitiveCatalogue:
    """A catalogue shipped in engine/data/catalogues/: ``diseases32`` or ``sparcs_ccs_by_mdc``."""
    if name not in BUILTIN_CATALOGUES:
        raise DataError(f"No built-in catalogue {name!r}. Hint: use one of {', '.join(sorted(BUILTIN_CATALOGUES))} or a file path.")
    path = resources.files("ppdp.engine") / "data" / "catalogues" / BUILTIN_CATALOGUES[name]
    with resources.as_file(path) as p:
        return load_catalogue(p, attribute)


def link(a: str, b: str, catalogue: SensitiveCatalogue) -> int:
    """Eq. 10: 2 if ``a == b``, 1 if they share a catalogue category, else 0."""
    if a == b:
        catalogue.code(a)
        return 2
    return 1 if catalogue.category(a) == catalogue.category(b) else 0


def total_links(values: Sequence[str], catalogue: SensitiveCatalogue) -> int:
    """Eq. 12: Tlink, the sum of eq. 10 over the strictly upper triangle of eq. 11 (plain Python)."""
    return sum(link(values[i], values[j], catalogue) for i in range(len(values)) for j in range(i + 1, len(values)))


def linkage_probability(values: Sequence[str], catalogue: SensitiveCatalogue) -> float:
    """Eq. 13: ``Tlink / (n (n - 1))``; 0 for n < 2."""
    n = len(values)
    return 0.0 if n < 2 else total_links(values, catalogue) / (n * (n - 1))


def _pairs(c: np.ndarray) -> np.ndarray:
    return c * (c - 1) // 2


def total_links_of_counts(value_counts: np.ndarray, catalogue: SensitiveCatalogue) -> int:
    """Tlink from value counts (``value_counts[code]``), without the pairwise loop:
    2 per pair of equal values, plus 1 per pair in the same category with different values."""
    value_counts = np.asarray(value_counts, dtype=np.int64)
    same_value = int(_pairs(value_counts).sum())
    cat_counts = np.bincount(catalogue.category_code, weights=value_counts, minlength=len(catalogue.categories)).astype(np.int64)
    same_category = int(_pairs(cat_counts).sum())
    return 2 * same_value + (same_category - same_value)


def links_added(value_counts: np.ndarray, candidates: np.ndarray, catalogue: SensitiveCatalogue) -> np.ndarray:
    """For each candidate SA code s, the links a record with SA s adds to a group with
    ``value_counts``: ``2 * c[s] + (c[category(s)] - c[s])`` (vectorized)."""
    value_counts = np.asarray(value_counts, dtype=np.int64)
    candidates = np.asarray(candidates, dtype=np.int64)
    cat_counts = np.bincount(catalogue.category_code, weights=value_counts, minlength=len(catalogue.categories)).astype(np.int64)
    same = value_counts[candidates]
    return same + cat_counts[catalogue.category_code[candidates]]


def probability_after_adding(value_counts: np.ndarray, candidates: np.ndarray, catalogue: SensitiveCatalogue) -> np.ndarray:
    """``Pr_SA(G + r)`` (eq. 13) for each candidate SA code, vectorized."""
    value_counts = np.asarray(value_counts, dtype=np.int64)
    n1 = int(value_counts.sum()) + 1
    if n1 < 2:
        return np.zeros(len(candidates), dtype=np.float64)
    t1 = total_links_of_counts(value_counts, catalogue) + links_added(value_counts, candidates, catalogue)
    return t1 / (n1 * (n1 - 1))
