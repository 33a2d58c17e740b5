"""Generalization hierarchies: loading (ARX CSV), generation, validation.

A hierarchy is a tree whose leaves are the domain values of one quasi-identifier
(docs/design/paper_notes.md §1). Level 0 is the original value, the top level is the root. We store it the way
ARX does: one row per leaf, one column per level, every cell a string. Leaves are compared with
the data as ``CAST(column AS VARCHAR)`` everywhere (encoding, release SQL, verification), so a
hierarchy covers a column exactly when its leaf strings equal the database's text of the values.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ppdp.errors import HierarchyError

if TYPE_CHECKING:  # the builders import this module
    from ppdp.engine.core.builders import Definition


@dataclass(frozen=True, eq=False)
class Hierarchy:
    """One QID's generalization tree as rows ``(leaf, level1, ..., root)``.

    ``rows[i][j]`` is the value of leaf ``i`` at level ``j``; ``rows[i][0]`` is the leaf.
    ``source`` says where it came from (a file path or a generator description) for errors.
    ``repeated_rows`` counts the rows of an ARX file dropped because they repeated a leaf (identical
    repeats, or conflicting ones resolved by the ``duplicates`` option); ``conflicting_leaves``
    counts the leaves among them whose repeats disagreed. Both are 0 for generated hierarchies
    and are kept for the run record: they do not enter ``digest`` (the content does).
    """

    attribute: str
    rows: tuple[tuple[str, ...], ...]
    source: str = "<inline>"
    repeated_rows: int = 0
    conflicting_leaves: int = 0
    _cache: dict = field(default_factory=dict, repr=False, compare=False)
    # A built hierarchy's functional definition (engine/core/builders ``Definition``): how it was
    # built and its exact interval bounds; None for a file or a fixed generator. Not in ``digest``.
    definition: Definition | None = field(default=None, repr=False, compare=False)

    @property
    def height(self) -> int:
        """Highest level index (the root's level); a flat hierarchy has height 1."""
        return len(self.rows[0]) - 1

    @property
    def leaves(self) -> list[str]:
        return [r[0] for r in self.rows]

    @cached_property
    def leaf_code(self) -> dict[str, int]:
        """Leaf string -> integer code (its row index)."""
        return {r[0]: i for i, r in enumerate(self.rows)}

    @cached_property
    def level_codes(self) -> list[np.ndarray]:
        """Per level, an int32 array mapping leaf code -> code of its generalized value."""
        out = []
        for j in range(self.height + 1):
            index: dict[str, int] = {}
            out.append(np.array([index.setdefault(r[j], len(index)) for r in self.rows], dtype=np.int32))
        return out

    @cached_property
    def level_values(self) -> list[list[str]]:
        """Per level, the generalized values in code order."""
        out = []
        for j in range(self.height + 1):
            seen: dict[str, None] = {}
            for r in self.rows:
                seen.setdefault(r[j], None)
            out.append(list(seen))
        return out

    @cached_property
    def leaf_counts(self) -> list[np.ndarray]:
        """Per level, |v_g| for each generalized value: leaves of the hierarchy below it (§1)."""
        return [np.bincount(codes).astype(np.int64) for codes in self.level_codes]

    @cached_property
    def leaf_weights(self) -> list[np.ndarray]:
        """Per level, 1/|v_g| of each *leaf's* generalized value: the TD contribution (§1)."""
        return [1.0 / self.leaf_counts[j][self.level_codes[j]] for j in range(self.height + 1)]

    @cached_property
    def level_code_matrix(self) -> np.ndarray:
        """``level_codes`` as one read-only (levels, leaves) int32 array: one copy per QID into
        the evaluator's padded lookup (EncodedTable.lookup) instead of one per level."""
        out = np.stack(self.level_codes).astype(np.int32, copy=False)
        out.setflags(write=False)
        return out

    @cached_property
    def leaf_weight_matrix(self) -> np.ndarray:
        """``leaf_weights`` as one read-only (levels, leaves) float64 array (see ``level_code_matrix``)."""
        out = np.stack(self.leaf_weights).astype(np.float64, copy=False)
        out.setflags(write=False)
        return out

    @cached_property
    def domain_share_matrix(self) -> np.ndarray:
        """(levels, leaves) read-only float64: the share of the domain under each leaf's value at
        each level, leaves below it / leaves of the hierarchy (ARX's DomainShareMaterialized, the
        term of its Loss metric)."""
        n = float(len(self.rows))
        out = np.stack([self.leaf_counts[j][self.level_codes[j]] / n for j in range(self.height + 1)])
        out.setflags(write=False)
        return out

    @cached_property
    def generalized_counts(self) -> np.ndarray:
        """Per level, the number of generalized values (read-only int64)."""
        out = np.array([len(c) for c in self.leaf_counts], dtype=np.int64)
        out.setflags(write=False)
        return out

    def digest(self) -> str:
        """sha256 of the canonical content: attribute, number of levels, every leaf's path.

        Independent of where the hierarchy came from (file path, CSV layout, row order), so an
        edited ARX file changes the run key and a moved or reformatted one does not.
        """
        found = self._cache.get("digest")
        if found is None:
            canonical = {"attribute": self.attribute, "levels": self.height + 1, "paths": sorted(list(r) for r in self.rows)}
            found = self._cache.setdefault(
                "digest", hashlib.sha256(json.dumps(canonical, ensure_ascii=False, separators=(",", ":")).encode()).hexdigest())
        return found

    def long_rows(self) -> list[tuple[int, str, str, int]]:
        """``(level, leaf, value, leaf_count)`` rows, the layout stored in the database."""
        out = []
        for j in range(self.height + 1):
            counts = self.leaf_counts[j]
            codes = self.level_codes[j]
            for i, r in enumerate(self.rows):
                out.append((j, r[0], r[j], int(counts[codes[i]])))
        return out


def validate(h: Hierarchy) -> Hierarchy:
    """Check that every leaf has every level, leaves are unique, levels nest, one root."""
    where = f"hierarchy of {h.attribute!r} ({h.source})"
    if not h.rows:
        raise HierarchyError(f"The {where} is empty. Hint: give one row per leaf value.")
    width = len(h.rows[0])
    if width < 2:
        raise HierarchyError(f"The {where} has only one level. Hint: add at least a root column '*'.")
    seen: dict[str, int] = {}
    for i, r in enumerate(h.rows):
        if len(r) != width:
            raise HierarchyError(
                f"In the {where}, leaf {r[0]!r} (row {i + 1}) has {len(r)} levels, the first row has {width}. "
                "Hint: every leaf needs a value at every level."
            )
        if any(v == "" for v in r):
            raise HierarchyError(f"In the {where}, leaf {r[0]!r} (row {i + 1}) has an empty level. Hint: fill every level.")
        if r[0] in seen:
            raise HierarchyError(f"In the {where}, leaf {r[0]!r} appears twice (rows {seen[r[0]] + 1} and {i + 1}).")
        seen[r[0]] = i
    for j in range(1, width - 1):
        parent: dict[str, str] = {}
        for r in h.rows:
            p = parent.setdefault(r[j], r[j + 1])
            if p != r[j + 1]:
                raise HierarchyError(
                    f"In the {where}, levels {j} and {j + 1} do not nest: {r[j]!r} generalizes to both "
                    f"{p!r} and {r[j + 1]!r}. Hint: a value must have one parent."
                )
    # Level 0 -> 1 nests trivially because leaves are unique.
    roots = {r[-1] for r in h.rows}
    if len(roots) != 1:
        raise HierarchyError(
            f"The {where} has {len(roots)} values at its top level ({', '.join(sorted(roots)[:3])}, ...). "
            "Hint: add a final column '*' so that the top level is one root."
        )
    return h


def from_rows(attribute: str, rows: Iterable[Sequence[str]], source: str = "<inline>") -> Hierarchy:
    """A validated hierarchy from an iterable of rows (leaf first, root last)."""
    return validate(Hierarchy(attribute, tuple(tuple(str(c) for c in r) for r in rows), source))


# What to do when an ARX file gives one leaf several rows. Identical repeats are always merged;
# these choose between rows that disagree. ARX itself silently keeps the last row (its
# GeneralizationHierarchy overwrites a leaf's mapping row by row), so "keep-last" is ARX's result.
ARX_DUPLICATE_POLICIES = ("error", "keep-last", "keep-first")


# Parsed ARX files of this process, keyed by their content (a digest of the file's bytes) with
# the path, the attribute and the duplicates policy: a run that reads a file again gets the
# Hierarchy it parsed before, with what it derived from it (level codes, leaf arrays, digest),
# and an edited file is parsed afresh. Hierarchies hold no record of the data (leaf counts
# count leaves), so the cache holds nothing about individuals.
_PARSED: OrderedDict[tuple[str, str, str, str], Hierarchy] = OrderedDict()
_PARSED_LOCK = threading.Lock()
PARSED_CACHE_SIZE = 256

# A file's stat stamp (device, inode, size, mtime_ns, ctime_ns) -> the content key of _PARSED it
# was read with: a file whose stamp is unchanged is not read again, as make, ccache and git's
# index trust a file's stat. Any write changes mtime and ctime (ctime cannot be set back by
# utime), a replaced file has another inode. A stamp is only remembered once the file's mtime
# and ctime are RACY_NS in the past when it was read (git's "racily clean" rule): a write within
# the timestamp granularity of a coarse file system would otherwise keep the stamp it replaced.
_STAMPED: OrderedDict[tuple[str, str, str], tuple[tuple[int, ...], tuple[str, str, str, str]]] = OrderedDict()
RACY_NS = 2_000_000_000


def read_arx_csv(path: str | Path, attribute: str, *, duplicates: str = "error") -> Hierarchy:
    """Read an ARX hierarchy file: one row per leaf, one column per level, separator ``;``.

    A leaf given on several identical rows is kept once. A leaf given on rows that differ is an
    error unless ``duplicates`` is "keep-last" (ARX's behaviour) or "keep-first"; the kept row
    stands where the leaf first appeared. The resolved rows are then validated like any other.
    The file is parsed once per content (``_PARSED``); it is read again unless its stat stamp is
    the one it was read with (``_STAMPED``).
    """
    if duplicates not in ARX_DUPLICATE_POLICIES:
        raise HierarchyError(f"duplicates = {duplicates!r} is not one of {', '.join(ARX_DUPLICATE_POLICIES)}.")
    path = Path(path)
    named = (str(path), attribute, duplicates)
    try:
        st = os.stat(path)
        stamp = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        with _PARSED_LOCK:
            seen = _STAMPED.get(named)
            found = _PARSED.get(seen[1]) if seen is not None and seen[0] == stamp else None
            if found is not None:
                _PARSED.move_to_end(seen[1])  # type: ignore[index]
                return found
        data = path.read_bytes()
    except FileNotFoundError:
        raise HierarchyError(f"Hierarchy file {str(path)!r} for {attribute!r} does not exist. Hint: paths are relative to the spec file.") from None
    except OSError as exc:  # a directory, no permission, ...
        raise HierarchyError(f"Hierarchy file {str(path)!r} for {attribute!r} cannot be read: {exc.strerror or exc}.") from None
    key = (*named, hashlib.blake2b(data, digest_size=32).hexdigest())
    settled = time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > RACY_NS
    with _PARSED_LOCK:
        found = _PARSED.get(key)
        if found is not None:
            _PARSED.move_to_end(key)
            _remember(named, stamp, key, settled)
            return found
    h = _parse_arx(data, path, attribute, duplicates)
    with _PARSED_LOCK:
        _PARSED[key] = h
        while len(_PARSED) > PARSED_CACHE_SIZE:
            _PARSED.popitem(last=False)
        _remember(named, stamp, key, settled)
    return h


def _remember(named: tuple[str, str, str], stamp: tuple[int, ...], key: tuple[str, str, str, str], settled: bool) -> None:
    """Keep (or forget) the stamp a file was read with; under _PARSED_LOCK."""
    if not settled:
        _STAMPED.pop(named, None)
        return
    _STAMPED[named] = (stamp, key)
    _STAMPED.move_to_end(named)
    while len(_STAMPED) > PARSED_CACHE_SIZE:
        _STAMPED.popitem(last=False)


def _parse_arx(data: bytes, path: Path, attribute: str, duplicates: str) -> Hierarchy:
    """``read_arx_csv`` of the file's bytes ``data``."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:  # one line naming the file, not a traceback
        raise HierarchyError(f"Hierarchy file {str(path)!r} for {attribute!r} is not UTF-8 text (byte "
                             f"{exc.object[exc.start]:#04x} at offset {exc.start}). Hint: save it as UTF-8.") from None
    reader = csv.reader(io.StringIO(text), delimiter=";")
    numbered: list[tuple[int, list[str]]] = []  # (line number in the file, row)
    for r in reader:
        if not r or not any(c.strip() for c in r):
            continue
        # Trailing empty cells come from a trailing ';' in some exports.
        if r[-1] == "" and len(r) > 1:
            r = r[:-1]
        numbered.append((reader.line_num, r))
    rows, repeated, conflicts = _resolve_repeated_leaves(numbered, duplicates)
    if conflicts and duplicates == "error":
        shown = "; ".join(f"leaf {leaf!r} on lines {', '.join(str(n) for n in lines)}" for leaf, lines in conflicts[:3])
        more = f" and {len(conflicts) - 3} more" if len(conflicts) > 3 else ""
        raise HierarchyError(
            f"Hierarchy file {str(path)!r} for {attribute!r} gives {len(conflicts)} leaves several rows that differ "
            f"({shown}{more}). Hint: ARX keeps the last row of each; to do the same, write "
            f'hierarchy = {{ type = "arx", file = "...", duplicates = "keep-last" }} (or "keep-first"), or fix the file.'
        )
    h = Hierarchy(attribute, tuple(tuple(r) for r in rows), str(path), repeated, len(conflicts))
    try:
        return validate(h)
    except HierarchyError as exc:
        if not conflicts:
            raise
        raise HierarchyError(
            f"After keeping the {duplicates.removeprefix('keep-')} row of each of {len(conflicts)} repeated leaves, "
            f"the hierarchy is still inconsistent: {exc} (ARX does not check this; ppdp needs a tree.)"
        ) from None


def _resolve_repeated_leaves(
    numbered: list[tuple[int, list[str]]], duplicates: str
) -> tuple[list[list[str]], int, list[tuple[str, list[int]]]]:
    """One row per leaf: ``(rows, repeated rows dropped, [(leaf, its line numbers)] for leaves whose rows differ)``."""
    kept: dict[str, list[str]] = {}
    lines: dict[str, list[int]] = {}
    differ: dict[str, None] = {}  # leaves with differing rows, in order of their first line
    for line, r in numbered:
        leaf = r[0]
        if leaf not in kept:
            kept[leaf] = r
            lines[leaf] = [line]
            continue
        lines[leaf].append(line)
        if r != kept[leaf]:
            differ.setdefault(leaf, None)
            if duplicates == "keep-last":
                kept[leaf] = r
        # (identical repeat, or "keep-first"/"error": the kept row stays)
    conflicts = [(leaf, lines[leaf]) for leaf in differ]
    return list(kept.values()), len(numbered) - len(kept), conflicts


def to_arx_csv(h: Hierarchy) -> str:
    """The hierarchy as ARX CSV text."""
    buf = io.StringIO()
    csv.writer(buf, delimiter=";", lineterminator="\n").writerows(h.rows)
    return buf.getvalue()


# --- generated hierarchies --------------------------------------------------------------


def flat(attribute: str, values: Iterable[str]) -> Hierarchy:
    """value -> '*'."""
    return from_rows(attribute, ([v, "*"] for v in sorted(set(values))), source="generated: flat")


def masking(attribute: str, values: Iterable[str], *, levels: int | None = None) -> Hierarchy:
    """Mask trailing characters, one more per level (zip codes: 47677 -> 4767* -> ... -> *****).

    Values are right-padded in the masked part so that values of different lengths still nest;
    the top level is a single '*'. ``levels`` caps how many characters are masked before the root.
    """
    vals = sorted(set(values))
    width = max(len(v) for v in vals)
    if levels is not None and levels > width:  # refused, not silently clipped
        raise HierarchyError(f"Masking hierarchy for {attribute!r}: levels = {levels}, but its longest value has {width} "
                             f"character(s), so at most {width} levels can mask it. Hint: levels = {width} or fewer.")
    n = width if levels is None else levels
    rows = []
    for v in vals:
        row = [v] + [v[: max(len(v) - j, 0)] + "*" * min(j, len(v)) for j in range(1, n)] + ["*"]
        rows.append(row)
    # Values of unequal length could collide across branches; pad to a fixed width so they nest.
    if len({len(v) for v in vals}) > 1:
        rows = [[v] + [(v.rjust(width, " ")[: width - j] + "*" * j).strip() for j in range(1, n)] + ["*"] for v in vals]
    return from_rows(attribute, rows, source=f"generated: masking, {n} levels")


def dates(attribute: str, values: Iterable[str]) -> Hierarchy:
    """day (YYYY-MM-DD) -> month (YYYY-MM) -> year (YYYY) -> '*'."""
    rows = []
    for v in sorted(set(values)):
        if len(v) < 10 or v[4] != "-" or v[7] != "-":
            raise HierarchyError(
                f"Value {v!r} of {attribute!r} is not a date YYYY-MM-DD. Hint: use a DATE column or another hierarchy type."
            )
        rows.append([v, v[:7], v[:4], "*"])
    return from_rows(attribute, rows, source="generated: dates")


def _nice_width(span: float, bins: int) -> float:
    raw = span / max(bins, 1)
    if raw <= 0:
        return 1.0
    exp = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * exp >= raw:
            return m * exp
    return 10 * exp


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def intervals(
    attribute: str,
    values: Iterable[str],
    *,
    widths: Sequence[float] | None = None,
    levels: int = 4,
) -> Hierarchy:
    """Numeric intervals ``[a, b)`` of growing width, then '*'.

    ``widths`` must each divide the next so that intervals nest; without them, widths are
    chosen automatically: a round base width (about 1/16 of the range) doubled ``levels - 1``
    times. Intervals are aligned at multiples of the width (so 0 is always a boundary).
    """
    vals = sorted(set(values))
    try:
        nums = {v: float(v) for v in vals}
    except ValueError as exc:
        raise HierarchyError(f"Interval hierarchy for {attribute!r} needs numeric values: {exc}. Hint: use 'flat' or an ARX file.") from None
    bad = [v for v, x in nums.items() if not math.isfinite(x)]
    if bad:
        raise HierarchyError(f"Interval hierarchy for {attribute!r} needs finite numbers, but the column has "
                             f"{', '.join(repr(v) for v in bad[:5])}. Hint: set them to NULL (with null_policy = \"suppress\") "
                             "or use an ARX file that lists them as leaves.")
    lo, hi = min(nums.values()), max(nums.values())
    if widths is None:
        base = _nice_width(hi - lo if hi > lo else 1.0, 16)
        widths = [base * 2**i for i in range(max(levels - 1, 1))]
    widths = [float(w) for w in widths]
    if any(not math.isfinite(w) or w <= 0 for w in widths):
        raise HierarchyError(f"Interval widths for {attribute!r} must be positive, got {widths}.")
    for a, b in zip(widths, widths[1:], strict=False):
        if b < a or abs(b / a - round(b / a)) > 1e-9:
            raise HierarchyError(
                f"Interval widths for {attribute!r} do not nest: {_fmt(b)} is not a multiple of {_fmt(a)}. "
                "Hint: choose widths like [5, 10, 20]."
            )
    rows = []
    for v in vals:
        x = nums[v]
        row = [v]
        for w in widths:
            a = math.floor(x / w) * w
            row.append(f"[{_fmt(a)}, {_fmt(a + w)})")
        row.append("*")
        rows.append(row)
    return from_rows(attribute, rows, source=f"generated: intervals {[_fmt(w) for w in widths]}")


GENERATORS = {"flat": flat, "masking": masking, "dates": dates, "intervals": intervals}
