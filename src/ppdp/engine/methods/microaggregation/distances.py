"""QID distances of the DRASL paper, eq. 1-6 (docs/design/paper_notes.md §6), and their array encoding.

Four kinds of QID, declared per column by ``QidKind`` (defaults from the column's dtype):

- ``continuous`` (eq. 1): ``|a - b| / (max(C) - min(C))``.
- ``semantic`` nominal (eq. 2): 0 if equal, else ``|Parent(a, b)| / |Tree|``: leaves under the
  lowest common ancestor in the QID's hierarchy over all leaves of the hierarchy.
- ``nominal`` (non-semantic, eq. 3): ``(p - matches) / p`` where p is the number of
  non-semantic nominal QIDs *taken together*. Example 1 fixes this reading: Sex and Religion
  contribute one term (2 - 0) / 2 = 1 to eq. 6, not one term each.
- ``ordinal`` (eq. 4-5): ``|phi(a) - phi(b)|`` with ``phi(v) = (rank(v) - 1) / (|O| - 1)``.

Eq. 6 sums the continuous, semantic and ordinal terms and the one non-semantic term and divides
by |QIA|, the number of QIDs (5 in Example 1, although only 4 terms are summed).

The plain-Python functions here (``record_distance``, ``centroid``) are the reference; the
Numba kernel in ``_kernels.py`` computes the same on the encoded arrays of ``EncodedQids``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ppdp.engine.core.hierarchy import Hierarchy
from ppdp.errors import DataError, SpecError

QidKindName = Literal["continuous", "semantic", "nominal", "ordinal"]
KINDS: tuple[str, ...] = ("continuous", "semantic", "nominal", "ordinal")

_SQL_NUMERIC = ("TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
                "UINTEGER", "UBIGINT", "FLOAT", "REAL", "DOUBLE", "DECIMAL", "NUMERIC", "INT2", "INT4", "INT8",
                "FLOAT4", "FLOAT8", "DOUBLE PRECISION")


@dataclass(frozen=True)
class QidKind:
    """How DRASL measures one QID: its column, kind, and what that kind needs.

    ``hierarchy`` is the taxonomy of a semantic nominal QID; ``order`` lists an ordinal QID's
    values in ascending rank (without it, the sorted distinct values of the data are the order).
    """

    column: str
    kind: QidKindName
    hierarchy: Hierarchy | None = None
    order: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise SpecError(f"QID {self.column!r} has kind {self.kind!r}. Hint: use one of {', '.join(KINDS)}.")
        if self.kind == "semantic" and self.hierarchy is None:
            raise SpecError(f"QID {self.column!r} is semantic nominal but has no hierarchy. "
                            "Hint: give its hierarchy (the taxonomy tree) or declare it 'nominal'.")

    @property
    def tree(self) -> Hierarchy:
        """The hierarchy of a semantic QID, which ``__post_init__`` guarantees is there."""
        if self.hierarchy is None:
            raise SpecError(f"QID {self.column!r} ({self.kind}) has no hierarchy. Hint: only a semantic QID has one.")
        return self.hierarchy


def _is_numeric_dtype(dtype: Any) -> bool:
    if isinstance(dtype, str):
        name = dtype.strip().upper().split("(")[0].strip()
        return name in _SQL_NUMERIC
    is_numeric = getattr(dtype, "is_numeric", None)  # polars data types
    if callable(is_numeric):
        return bool(is_numeric())
    try:
        np_dtype = np.dtype(dtype)
    except TypeError:
        return False
    return np.issubdtype(np_dtype, np.number) and not np.issubdtype(np_dtype, np.bool_)


def default_kind(column: str, dtype: Any, *, hierarchy: Hierarchy | None = None) -> QidKind:
    """The default kind of a QID from its dtype (numpy, polars, or an SQL type name):
    numeric -> continuous; otherwise semantic nominal if it has a hierarchy, else non-semantic."""
    if _is_numeric_dtype(dtype):
        return QidKind(column, "continuous")
    if hierarchy is not None:
        return QidKind(column, "semantic", hierarchy=hierarchy)
    return QidKind(column, "nominal")


# --- single-attribute distances (eq. 1-5) -----------------------------------------------


def continuous_distance(a: float, b: float, lo: float, hi: float) -> float:
    """Eq. 1: ``|a - b| / (max - min)``; 0 when the column is constant."""
    return 0.0 if hi <= lo else abs(float(a) - float(b)) / (hi - lo)


def semantic_distance(a: str, b: str, hierarchy: Hierarchy) -> float:
    """Eq. 2: leaves under the lowest common ancestor of ``a`` and ``b`` over all leaves."""
    if a == b:
        return 0.0
    codes = hierarchy.leaf_code
    for value in (a, b):
        if value not in codes:
            raise DataError(f"Value {value!r} of {hierarchy.attribute!r} is not a leaf of its hierarchy ({hierarchy.source}). "
                            "Hint: add it to the hierarchy file.")
    ia, ib = codes[a], codes[b]
    for j in range(1, hierarchy.height + 1):
        level = hierarchy.level_codes[j]
        if level[ia] == level[ib]:
            return float(hierarchy.leaf_counts[j][level[ia]]) / len(hierarchy.rows)
    raise AssertionError("a validated hierarchy has one root")  # pragma: no cover


def nominal_distance(a: Sequence[Any], b: Sequence[Any]) -> float:
    """Eq. 3 over the p non-semantic nominal QIDs together: ``(p - matches) / p``."""
    p = len(a)
    if p == 0:
        return 0.0
    return (p - sum(1 for x, y in zip(a, b, strict=True) if x == y)) / p


def ordinal_phi(rank: int, levels: int) -> float:
    """Eq. 5: ``(rank - 1) / (|O| - 1)`` with ranks from 1; 0 for a one-value domain."""
    return 0.0 if levels <= 1 else (rank - 1) / (levels - 1)


def ordinal_distance(a: Any, b: Any, order: Sequence[Any]) -> float:
    """Eq. 4: ``|phi(a) - phi(b)|`` with ranks by position in ``order`` (ascending)."""
    rank = {v: i + 1 for i, v in enumerate(order)}
    return abs(ordinal_phi(rank[a], len(order)) - ordinal_phi(rank[b], len(order)))


# --- the schema: kinds plus the domain facts the distances need -------------------------


@dataclass(frozen=True)
class QidSchema:
    """The QIDs in order with the domain facts eq. 1-6 need: continuous ranges (min, max over
    the table) and ordinal orders. Build it with ``fit_schema`` from the table's columns."""

    kinds: tuple[QidKind, ...]
    ranges: Mapping[str, tuple[float, float]]
    orders: Mapping[str, tuple[Any, ...]]

    @property
    def columns(self) -> list[str]:
        return [k.column for k in self.kinds]

    def of_kind(self, kind: str) -> list[QidKind]:
        return [k for k in self.kinds if k.kind == kind]


