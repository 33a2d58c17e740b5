"""Encoding: the source table as a compressed histogram of integer codes.

One GROUP BY over QIDs + SA (pushed into the database, see sql/queries.py) gives the distinct
combinations with their counts. Here they become NumPy arrays: leaf codes per QID, a joint
sensitive-value code, counts, and per-level lookup tables padded into dense 3-D arrays for the
kernels. Records are numbered by histogram row (row h owns records offsets[h]..offsets[h+1]-1),
so a per-record suppression vector S never needs the source keys: records of one row are
indistinguishable, and the release chooses which concrete rows to drop by key order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from ppdp.engine.core.hierarchy import Hierarchy
from ppdp.engine.kernels import grouping as GR
from ppdp.engine.kernels import leaves as LV
from ppdp.errors import DataError, HierarchyError
from ppdp.helper_threads import helper_pool
from ppdp.sql.queries import COUNT_COLUMN  # noqa: E402,F401  (defined with the SQL that names it)


@dataclass(frozen=True, eq=False)
class PopulationHistogram:
    """The population a release's records are drawn from (delta-presence, k-map), as leaf codes
    of the same hierarchies. ``combo_codes`` are the distinct QID combinations of the population
    and of the table's rows together, ``combo_persons`` the population's persons of each (0 for a
    combination only the table has), and ``row_combo`` the combination of each table row: one
    classification of the combinations per G gives both counts (evaluator/population.py)."""

    combo_codes: np.ndarray  # (C, nQ) int32 leaf codes
    combo_persons: np.ndarray  # (C,) int64
    row_combo: np.ndarray  # (H,) int64: the combination of each histogram row of the table
    excluded_null_rows: int = 0  # persons with a NULL quasi-identifier (in no class)

    @property
    def n_persons(self) -> int:
        return int(self.combo_persons.sum())


@dataclass(frozen=True, eq=False)
class GroupTexts:
    """The text of each histogram row by column, as codes into each column's texts (Arrow
    strings): a hierarchy's leaves, or the distinct values of a sensitive column."""

    columns: tuple[str, ...]
    texts: tuple[pa.Array, ...]  # per column, its texts in code order
    codes: tuple[np.ndarray, ...]  # per column, the code of each histogram row

    def frame(self) -> pl.DataFrame:
        """The texts as a String frame (an Arrow take per column: a Polars gather's thread pool
        hand-off cost four times as much on a 1,000-row table)."""
        return pl.DataFrame([pl.Series(c, pc.take(t, pa.array(k))) for c, t, k in zip(self.columns, self.texts, self.codes, strict=True)])