def fit_schema(kinds: Sequence[QidKind], columns: Mapping[str, Sequence[Any]]) -> QidSchema:
    """A ``QidSchema`` for the given table: min/max of continuous QIDs, order of ordinal ones
    (declared, else the sorted distinct values)."""
    if not kinds:
        raise SpecError("DRASL needs at least one QID. Hint: declare the quasi-identifiers.")
    ranges: dict[str, tuple[float, float]] = {}
    orders: dict[str, tuple[Any, ...]] = {}
    for k in kinds:
        if k.column not in columns:
            raise DataError(f"QID {k.column!r} is not among the columns given. Hint: pass every QID column.")
        values = columns[k.column]
        if k.kind == "continuous":
            arr = np.asarray(values, dtype=np.float64)
            if arr.size == 0 or not np.all(np.isfinite(arr)):
                raise DataError(f"Continuous QID {k.column!r} is empty or has non-finite values. Hint: remove missing values first.")
            ranges[k.column] = (float(arr.min()), float(arr.max()))
        elif k.kind == "ordinal":
            order = tuple(k.order) if k.order is not None else tuple(sorted(set(values)))
            missing = set(values) - set(order)
            if missing:
                raise DataError(f"Ordinal QID {k.column!r} has values outside its declared order: "
                                f"{', '.join(repr(v) for v in sorted(map(str, missing))[:5])}. Hint: list every value in 'order'.")
            orders[k.column] = order
    return QidSchema(tuple(kinds), ranges, orders)