@dataclass(frozen=True, eq=False)
class EncodedTable:
    """The histogram of a source table, ready for the evaluator.

    ``values`` holds the original (text) values of each row's QIDs and SAs, in the same row
    order as ``codes``; the release joins it back to the source. It is made from
    ``values_source`` when first read: a frame, or the texts by code (``GroupTexts``), which a
    search never reads (building the frame was a third of encoding a small table).
    """

    qids: tuple[str, ...]
    sensitive: tuple[str, ...]
    hierarchies: tuple[Hierarchy, ...]
    codes: np.ndarray  # (H, nQ) int32 leaf codes
    sa: np.ndarray  # (H,) int32 joint sensitive code
    sa_values: tuple[tuple, ...]  # joint sensitive value of each code
    counts: np.ndarray  # (H,) int64
    values_source: pl.DataFrame | GroupTexts  # (H rows) original text of QIDs and SAs, see ``values``
    excluded_null_rows: int = 0  # rows left out by null_policy = "suppress"
    # Q of t-closeness by SA code, when given (``encode_histogram(reference=...)``): the whole
    # source's distribution, NULL-QID rows included, or a release's stored one.
    reference_q: np.ndarray | None = None
    # The population, when a model reads population counts per class (Requirements.population).
    population: PopulationHistogram | None = None

    @cached_property
    def values(self) -> pl.DataFrame:
        """(H rows) the original text of each row's QIDs and SAs, in the row order of ``codes``."""
        source = self.values_source
        return source if isinstance(source, pl.DataFrame) else source.frame()

    @property
    def n_rows(self) -> int:
        """Distinct combinations (histogram rows)."""
        return int(self.codes.shape[0])

    @cached_property
    def n_records(self) -> int:
        return int(self.counts.sum())

    @property
    def n_qids(self) -> int:
        return len(self.qids)

    @cached_property
    def heights(self) -> np.ndarray:
        return np.array([h.height for h in self.hierarchies], dtype=np.int64)

    @cached_property
    def offsets(self) -> np.ndarray:
        """Record offsets per histogram row: records of row h are offsets[h]:offsets[h+1]."""
        return np.concatenate([[0], np.cumsum(self.counts)]).astype(np.int64)

    @cached_property
    def row_of_record(self) -> np.ndarray:
        return np.repeat(np.arange(self.n_rows, dtype=np.int64), self.counts)

    @property
    def n_sa(self) -> int:
        return max(len(self.sa_values), 1)

    @cached_property
    def sa_distribution(self) -> np.ndarray:
        """Q of HAEF eq. 2-4: distribution of the joint SA over the whole source (§2)."""
        if self.reference_q is not None:
            return self.reference_q
        if not self.sensitive:  # one joint value (code 0) holds every record: what the bincount gives
            return np.ones(1)
        q = np.bincount(self.sa, weights=self.counts, minlength=self.n_sa)
        return q / q.sum()

    @cached_property
    def lookup(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(gen, weight, n_gen) padded arrays, see engine/kernels/classes.py."""
        nq = self.n_qids
        levels = int(self.heights.max()) + 1 if nq else 1
        leaves = max((len(h.rows) for h in self.hierarchies), default=1)
        gen = np.zeros((nq, levels, leaves), dtype=np.int32)
        weight = np.zeros((nq, levels, leaves), dtype=np.float64)
        n_gen = np.ones((nq, levels), dtype=np.int64)
        for q, h in enumerate(self.hierarchies):
            # one copy per QID of its levels (the arrays are made once per hierarchy)
            n_levels, n_leaves = h.height + 1, len(h.rows)
            gen[q, :n_levels, :n_leaves] = h.level_code_matrix
            weight[q, :n_levels, :n_leaves] = h.leaf_weight_matrix
            n_gen[q, :n_levels] = h.generalized_counts
        return gen, weight, n_gen

    @cached_property
    def level_td(self) -> np.ndarray:
        """(nQ, levels) TD of each QID at each level with nothing suppressed.

        TD is separable over QIDs, so TD(G, no suppression) = sum_q level_td[q, G[q]]: an
        O(nQID) upper bound for every node above G in the lattice (weights only shrink upward).
        """
        gen, weight, _ = self.lookup
        out = np.zeros(gen.shape[:2])
        for q in range(self.n_qids):
            # Records per leaf once, then a leaf-length product per level (no np.dot over the
            # histogram: multi-threaded BLAS for a vector this small only contends for cores).
            per_leaf = np.bincount(self.codes[:, q], weights=self.counts.astype(np.float64),
                                   minlength=weight.shape[2])
            # every level's products at once, each row summed as one level's 1-D array is
            # (pairwise along the contiguous axis: weight[q, :levels] is C-ordered)
            levels = int(self.heights[q]) + 1
            out[q, :levels] = np.multiply(weight[q, :levels], per_leaf).sum(axis=1)
        return out

    def td_upper_bound(self, g: np.ndarray) -> float:
        return float(self.level_td[np.arange(self.n_qids), np.asarray(g)].sum())


def encode_histogram(
    histogram: pl.DataFrame,
    qids: list[str],
    sensitive: list[str],
    hierarchies: list[Hierarchy],
    *,
    null_policy: str = "error",
    reference: dict[tuple, float] | None = None,
) -> EncodedTable:
    """Turn ``histogram`` (text QID and SA columns + COUNT_COLUMN) into an EncodedTable.

    Raises HierarchyError naming the column, the value and the hierarchy's file when a value
    is not a leaf, and DataError for NULL QIDs under ``null_policy = "error"``. ``reference``
    (joint SA text tuple -> share) is t-closeness's Q; its values get codes even when no
    releasable row holds them, so the kernels and the SQL check measure the same distance.
    """
    excluded = 0
    # NULL counts are metadata: the filter only runs when some QID has a NULL
    if qids and any(histogram[c].null_count() for c in qids):
        null_mask = pl.any_horizontal([pl.col(c).is_null() for c in qids])
        nulls = histogram.filter(null_mask)
        n_null = int(nulls[COUNT_COLUMN].sum())
        cols = [c for c in qids if nulls[c].null_count()]
        if null_policy == "error":
            raise _null_qids_error(n_null, cols)
        excluded = n_null
        histogram = histogram.filter(~null_mask)
    if histogram.height == 0:
        raise DataError("The source has no rows to release. Hint: check the table or the WHERE clause of source.query.")

    code_columns = [_leaf_codes(histogram[col], col, h) for col, h in zip(qids, hierarchies, strict=True)]
    if sensitive:
        sa_column = histogram.select(pl.struct([pl.col(c) for c in sensitive]).alias("__sa")).to_series()
        sa_keys = sa_column.unique().sort().to_list()
        sa_tuples = [tuple(d[c] for c in sensitive) for d in sa_keys]
        if reference:
            seen = set(sa_tuples)
            sa_tuples += sorted((t for t in reference if t not in seen), key=lambda t: tuple("" if v is None else str(v) for v in t))
        sa_index = {t: i for i, t in enumerate(sa_tuples)}
        sa_codes = np.array([sa_index[tuple(d[c] for c in sensitive)] for d in sa_column.to_list()], dtype=np.int32)
    else:
        sa_codes = np.zeros(histogram.height, dtype=np.int32)
        sa_tuples = [()]
    # A canonical row order makes record numbering (and so seeded runs) independent of the
    # order in which the database returned its GROUP BY: by leaf codes in QID order, then SA code.
    order = _canonical_order(code_columns, [len(h.rows) for h in hierarchies], sa_codes, len(sa_tuples))
    codes = np.stack(code_columns, axis=1) if qids else np.zeros((histogram.height, 0), dtype=np.int32)
    return EncodedTable(
        qids=tuple(qids),
        sensitive=tuple(sensitive),
        hierarchies=tuple(hierarchies),
        codes=np.ascontiguousarray(codes[order], dtype=np.int32),
        sa=np.ascontiguousarray(sa_codes[order]),
        sa_values=tuple(sa_tuples),
        counts=histogram[COUNT_COLUMN].to_numpy()[order].astype(np.int64),
        values_source=histogram.select(list(qids) + list(sensitive))[order],
        excluded_null_rows=excluded,
        reference_q=None if not reference else np.array([reference.get(t, 0.0) for t in sa_tuples], dtype=np.float64),
    )


def encode_rows(
    rows: pa.Table,
    qids: list[str],
    sensitive: list[str],
    hierarchies: list[Hierarchy],
    *,
    null_policy: str = "error",
    reference: dict[tuple, float] | None = None,
    use_kernels: bool | None = None,
) -> EncodedTable | None:
    """The EncodedTable that ``encode_histogram`` makes of the histogram of ``rows`` (the text
    QID and SA columns of every source row, not grouped: sql.queries.text_rows_query, as Arrow),
    grouped here by leaf codes: each QID's texts looked up among its hierarchy's leaves (a
    signature table for short leaves, kernels/leaves.py, else Arrow's ``index_in``), folded into
    one key per row, and the keys sorted and counted (kernels/grouping.py), instead of the
    database's GROUP BY over text and a second pass over the grouped text.

    The same table, field by field: rows are grouped by exact text (a leaf code stands for one
    text), the keys sort as the key ``_canonical_order`` sorts by, SA codes follow the same
    sort of the distinct SA tuples, and ``values`` are the text of one row of each group; rows
    with a NULL quasi-identifier are refused or withheld by ``null_policy`` with the same error
    and count. None where encode_histogram's general path is needed: no rows (its error), a value
    that is not a leaf (its error names the values) or a key wider than 62 bits. ``use_kernels``:
    the Numba kernels (True) or their plain twins (False); None: the kernels once Numba's JIT is
    started in this process (kernels/grouping.py ``jit_started``). The same table either way."""
    excluded = 0
    null_columns = [c for c in qids if rows.column(c).null_count]
    if null_columns:  # withheld (null_policy "suppress") or refused, as encode_histogram does
        is_null = rows.column(null_columns[0]).is_null()
        for c in null_columns[1:]:
            is_null = pc.or_(is_null, rows.column(c).is_null())
        excluded = int(pc.sum(is_null).as_py())
        if null_policy == "error":
            raise _null_qids_error(excluded, null_columns)
        rows = rows.filter(pc.invert(is_null))
    if rows.num_rows == 0:
        return None
    # each row's mixed-radix key: its QIDs' leaf codes, then its joint SA code (most significant first)
    radices = np.array([*(len(h.rows) for h in hierarchies), 1], dtype=np.int64)
    if sensitive:
        sa_rows, sa_tuples = _joint_sa_codes(rows, sensitive, reference)
        radices[-1] = max(len(sa_tuples), 1)
    else:
        sa_rows, sa_tuples = None, [()]
    # Each code in a field of whole bits when they fit 62 (decoded by shifts; the keys sort as the
    # mixed-radix ones do: both order the rows by their codes, first column first), else in
    # mixed radix.
    powers = np.array([1 << (int(r) - 1).bit_length() for r in radices.tolist()], dtype=np.int64)
    if math.prod(powers.tolist()) < 1 << 62:
        radices = powers
    elif math.prod(radices.tolist()) >= 1 << 62:
        return None
    # The Numba kernels once this process has started Numba's JIT (a search loaded its kernels:
    # a long-lived process, a job's second run); before that their plain twins, so that a run's
    # prepare never waits for the JIT's start (a run that is skipped needs no kernel at all).
    jit = GR.jit_started() if use_kernels is None else use_kernels
    key = _leaf_key(rows, qids, hierarchies, radices.tolist()[:-1], jit)
    if key is None:
        return None  # a value that is not a leaf, or not a string column
    if sa_rows is not None:
        key *= radices[-1]
        key += sa_rows
    if not jit:
        counts, group_columns = _group_keys(key, radices)
        codes, sa = np.ascontiguousarray(group_columns[:-1].T), group_columns[-1].copy()
    else:  # one radix sort over the key's used bits and one pass (kernels/grouping.py)
        whole = radices is powers
        field_bits = np.array([int(r).bit_length() - 1 if whole else -1 for r in radices.tolist()], dtype=np.int64)
        used = int(field_bits.sum()) if whole else (math.prod(radices.tolist()) - 1).bit_length()
        codes, sa, counts = GR.group_sorted(GR.sort_keys(key, used), radices, field_bits)
    # The text of each group, from its codes when first read (converting the rows' Arrow text to
    # Polars cost twice as much as these codes).
    values = GroupTexts(tuple(qids) + tuple(sensitive),
                        tuple(_leaf_array(h) for h in hierarchies)
                        + tuple(pa.array([t[j] for t in sa_tuples], type=pa.string()) for j in range(len(sensitive))),
                        tuple(codes[:, j] for j in range(len(qids))) + (sa,) * len(sensitive))
    return EncodedTable(
        qids=tuple(qids),
        sensitive=tuple(sensitive),
        hierarchies=tuple(hierarchies),
        codes=codes,
        sa=sa,
        sa_values=tuple(sa_tuples),
        counts=counts,
        values_source=values,
        excluded_null_rows=excluded,
        reference_q=None if not reference else np.array([reference.get(t, 0.0) for t in sa_tuples], dtype=np.float64),
    )


# The fewest rows whose QIDs' leaf codes are looked up in two halves of the QIDs at once (a
# helper thread takes the second): below it handing the work over costs more than half the
# lookups save.
PARALLEL_LEAF_ROWS = 10_000


def _leaf_key(rows: pa.Table, qids: list[str], hierarchies: list[Hierarchy], radices: list[int],
              jit: bool) -> np.ndarray | None:
    """Each row's key of its QIDs' leaf codes, in the mixed radix ``radices`` (the first QID
    most significant: key = (...(c1 * r2 + c2) * r3 + ...) + cn), or None where ``_add_leaf_codes``
    refuses a column. From PARALLEL_LEAF_ROWS rows, the QIDs after the first half are keyed in a
    helper thread (the lookups release the GIL) and the halves joined as keyA * (rB1 * ... * rBm)
    + keyB: the same integers."""
    n = rows.num_rows
    columns = list(zip(qids, hierarchies, radices, strict=True))

    def key_of(part: list[tuple[str, Hierarchy, int]]) -> np.ndarray | None:
        key = np.zeros(n, dtype=np.int64)
        for col, h, radix in part:
            if not _add_leaf_codes(rows.column(col), h, radix, key, jit):
                return None
        return key

    if n < PARALLEL_LEAF_ROWS or len(columns) < 2:
        return key_of(columns)
    half = (len(columns) + 1) // 2
    second = helper_pool().submit(key_of, columns[half:])
    first_key = key_of(columns[:half])
    second_key = second.result()
    if first_key is None or second_key is None:
        return None
    first_key *= math.prod(radix for _, _, radix in columns[half:])
    first_key += second_key
    return first_key


def _group_keys(key: np.ndarray, radices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The plain twin of kernels/grouping.py: rows grouped by their keys (int64, mixed radix
    ``radices`` or, when every radix is a power of two, fields of whole bits; ``key`` is
    consumed). Returns (rows of each group as int64, the group's codes as (k, groups) int32),
    groups by ascending key: what ``np.unique(key, return_counts=True)`` gives, its keys decoded
    back into codes. One unstable sort (of uint32 keys when they fit 32 bits: half the bytes,
    the same order), a run-length pass, and the codes read back from the distinct keys."""
    k, n = radices.shape[0], key.shape[0]
    narrow = math.prod(radices.tolist()) <= 1 << 32
    width: Any = np.dtype(np.uint32 if narrow else np.int64).type
    if narrow:
        key = key.astype(np.uint32)
    key.sort()
    edge = np.empty(n, dtype=np.bool_)
    edge[:1] = True
    np.not_equal(key[1:], key[:-1], out=edge[1:])
    starts = np.flatnonzero(edge)
    distinct: Any = key[starts]
    counts = np.diff(starts, append=n).astype(np.int64)
    group_columns = np.empty((k, distinct.shape[0]), dtype=np.int32)
    bits = [int(r).bit_length() - 1 for r in radices.tolist()]
    if all(1 << b == r for b, r in zip(bits, radices.tolist(), strict=True)):  # fields of whole bits
        for j in range(k - 1, -1, -1):
            group_columns[j] = distinct & width((1 << bits[j]) - 1)
            distinct = distinct >> width(bits[j])
        return counts, group_columns
    for j in range(k - 1, -1, -1):
        radix = width(radices[j])
        higher = distinct // radix
        group_columns[j] = distinct - higher * radix  # distinct % radix, without a second division
        distinct = higher
    return counts, group_columns


def _add_leaf_codes(column: pa.ChunkedArray, h: Hierarchy, radix: int, key: np.ndarray, jit: bool = True) -> bool:
    """key = key * radix (at least the leaves of ``h``) + the leaf code of each row's text; False
    when a value is not a leaf, or the column is not of Arrow strings without NULLs (the caller
    then takes the general path). Leaves of at most kernels.leaves.SHORT bytes, ``jit``: that
    kernel, chunk by chunk; else Arrow's ``index_in``."""
    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)) or column.null_count:
        return False
    table = _short_leaf_table(h) if jit else None
    if table is None:
        codes = pc.index_in(column, value_set=_leaf_array(h))
        if codes.null_count:
            return False
        key *= radix
        key += codes.to_numpy()
        return True
    sigs, slots = table
    start = 0
    for chunk in column.chunks:
        n = len(chunk)
        if n == 0:
            continue
        offsets, data = _string_buffers(chunk)
        if LV.add_leaf_codes(offsets, data, sigs, slots, radix, key[start:start + n]) >= 0:
            return False
        start += n
    return True


def _string_buffers(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(offsets (n + 1,) int64, absolute into data; data uint8) of an Arrow string array, sliced
    or not: its own buffers, no copy of the text."""
    _, offsets_buffer, data_buffer = array.buffers()
    wide = pa.types.is_large_string(array.type)
    offsets = np.frombuffer(offsets_buffer, dtype=np.int64 if wide else np.int32)[array.offset:array.offset + len(array) + 1]
    empty = data_buffer is None or data_buffer.size == 0  # only empty texts: one byte
    data = np.zeros(1, dtype=np.uint8) if empty else np.frombuffer(data_buffer, dtype=np.uint8)
    # read-only whatever the buffer (DuckDB's are, an array built in Python is not): the one
    # type the kernels are compiled for
    data.flags.writeable = False
    return offsets.astype(np.int64), data


def _short_leaf_table(h: Hierarchy) -> tuple[np.ndarray, np.ndarray] | None:
    """kernels/leaves.py's table of the leaves of ``h`` when every leaf is at most SHORT bytes
    long, else None; made once per hierarchy."""
    if "short_leaf_table" not in h._cache:
        offsets, data = _string_buffers(_leaf_array(h))
        short = bool(np.all(np.diff(offsets) <= LV.SHORT))
        h._cache["short_leaf_table"] = LV.leaf_table(offsets, data.copy()) if short else None
    return h._cache["short_leaf_table"]


def joint_keys(rows: pa.Table, columns: list[str], limit: int | None = None) -> tuple[np.ndarray, list[list[Any]]] | None:
    """(per row the joint code of ``columns``, each column's values in code order): one
    dictionary encoding per column, index len(dictionary) standing for NULL (a value of its
    own), combined in mixed radix. None when the joint code space reaches ``limit``."""
    key = np.zeros(rows.num_rows, dtype=np.int64)
    distinct_per_column: list[list[Any]] = []
    space = 1
    for col in columns:
        encoded = pc.dictionary_encode(rows.column(col).combine_chunks())
        values = [*encoded.dictionary.to_pylist(), None]
        space *= len(values)
        if limit is not None and space >= limit:
            return None
        key *= len(values)
        key += pc.fill_null(encoded.indices, len(values) - 1).to_numpy().astype(np.int64)
        distinct_per_column.append(values)
    return key, distinct_per_column


def joint_values(combos: np.ndarray, distinct_per_column: list[list[Any]]) -> list[tuple]:
    """The value tuples of joint codes made by ``joint_keys``."""
    tuples = []
    for combo in combos.tolist():
        parts = []
        for values in reversed(distinct_per_column):
            combo, i = divmod(combo, len(values))
            parts.append(values[i])
        tuples.append(tuple(reversed(parts)))
    return tuples


def _joint_sa_codes(rows: pa.Table, sensitive: list[str], reference: dict[tuple, float] | None) -> tuple[np.ndarray, list[tuple]]:
    """(joint SA code of each row, joint SA values in code order), the codes encode_histogram
    gives: its sort of the distinct SA tuples (then the reference's others), applied to the
    few distinct tuples instead of to a struct column of every row."""
    joint = joint_keys(rows, sensitive)
    assert joint is not None  # no limit
    key, distinct_per_column = joint
    space = math.prod(len(values) for values in distinct_per_column)
    if space <= 4 * rows.num_rows + 1024:
        # the distinct keys by marking the key space (no sort of every row's key): what
        # np.unique(key, return_inverse=True) gives
        present = np.zeros(space, dtype=np.bool_)
        present[key] = True
        combos = np.flatnonzero(present)
        rank = np.empty(space, dtype=np.int64)
        rank[combos] = np.arange(combos.shape[0], dtype=np.int64)
        inverse = rank[key]
    else:
        combos, inverse = np.unique(key, return_inverse=True)
    tuples = joint_values(combos, distinct_per_column)
    sa_tuples = sorted(tuples, key=_struct_order)  # distinct already
    if reference:
        seen = set(sa_tuples)
        sa_tuples += sorted((t for t in reference if t not in seen), key=lambda t: tuple("" if v is None else str(v) for v in t))
    sa_index = {t: i for i, t in enumerate(sa_tuples)}
    combo_code = np.array([sa_index[t] for t in tuples], dtype=np.int64)
    return combo_code[inverse.reshape(-1)], sa_tuples


def _struct_order(values: tuple) -> tuple:
    """The sort key giving a tuple of texts the place Polars' sort of a String struct gives it
    (encode_histogram's order of the SA values): field by field, NULL first, then the texts by
    their UTF-8 bytes, which is Python's order of their code points. A plain sort of a few
    tuples: Polars' sort of them was most of encoding a 1,000-row table (its thread pool's
    hand-off, not the sort)."""
    return tuple((v is not None, "" if v is None else v) for v in values)


def _leaf_array(h: Hierarchy) -> pa.Array:
    """The leaves of ``h`` in code order as an Arrow array (a leaf's index is its code), made
    once per hierarchy (a run's hierarchies are parsed once and encode every histogram of it)."""
    leaves = h._cache.get("leaf_array")
    if leaves is None:
        leaves = h._cache.setdefault("leaf_array", pa.array(h.leaves, type=pa.string()))
    return leaves


def _leaf_enum(h: Hierarchy) -> pl.Enum:
    """The Enum of ``h``'s leaves in code order, made once per hierarchy (a run's hierarchies
    are parsed once and encode every histogram of the run)."""
    enum = h._cache.get("leaf_enum")
    if enum is None:
        enum = h._cache.setdefault("leaf_enum", pl.Enum(h.leaves))
    return enum


def _null_qids_error(n_null: int, columns: list[str]) -> DataError:
    return DataError(
        f"{n_null} source rows have NULL in quasi-identifier(s) {', '.join(map(repr, columns))}. "
        "Hint: clean them, or set source.null_policy = \"suppress\" to withhold those rows from every release."
    )


def _canonical_order(code_columns: list[np.ndarray], n_leaves: list[int], sa_codes: np.ndarray, n_sa: int) -> np.ndarray:
    """Row order by (leaf codes in QID order, SA code): one stable argsort of a mixed-radix key
    when the radices fit in 62 bits (np.lexsort makes one pass per key, the slow part on
    adult's 18,000 rows), else np.lexsort (its last key is its first). The same order either way."""
    radices = [*n_leaves, max(n_sa, 1)]
    if math.prod(radices) < 1 << 62:
        key = np.zeros(sa_codes.shape[0], dtype=np.int64)
        for column, radix in zip([*code_columns, sa_codes], radices, strict=True):
            key *= radix
            key += column
        return np.argsort(key, kind="stable")
    return np.lexsort([sa_codes, *reversed(code_columns)])


def _leaf_codes(column: pl.Series, name: str, h: Hierarchy) -> np.ndarray:
    """The leaf code (row of the hierarchy) of every value of a text column, as int32, or
    HierarchyError naming the values that are not leaves. One cast to an Enum of the leaves in
    code order (a leaf's category index is its code) instead of a per-value dictionary lookup:
    most of the encoding's time on small tables."""
    if column.dtype == pl.String:
        try:
            as_enum = column.cast(_leaf_enum(h))
        except (pl.exceptions.PolarsError, ValueError):
            as_enum = None  # a value that is not a leaf: named below (or leaves an Enum refuses: the lookup)
        if as_enum is not None:
            return _enum_codes(as_enum, len(h.rows))
    leaf = h.leaf_code
    missing = [v for v in column.unique().to_list() if v not in leaf]
    if missing:
        shown = ", ".join(repr(v) for v in sorted(missing)[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise HierarchyError(
            f"Column {name!r} has value(s) {shown}{more} that are not leaves of its hierarchy ({h.source}). "
            "Hint: add them to the hierarchy's first column."
        )
    return column.replace_strict(leaf, return_dtype=pl.Int32).to_numpy().astype(np.int32)


def _enum_codes(as_enum: pl.Series, n_categories: int) -> np.ndarray:
    """Category indices of an Enum series as int32: read from its Arrow dictionary array (half
    the time of ``to_physical``, a lazy query per call), whose dictionary is the Enum's whole
    category list; ``to_physical`` when it is not (another Arrow export, or no pyarrow)."""
    try:
        arrow = as_enum.to_arrow()
        if len(arrow.dictionary) == n_categories:
            return arrow.indices.to_numpy(zero_copy_only=False).astype(np.int32)
    except (ImportError, AttributeError):
        pass
    return as_enum.to_physical().to_numpy().astype(np.int32)


def encode_population(histogram: pl.DataFrame, table: EncodedTable, where: str) -> PopulationHistogram:
    """The population of ``table`` from its histogram (text QIDs + COUNT_COLUMN). A value that
    is not a leaf of its hierarchy is refused (HierarchyError naming ``where``): such a person
    belongs to no class, and counting them nowhere would understate their class's population.
    Persons with a NULL quasi-identifier are in no class and are counted apart."""
    qids = list(table.qids)
    null_mask = pl.any_horizontal([pl.col(c).is_null() for c in qids])
    excluded = int(histogram.filter(null_mask)[COUNT_COLUMN].sum()) if histogram.height else 0
    histogram = histogram.filter(~null_mask)
    cols = []
    for col, h in zip(qids, table.hierarchies, strict=True):
        missing = [v for v in histogram[col].unique().to_list() if v not in h.leaf_code]
        if missing:
            shown = ", ".join(repr(v) for v in sorted(missing)[:5])
            raise HierarchyError(f"The population ({where}) has value(s) {shown} in column {col!r} that are not leaves of "
                                 f"its hierarchy ({h.source}). Hint: add them to the hierarchy's first column.")
        cols.append(histogram[col].replace_strict(h.leaf_code, return_dtype=pl.Int32).to_numpy())
    codes = np.stack(cols, axis=1).astype(np.int32) if cols else np.zeros((histogram.height, 0), dtype=np.int32)
    both = np.concatenate([codes, table.codes], axis=0)
    combos, inverse = np.unique(both, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    persons = np.bincount(inverse[: len(codes)], weights=histogram[COUNT_COLUMN].to_numpy().astype(np.float64),
                          minlength=len(combos)).astype(np.int64)
    return PopulationHistogram(np.ascontiguousarray(combos, dtype=np.int32), persons,
                               np.ascontiguousarray(inverse[len(codes):], dtype=np.int64), excluded)