def record_distance(r1: Mapping[str, Any], r2: Mapping[str, Any], schema: QidSchema) -> float:
    """Eq. 6: the distance of two records (mappings column -> value), plain Python."""
    total = 0.0
    for k in schema.kinds:
        a, b = r1[k.column], r2[k.column]
        if k.kind == "continuous":
            lo, hi = schema.ranges[k.column]
            total += continuous_distance(a, b, lo, hi)
        elif k.kind == "semantic":
            total += semantic_distance(str(a), str(b), k.tree)
        elif k.kind == "ordinal":
            total += ordinal_distance(a, b, schema.orders[k.column])
    nominal = [k.column for k in schema.of_kind("nominal")]
    total += nominal_distance([r1[c] for c in nominal], [r2[c] for c in nominal])
    return total / len(schema.kinds)


def _mode(values: Sequence[Any], key=None) -> Any:
    # Ties go to the smallest value (by ``key``) so that a centroid does not depend on record
    # order; the keys are the codes of ``encode`` so that ``encoded_centroid`` agrees.
    counts = Counter(values)
    best = max(counts.values())
    return min((v for v, c in counts.items() if c == best), key=key)


def centroid(records: Sequence[Mapping[str, Any]], schema: QidSchema) -> dict[str, Any]:
    """The centroid mu of a group: mean of continuous QIDs, mode of nominal ones (ties: the
    smallest value; for semantic QIDs the first in hierarchy order), lower median by rank of
    ordinal ones.

    The paper does not define mu; Example 2 gives mu of {r1, r2} as (34, 10010, F, Buddhism,
    good): the mean age, and for every other QID a value of the domain. The lower median is what
    makes the ordinal term of Example 2 come out (good, not the mean of good and excellent).
    """
    if not records:
        raise DataError("The centroid of an empty group is undefined. Hint: a group has at least one record.")
    mu: dict[str, Any] = {}
    for k in schema.kinds:
        values = [r[k.column] for r in records]
        if k.kind == "continuous":
            mu[k.column] = float(np.mean(np.asarray(values, dtype=np.float64)))
        elif k.kind == "ordinal":
            rank = {v: i for i, v in enumerate(schema.orders[k.column])}
            ranked = sorted(values, key=rank.__getitem__)
            mu[k.column] = ranked[(len(ranked) - 1) // 2]
        elif k.kind == "semantic":
            mu[k.column] = _mode([str(v) for v in values], key=k.tree.leaf_code.__getitem__)
        else:
            mu[k.column] = _mode(values, key=_nominal_key)
    return mu


def _nominal_key(v: Any) -> tuple[str, Any]:
    return (str(type(v)), v)


# --- array encoding for the kernels -----------------------------------------------------


@dataclass(frozen=True, eq=False)
class EncodedQids:
    """Records of one table as arrays, in the units the kernels sum directly.

    cont[n, mc]   continuous values scaled to [0, 1] by the column's range (eq. 1 becomes |a - b|)
    sem[n, ms]    leaf codes of semantic QIDs (``Hierarchy.leaf_code``)
    nom[n, mn]    value codes of non-semantic nominal QIDs
    ordn[n, mo]   phi of ordinal values (eq. 5, so eq. 4 becomes |a - b|)
    sem_table[ms, L, L]  eq. 2 for every pair of leaves, padded to the largest hierarchy
    n_qids        |QIA|, the divisor of eq. 6
    nom_values    per nominal QID, the value of each code (to decode a centroid)
    """

    cont: np.ndarray
    sem: np.ndarray
    nom: np.ndarray
    ordn: np.ndarray
    sem_table: np.ndarray
    n_qids: int
    nom_values: tuple[tuple[Any, ...], ...]

    @property
    def n(self) -> int:
        return int(self.cont.shape[0])


def semantic_table(hierarchy: Hierarchy) -> np.ndarray:
    """Eq. 2 for every pair of leaf codes, as an ``L x L`` array."""
    n_leaves = len(hierarchy.rows)
    table = np.ones((n_leaves, n_leaves), dtype=np.float64)  # the root covers every leaf
    # From the top level down, so each pair ends with its lowest common ancestor's count.
    for j in range(hierarchy.height - 1, 0, -1):
        codes = hierarchy.level_codes[j]
        counts = hierarchy.leaf_counts[j]
        same = codes[:, None] == codes[None, :]
        table = np.where(same, (counts[codes] / n_leaves)[:, None], table)
    np.fill_diagonal(table, 0.0)
    return table


def encode(schema: QidSchema, columns: Mapping[str, Sequence[Any]]) -> EncodedQids:
    """Encode a table's QID columns (mapping column -> values) for the kernels."""
    n = len(next(iter(columns.values()))) if columns else 0
    cont_cols, sem_cols, nom_cols, ord_cols = (schema.of_kind(k) for k in KINDS)
    cont = np.zeros((n, len(cont_cols)), dtype=np.float64)
    for i, k in enumerate(cont_cols):
        lo, hi = schema.ranges[k.column]
        x = np.asarray(columns[k.column], dtype=np.float64)
        cont[:, i] = 0.0 if hi <= lo else (x - lo) / (hi - lo)
    sem = np.zeros((n, len(sem_cols)), dtype=np.int32)
    size = max((len(k.tree.rows) for k in sem_cols), default=0)
    sem_table = np.zeros((len(sem_cols), size, size), dtype=np.float64)
    for i, k in enumerate(sem_cols):
        codes = k.tree.leaf_code
        try:
            sem[:, i] = [codes[str(v)] for v in columns[k.column]]
        except KeyError as exc:
            raise DataError(f"Value {exc.args[0]!r} of {k.column!r} is not a leaf of its hierarchy ({k.tree.source}). "
                            "Hint: add it to the hierarchy file.") from None
        m = len(k.tree.rows)
        sem_table[i, :m, :m] = semantic_table(k.tree)
    nom = np.zeros((n, len(nom_cols)), dtype=np.int32)
    nom_values = []
    for i, k in enumerate(nom_cols):
        domain = sorted(set(columns[k.column]), key=_nominal_key)
        index = {v: c for c, v in enumerate(domain)}
        nom[:, i] = [index[v] for v in columns[k.column]]
        nom_values.append(tuple(domain))
    ordn = np.zeros((n, len(ord_cols)), dtype=np.float64)
    for i, k in enumerate(ord_cols):
        order = schema.orders[k.column]
        phi = {v: ordinal_phi(r + 1, len(order)) for r, v in enumerate(order)}
        ordn[:, i] = [phi[v] for v in columns[k.column]]
    return EncodedQids(cont, sem, nom, ordn, sem_table, len(schema.kinds), tuple(nom_values))


def _column_mode(codes: np.ndarray) -> np.ndarray:
    # np.argmax returns the first maximum, i.e. the smallest code among ties (as ``_mode``).
    return np.array([np.argmax(np.bincount(codes[:, i])) for i in range(codes.shape[1])], dtype=np.int32)


def encoded_centroid(enc: EncodedQids, members: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The centroid of the records ``members`` (row indices) in encoded form
    ``(cont, sem, nom, ordn)``; the same rules as ``centroid``."""
    members = np.asarray(members, dtype=np.int64)
    if members.size == 0:
        raise DataError("The centroid of an empty group is undefined. Hint: a group has at least one record.")
    cont = enc.cont[members].mean(axis=0)
    sem = _column_mode(enc.sem[members])
    nom = _column_mode(enc.nom[members])
    # Lower median of phi: phi is increasing in rank, so it is the lower median by rank.
    ordn = np.sort(enc.ordn[members], axis=0)[(members.size - 1) // 2] if enc.ordn.shape[1] else np.zeros(0)
    return cont, sem, nom, ordn
