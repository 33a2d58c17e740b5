"""Box bounds for the certified lattice search.

Notation: a node G (a level per QID), a histogram row h (records identical on every QID and
SA), w_q(j, h) the TD weight 1/|v| of row h's value of QID q at level j (non-increasing in j),
and TD(G, S) = sum over kept records r of sum_q w_q(G_q, r). A *box* [L, U] is every node G
with L <= G <= U componentwise; [0, top] is the whole lattice, [G, G] the node G.

**Meet levels.** For two rows h, p and a QID q let m_q(h, p) be the lowest level at which their
values of q generalize to the same value (hierarchies are trees, so they stay equal above it).
Two records share a class at G iff G >= m(h, p) componentwise. Two records of one row have
m = 0.

**Minimum class size.** Every class S*(G) keeps has at least ``kmin = max(k, l_distinct)``
records (k-anonymity: size >= k; distinct l-diversity: l distinct SA values need l records;
t-closeness sets no size, so kmin may be 1).

**Partner bound.** Let r, a record of row h, be kept at some G in [L, U]. Its class has at
least kmin records, so there are kmin - 1 other records p_1..p_{kmin-1} with G >= m(h, p_i);
hence m(h, p_i) <= U (*partners inside the box*) and G_q >= max(L_q, m_q(h, p_i)), so with
non-increasing weights r contributes sum_q w_q(G_q, h) <= v(h, p_i) := sum_q w_q(max(L_q,
m_q(h, p_i)), h) for each i: at most min_i v(h, p_i), which is at most the (kmin - 1)-th largest
v(h, p) over the other records p with m(h, p) <= U (counted with multiplicity), and r is
suppressed (contributes 0) when fewer than kmin - 1 exist. With kmin <= 1 the bound is
u_L(h) = sum_q w_q(L_q, h). Summing b(h) * count_h over rows bounds TD(G, S*(G)) (and TD of any
(G, S) whose kept classes meet the models) for every G in the box: B(L, U).

**t-closeness partners.** The t-distance is Euclidean (engine/kernels/classes.py), at least
|P(s) - q_s| for every SA value s, so a kept class holding a_s >= 1 records of r's SA value s
among n has a_s / n <= q_s + t, hence n - a_s >= a_s (1 / (q_s + t) - 1) >= 1 / (q_s + t) - 1:
r needs need_t(s) = ceil(1 / (q_s + t) - 1) partners *with another SA value*. The same argument
gives the need_t(s)-th largest v over those partners inside U (a second partner table, whose
candidates are the records of other SA values); a row's bound is the smaller of the two.
This needs a distance >= |P(s) - q_s|: the Euclidean one, and the equal-distance EMD (1/2
sum |p - q| = max over sets A of |P(A) - Q(A)|, at least the singleton {s}'s). The ordered EMD
averages its cumulative terms and can be smaller, so under it the t table is not built (the
size table and the class bound, which use kmin alone, still are).

Properties the search relies on: (1) a sub-box has a bound no larger (a larger L raises every
level, a smaller U removes partners); (2) B(L, U) <= TD(L, nothing suppressed) = UB(L), the
older bound; (3) for k-anonymity alone B(G, G) = TD(G, S*(G)) exactly (a record has its
partners at G iff its class is large enough). The monotonicity pruning of the brief (a node
anonymous with nothing suppressed bounds everything above it) is the case U = top, L = G with
every record's partners at G: B = UB(G) = TD(G).

**Dominated partners.** Records with equal meet vectors are merged (with their count). A
partner p with m(h, p) >= m(h, p') componentwise (p' dominates p) is inside U only if p' is, and
has v(h, p) <= v(h, p') for every L. So when dominators of p with kmin - 1 records in all are
kept, p never changes the (kmin - 1)-th largest value and is dropped (rows in order of meet-level
sum, counting only kept dominators, so each removal leaves its dominators in place). For
kmin = 2 this keeps exactly the Pareto-minimal meet vectors.

The partner tables are O(rows^2 x nQID) to build; above ``MAX_PARTNER_ROWS`` rows the class
bound below replaces them when kmin >= 2; otherwise (neither a minimum class size nor a table
small enough for the t-closeness table) the bound is UB(L), which is still sound.

**Class bound** (tables too large for partner tables, kmin >= 2). Classify the rows at U. Let
r, a record of row h, be kept at some G in [L, U] with its kept class C at G, |C| >= kmin.
Classes only merge upward (hierarchies are trees: values equal at G_q stay equal at U_q >= G_q),
so C lies inside r's class at U, which therefore has at least kmin records. Hence a row whose
class at U has fewer than kmin records (counted with the row's count) contributes 0 at every G
in the box, and a record of any other row contributes sum_q w_q(G_q, h) <= u_L(h) = sum_q
w_q(L_q, h) (non-increasing weights, G >= L). So B_c(L, U) = sum over rows h in classes of at
least kmin records at U of count_h * u_L(h) bounds TD(G, S*(G)), and TD of every (G, S) whose
kept classes meet the models, for every G in the box. Only kmin is used: sound for k-anonymity,
distinct and entropy l-diversity (l distinct SA values need l records, in kmin; entropy
l-diversity implies distinct l-diversity) and alongside t-closeness (dropping a constraint only
enlarges the feasible set). Properties: (1) a sub-box [L', U'] (L' >= L, U' <= U) has a bound
no larger: u_L'(h) <= u_L(h), and each class at U' lies inside a class at U, so a class of at
least kmin records at U' lies in one of at least kmin at U; (2) B_c(L, U) <= UB(L) (a sum of
count_h * u_L(h) over a subset of the rows); (3) for k-anonymity alone B_c(G, G) = TD(G, S*(G))
(S*(G) keeps exactly the classes of at least k records). It is the partner bound's size table
with its partner values all replaced by u_L(h): a record has kmin - 1 partners inside U iff its
class at U has kmin records, so on small tables the partner bound is never larger (taking
their minimum would change nothing). Cost: one classification of the rows a box, O(rows x
nQID), with no O(rows^2) table (``_class_bounds``, plain-Python twin ``class_bounds_python`` in tests/support/bounds_reference.py).

**Row states and the running top-k** change no bound, only the work: a box's rows
with fewer than need partner records inside U, or need records merged at L, keep that bound in
every sub-box (property (1)'s argument per row; ``_row_bounds``), so the search passes each
box's states to its halves; the need-th largest v is kept in a running top-k that skips a
partner whose meet weight cannot beat it (``SELECT_MAX_NEED``). Both are tested bit for bit
against the full scan (``row_bounds_python``, tests/support/bounds_reference.py) and the search with them against the one without.
Each row's partners are scanned in order of meet weight, largest first (``wm_order``), so the
scan stops at the first partner inside U whose meet weight is below the running k-th largest
(none after it can raise it, none is merged at L); rows with many partners find those inside U
from bitsets (``partner_bitsets``) instead of testing each. Neither changes a value or a state
(tests: the Python twin, and the bitsets against the packed test).

Proof tests (tests/oracles/test_lattice_bounds.py; the class bound's with ``MAX_PARTNER_ROWS`` = 0): B(L, U) >= TD of every feasible (G, S) in the box
by brute force over every S on tiny tables, and >= TD(G, S*(G)) by exhaustive evaluation on
random tables and boxes; (1) and (2); the exactness (3); the reduced tables against every
candidate listed; need_t by hand; the search's certified optimum against exhaustive search.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numba as nb
import numpy as np

from ppdp.engine.kernels import classes as _kernels
from ppdp.engine.kernels import kinds
from ppdp.engine.kernels.cache import guard
from ppdp.engine.kernels.classes import _classify_into, _rank_bounded_into, _rank_into, _table_size
from ppdp.engine.methods.generalization.problem import Problem

guard(__file__, depends_on=[_kernels])  # _class_bounds compiles in _kernels._classify_into

NO_LIMIT = np.iinfo(np.int64).max  # round_bounds' max_small without a limit
ROW_WEIGHTS_MAX = 1 << 22  # entries of class_round's weights laid out per row (32 MiB)
MAX_PARTNER_ROWS = 5_000  # O(rows^2 x nQID) to build the partner table: a few seconds up to here
MAX_KEY = 2**62  # meet vectors are merged by a mixed-radix key of prod(heights + 2) values


def min_class_size(problem: Problem) -> int:
    """The fewest records a class S*(G) keeps may have (see the module docstring)."""
    o = problem.oracle_params
    return max(int(o.k), int(o.l_distinct), 1)


# Leaves per QID up to which ``_table`` precomputes every pair's meet level (an int8 table of
# nQID x leaves^2 bytes, 2 MiB at most), so a row's meet vectors are lookups instead of walks
# up the hierarchies: on a 5,000-record adult sample the walks were 40 % of building the
# partner table. Larger domains walk as before.
MEET_TABLE_MAX_LEAVES = 512


@nb.njit(cache=True)
def _meet_table(gen, heights):
    """tab[q, a, b]: the lowest level at which leaf codes a and b of QID q agree (at most
    heights[q]: every hierarchy has one root, engine/core/hierarchy.py; heights[q] + 1, outside
    every box, otherwise)."""
    nq = gen.shape[0]
    n_leaves = gen.shape[2]
    tab = np.empty((nq, n_leaves, n_leaves), dtype=np.int8)
    for q in range(nq):
        for a in range(n_leaves):
            for b in range(n_leaves):
                j = 0
                while j <= heights[q] and gen[q, j, a] != gen[q, j, b]:
                    j += 1
                tab[q, a, b] = j
    return tab


# Packed meet vectors: a vector of levels as one int64, a field of
# bit_length(heights[q] + 1) bits per QID (levels go up to heights[q] + 1, "never merge") with a
# guard bit above it. For packed u, v and the mask G of the guard bits, u <= v componentwise iff
# ((v | G) - u) & G == G: in each field (v_q + 2^b) - u_q lies in [1, 2^(b+1) - 1] since
# u_q, v_q < 2^b, so no field borrows from the next, and the result reaches the guard bit 2^b
# iff v_q >= u_q. One subtraction replaces a loop over the QIDs in the dominance test of the
# partner tables and in the "partner inside U" / "merged at L" tests of every box bound. Up to
# 63 bits (int64 stays non-negative); wider lattices keep the loops (guard -1).
def meet_packing(heights: np.ndarray) -> tuple[np.ndarray, int]:
    """(bit offset of each QID's field, mask of the guard bits) of packed meet vectors, or
    (zeros, -1) when they need more than 63 bits."""
    shifts = np.zeros(len(heights), dtype=np.int64)
    guard, pos = 0, 0
    for q, h in enumerate(np.asarray(heights, dtype=np.int64).tolist()):
        width = int(h + 1).bit_length()
        shifts[q] = pos
        guard |= 1 << (pos + width)
        pos += width + 1
    return (shifts, guard) if pos <= 63 else (np.zeros(len(heights), dtype=np.int64), -1)


@nb.njit(cache=True)
def _pack(vecs, shifts):
    """Each row of ``vecs`` (levels) as one packed int64 (``meet_packing``)."""
    n, nq = vecs.shape
    out = np.zeros(n, dtype=np.int64)
    for i in range(n):
        x = 0
        for q in range(nq):
            x |= vecs[i, q] << shifts[q]
        out[i] = x
    return out


@dataclass(frozen=True)
class PartnerTable:
    """Per row, the meet vectors of its candidate partners (CSR), their record counts, and how
    many partner records a kept record of the row needs (0: no partner bound for the row)."""

    start: np.ndarray  # (H + 1,) offsets into meet / mult
    meet: np.ndarray  # (P, nQ) int64 meet levels
    mult: np.ndarray  # (P,) records behind each meet vector
    need: np.ndarray  # (H,) partner records needed

    @property
    def active(self) -> bool:
        return bool(np.any(self.need > 0))


def t_partners_needed(problem: Problem) -> np.ndarray:
    """Per row, the records with another SA value a kept record of the row needs in its class
    under t-closeness (module docstring); zeros without t-closeness."""
    t = problem.table
    o = problem.oracle_params
    if o.t < 0 or t.n_sa == 0 or o.t_kind not in (kinds.LARGEST_EUCLIDEAN_DISTANCE, kinds.EQUAL_EMD):
        return np.zeros(t.n_rows, dtype=np.int64)
    share = np.asarray(t.sa_distribution, dtype=np.float64)[t.sa] + float(o.t)
    # ceil(1 / (q_s + t) - 1), a hair below to absorb rounding (a smaller need is still sound)
    need = np.ceil(np.where(share < 1.0, 1.0 / share - 1.0, 0.0) - 1e-9)
    return np.maximum(need, 0).astype(np.int64)


def partner_tables(problem: Problem) -> list[PartnerTable]:
    """The size table (any other record; need kmin - 1) and the t-closeness table (records with
    another SA value; need per row), those that bind; none when the table is too large for the
    O(rows^2) tables (the bound is then UB(L))."""
    t = problem.table
    if t.n_rows > MAX_PARTNER_ROWS or np.prod(t.heights.astype(float) + 2) >= MAX_KEY:
        return []
    out = []
    kmin = min_class_size(problem)
    if kmin >= 2:
        out.append(_table(problem, np.full(t.n_rows, kmin - 1, dtype=np.int64), other_sa_only=False))
    need_t = t_partners_needed(problem)
    if np.any(need_t > 0):
        out.append(_table(problem, need_t, other_sa_only=True))
    return out


# Meet-vector key spaces (prod(heights + 2)) up to this size merge equal vectors by direct
# addressing (an int32 array of that many entries, 16 MiB at most), larger ones by a hash table.
DENSE_MAX_KEYS = 1 << 22


def _table(problem: Problem, need: np.ndarray, *, other_sa_only: bool) -> PartnerTable:
    """Candidates of row h: every other record (``other_sa_only`` False) or the records with
    another SA value than h's (True)."""
    t = problem.table
    gen = t.lookup[0]
    codes = np.ascontiguousarray(t.codes, dtype=np.int64)
    heights = np.asarray(t.heights, dtype=np.int64)
    tab = (_meet_table(gen, heights) if gen.shape[2] <= MEET_TABLE_MAX_LEAVES and int(heights.max(initial=0)) < 127
           else np.zeros((0, 0, 0), dtype=np.int8))
    n_keys = int(np.prod(heights + 2))
    dense = np.full(n_keys if n_keys <= DENSE_MAX_KEYS else 0, -1, dtype=np.int32)
    shifts, guard = meet_packing(heights)
    sa = np.asarray(t.sa, dtype=np.int64) if other_sa_only else np.zeros(t.n_rows, dtype=np.int64)
    key_packed, key_sum = (_key_tables(heights, shifts) if len(dense) and guard >= 0
                           else (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)))
    start, meet, mult = _partner_lists(codes, gen, heights, t.counts.astype(np.int64), sa, other_sa_only,
                                       need.astype(np.int64), tab, dense, shifts, guard, key_packed, key_sum)
    return PartnerTable(start, meet, mult, need.astype(np.int64))


@nb.njit(cache=True)
def _key_tables(heights, shifts):
    """(packed, sums): for every mixed-radix key of a meet vector (levels <= heights + 1, the
    first QID most significant, as ``_row_partners`` folds them), the vector packed
    (``meet_packing``) and its level sum; the keys counted up like an odometer."""
    nq = heights.shape[0]
    n_keys = 1
    for q in range(nq):
        n_keys *= heights[q] + 2
    packed = np.empty(n_keys, dtype=np.int64)
    sums = np.empty(n_keys, dtype=np.int64)
    digits = np.zeros(nq, dtype=np.int64)
    pk = 0
    total = 0
    for key in range(n_keys):
        packed[key] = pk
        sums[key] = total
        q = nq - 1
        while q >= 0:
            if digits[q] + 1 < heights[q] + 2:
                digits[q] += 1
                pk += 1 << shifts[q]
                total += 1
                break
            pk -= digits[q] << shifts[q]
            total -= digits[q]
            digits[q] = 0
            q -= 1
    return packed, sums


@nb.njit(cache=True)
def _partner_lists(codes, gen, heights, counts, sa, other_sa_only, need, tab, dense, shifts, guard, key_packed, key_sum):
    """(start, meet, mult) of the partner table: ``_row_partners`` of every row with need > 0,
    concatenated (CSR); the candidates of row h are ``counts`` without h's own record, or only
    the rows of another SA value."""
    n, nq = codes.shape
    keys = np.empty(n, dtype=np.int64)
    ids = np.empty(n, dtype=np.int32)
    size = _table_size(n)
    slot_key = np.empty(size, dtype=np.int64)
    slot_id = np.empty(size, dtype=np.int32)
    distinct = np.empty(n, dtype=np.int64)
    merged = np.empty(n, dtype=np.int64)
    cand = np.empty(n, dtype=np.int64)
    start = np.zeros(n + 1, dtype=np.int64)
    meet = np.empty((max(n, 16), nq), dtype=np.int64)
    mult = np.empty(max(n, 16), dtype=np.int64)
    row_keys = np.empty((nq, tab.shape[2]), dtype=np.int64)
    used = 0
    for h in range(n):
        if need[h] > 0:
            for p in range(n):
                cand[p] = (counts[p] if sa[p] != sa[h] else 0) if other_sa_only else counts[p]
            if not other_sa_only:
                cand[h] -= 1  # the row's other records
            vecs, mu = _row_partners(h, codes, gen, heights, cand, need[h], tab, keys, ids, slot_key, slot_id,
                                     dense, distinct, merged, shifts, guard, key_packed, key_sum, row_keys)
            while used + len(mu) > mult.shape[0]:  # grow by doubling
                bigger = np.empty((2 * mult.shape[0], nq), dtype=np.int64)
                bigger[:used] = meet[:used]
                meet = bigger
                bigger_mult = np.empty(2 * mult.shape[0], dtype=np.int64)
                bigger_mult[:used] = mult[:used]
                mult = bigger_mult
            meet[used:used + len(mu)] = vecs
            mult[used:used + len(mu)] = mu
            used += len(mu)
        start[h + 1] = used
    return start, meet[:used].copy(), mult[:used].copy()


@nb.njit(cache=True)
def _row_partners(h, codes, gen, heights, mult, need, tab, keys, ids, slot_key, slot_id, dense, distinct, merged, shifts,
                  guard, key_packed, key_sum, row_keys):
    """Row h's partner list: the distinct meet vectors of the ``mult[p]`` candidate records of
    each row p with their record counts (the row's own other records: the zero vector), sorted by
    level sum and then by vector (lexicographically), without those dominated by ``need`` records
    of kept vectors (``_undominated``); plain-Python twin ``row_partners_python``.

    Each candidate's meet vector is folded into a mixed-radix key (levels <= heights + 1) as it
    is read and equal keys are merged, by direct addressing in ``dense`` (every entry -1, and
    left so) when it holds the key space, else by a hash table (``_rank_into``): only the d
    distinct vectors are sorted, not the rows: on a 5,000-record adult sample the sort of every
    row's rows was most of building the partner table. ``keys``, ``ids``,
    ``distinct``, ``merged``: scratch of n; ``slot_key``/``slot_id``: a power-of-two
    hash table of at least 2n slots.

    With direct addressing and packed vectors, ``key_packed[key]``/``key_sum[key]`` (``_key_tables``)
    give each distinct key's packed vector and level sum, so the (sum, key) order is one sort of
    d composite integers sum * n_keys + key (the order of the two stable argsorts below) and
    only the kept vectors are decoded: on a 5,000-record adult sample the two argsorts and the
    decoding of every distinct vector were most of the partner table after the meet levels.
    With the meet table, ``row_keys[q, b]`` (scratch, nQ x leaves) holds row h's
    key term of leaf b of QID q, its meet level times the QID's place value, so a candidate's
    key is a sum of nQ independent lookups (the same integer as the Horner form)."""
    n, nq = codes.shape
    with_tab = tab.shape[1] > 0
    by_dense = dense.shape[0] > 0
    if with_tab:
        place = 1
        for q in range(nq - 1, -1, -1):
            for b in range(tab.shape[2]):
                row_keys[q, b] = int(tab[q, codes[h, q], b]) * place
            place *= heights[q] + 2
    d = 0
    for p in range(n):
        if mult[p] <= 0:
            keys[p] = 0
            continue
        key = 0
        if with_tab:
            for q in range(nq):
                key += row_keys[q, codes[p, q]]
        else:
            for q in range(nq):
                j = 0
                while j <= heights[q] and gen[q, j, codes[h, q]] != gen[q, j, codes[p, q]]:
                    j += 1
                key = key * (heights[q] + 2) + j
        keys[p] = key
        if by_dense:
            i = dense[key]
            if i < 0:
                dense[key] = d
                distinct[d] = key
                merged[d] = mult[p]
                d += 1
            else:
                merged[i] += mult[p]
    if by_dense and key_packed.shape[0] > 0:
        n_keys = dense.shape[0]
        comp = np.empty(d, dtype=np.int64)
        for x in range(d):
            comp[x] = key_sum[distinct[x]] * n_keys + distinct[x]
        comp.sort()  # distinct integers: the (sum, key) order
        pk = np.empty(d, dtype=np.int64)
        mu = np.empty(d, dtype=np.int64)
        for x in range(d):
            key = comp[x] % n_keys
            comp[x] = key
            pk[x] = key_packed[key]
            mu[x] = merged[dense[key]]
        for x in range(d):
            dense[distinct[x]] = -1
        keep = _undominated(np.empty((0, nq), dtype=np.int64), mu, need, pk, guard)
        n_kept = 0
        for x in range(d):
            n_kept += keep[x]
        vecs = np.empty((n_kept, nq), dtype=np.int64)
        mu_kept = np.empty(n_kept, dtype=np.int64)
        y = 0
        for x in range(d):
            if keep[x]:
                key = comp[x]
                for q in range(nq - 1, -1, -1):
                    radix = heights[q] + 2
                    vecs[y, q] = key % radix
                    key //= radix
                mu_kept[y] = mu[x]
                y += 1
        return vecs, mu_kept
    if by_dense:
        for x in range(d):
            dense[distinct[x]] = -1
    else:
        d = _rank_into(keys, mult, ids, slot_key, slot_id)  # dense ids of the candidates (mult > 0)
        for x in range(d):
            merged[x] = 0
        for p in range(n):
            i = ids[p]
            if i >= 0:
                distinct[i] = keys[p]
                merged[i] += mult[p]
    by_key = np.argsort(distinct[:d], kind="mergesort")  # key order is the vectors' lexicographic order
    vecs = np.empty((d, nq), dtype=np.int64)
    mu = np.empty(d, dtype=np.int64)
    sums = np.zeros(d, dtype=np.int64)
    for x in range(d):
        i = by_key[x]
        key = distinct[i]
        mu[x] = merged[i]
        for q in range(nq - 1, -1, -1):
            radix = heights[q] + 2
            vecs[x, q] = key % radix
            key //= radix
            sums[x] += vecs[x, q]
    by_sum = np.argsort(sums, kind="mergesort")
    vecs = vecs[by_sum]
    mu = mu[by_sum]
    keep = _undominated(vecs, mu, need, _pack(vecs, shifts), guard)
    return vecs[keep], mu[keep]



@nb.njit(cache=True)
def _undominated(vecs, mult, need, packed, guard):
    """Mask of the rows of ``vecs`` (distinct, sorted by sum) that fewer than ``need`` records of
    kept rows dominate (are <= everywhere); a dominator has a smaller sum, so comes first.
    ``packed``/``guard``: the rows packed (``meet_packing``; guard -1: compare QID by QID)."""
    n, nq = packed.shape[0], vecs.shape[1]  # vecs is only read when guard is -1
    keep = np.zeros(n, dtype=np.bool_)
    kept = np.empty(n, dtype=np.int64)
    n_kept = 0
    for i in range(n):
        above = 0
        vg = packed[i] | guard
        for x in range(n_kept):
            j = kept[x]
            if guard >= 0:
                dominated = ((vg - packed[j]) & guard) == guard
            else:
                dominated = True
                for q in range(nq):
                    if vecs[j, q] > vecs[i, q]:
                        dominated = False
                        break
            if dominated:
                above += mult[j]
                if above >= need:
                    break
        if above < need:
            keep[i] = True
            kept[n_kept] = i
            n_kept += 1
    return keep


# Needs up to this size take the k-th largest partner value (with multiplicity) from a running
# top-k of the values seen (a selection, no arithmetic: the same value as sorting them all),
# without a sort and its allocation per (box, row); on a 1,000-record creditcard sample (k = 5)
# the argsorts were most of the box bounds' time. Once k records are in it, a
# partner whose meet weight sum_q w_q(m_q, h) (``_meet_weights``) is at most the k-th largest so
# far is skipped unscanned: its v = sum_q w_q(max(L_q, m_q), h) is no larger (weights do not
# increase with the level, and a float sum of termwise smaller non-negative terms in the same
# order is no larger), so it cannot raise the k-th largest. Larger needs sort all values.
SELECT_MAX_NEED = 16


# Bitsets of the partners inside U: on a 5,000-record mach2019 sample a row has
# about 250 partners of which about 15 lie inside a late box's U, and testing each was most of
# the box bounds' time. For each row, QID q and level j, a bitset over the row's partners (in
# table order) of those with m_q <= j; the partners inside U are the AND over q of the sets at
# U_q, one word (64 partners) at a time, read off by their lowest set bit (a de Bruijn multiply
# gives its position). The same partners in the same order as the packed test, so the same
# values and states; rows with few partners keep the packed test (BITSET_MIN_PARTNERS). Up to MAX_BITSET_WORDS words (8 bytes each) in all; above, the packed test.
MAX_BITSET_WORDS = 1 << 23
# Rows with at most this many partners test each (a few packed words read beat nQ bitset words)
BITSET_MIN_PARTNERS = 64
ALL_BITS = np.uint64(0xFFFFFFFFFFFFFFFF)
NO_BITS = np.uint64(0)
ONE_BIT = np.uint64(1)
DEBRUIJN = np.uint64(0x03F79D71B4CB0A89)
DEBRUIJN_SHIFT = np.uint64(58)
DEBRUIJN_POS = np.zeros(64, dtype=np.int64)
for _bit in range(64):
    DEBRUIJN_POS[((0x03F79D71B4CB0A89 << _bit) & 0xFFFFFFFFFFFFFFFF) >> 58] = _bit


def partner_bitsets(start: np.ndarray, meet: np.ndarray, heights: np.ndarray,
                    n_levels: int) -> tuple[np.ndarray, np.ndarray]:
    """(woff, bits): row h's partners take words woff[h]..woff[h + 1] (64 partners a word; none
    for a row of at most BITSET_MIN_PARTNERS partners, which keeps the packed test) of each bitset; bit p of word w of row h's set (q, j), at bits[woff[h] * nQ * n_levels + (q *
    n_levels + j) * words_h + w], says partner start[h] + 64 w + p has m_q <= j. Empty arrays
    when the sets would take more than MAX_BITSET_WORDS words or no row has more than
    BITSET_MIN_PARTNERS partners (no row would read them)."""
    partners = np.diff(start)
    n_words = np.where(partners > BITSET_MIN_PARTNERS, (partners + 63) // 64, 0)
    woff = np.zeros(len(start), dtype=np.int64)
    np.cumsum(n_words, out=woff[1:])
    nq = meet.shape[1]
    if int(woff[-1]) * nq * n_levels > MAX_BITSET_WORDS or int(np.diff(start).max(initial=0)) <= BITSET_MIN_PARTNERS:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint64)
    return woff, _fill_bitsets(start, meet, np.asarray(heights, dtype=np.int64), woff, n_levels)


@nb.njit(cache=True)
def _fill_bitsets(start, meet, heights, woff, n_levels):
    nq = meet.shape[1]
    bits = np.zeros(woff[-1] * nq * n_levels, dtype=np.uint64)
    for h in range(start.shape[0] - 1):
        n_words = woff[h + 1] - woff[h]
        if n_words == 0:
            continue
        base = woff[h] * nq * n_levels
        for pos in range(start[h + 1] - start[h]):
            row = start[h] + pos
            bit = ONE_BIT << np.uint64(pos % 64)
            for q in range(nq):
                for j in range(meet[row, q], heights[q] + 1):
                    bits[base + (q * n_levels + j) * n_words + pos // 64] |= bit
    return bits


# Partners gathered per chunk in ``_row_bounds`` before the early-stop test (a chunk's gather
# stays branch-free; a larger chunk gathers more partners past the stop).
GATHER_CHUNK = 32


def wm_order(table: PartnerTable, wm: np.ndarray) -> tuple[PartnerTable, np.ndarray]:
    """(table, wm) with each row's partners reordered by meet weight, largest first (ties in
    table order), as ``_row_bounds``'s early stop needs, and the partners of infinite weight
    (a level above the top: inside no box) dropped. The bound is a k-th largest value over the
    partners inside U and the row states count them: neither depends on their order."""
    n = len(table.start) - 1
    row_of = np.repeat(np.arange(n, dtype=np.int64), np.diff(table.start))
    finite = np.isfinite(wm)
    order = np.lexsort((-wm, row_of))  # stable: by row, then wm descending, then table order
    order = order[finite[order]]
    start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(row_of[order], minlength=n), out=start[1:])
    return (PartnerTable(start, np.ascontiguousarray(table.meet[order]), np.ascontiguousarray(table.mult[order]),
                         table.need), np.ascontiguousarray(wm[order]))


@nb.njit(cache=True)
def _meet_weights(codes, weight, start, meet, heights):
    """wm[p]: sum_q w_q(m_q, h) of each partner p of each row h (summed over q in order, as v
    is), +inf for a vector with a level above the top (never inside a box)."""
    n, nq = codes.shape
    wm = np.empty(meet.shape[0])
    for h in range(n):
        for row in range(start[h], start[h + 1]):
            total = 0.0
            for q in range(nq):
                if meet[row, q] > heights[q]:
                    total = np.inf
                    break
                total += weight[q, meet[row, q], codes[h, q]]
            wm[row] = total
    return wm


# Row states a box passes to its sub-boxes (``_row_bounds``'s ``parent`` and ``status``), so
# that a sub-box skips the partner scan of rows whose bound the state already fixes (on a
# 5,000-record adult sample 70 % of the rows of a bounded box are in one of the first two).
ROW_NONE = 0  # fewer than need partner records inside U: bound 0 in every sub-box
ROW_AT_L = 1  # at least need partner records merged at L: bound u_L(h) in every sub-box
ROW_SCAN = 2  # anything else: scan the partners


@nb.njit(cache=True)
def _row_bounds(L, U, codes, weight, start, meet, mult, need, packed, shifts, guard, parent, wm, woff, bits):
    """(out, status): out[i, h] the bound of one record of row h over the box [L[i], U[i]]
    (module docstring): the need[h]-th largest v over its partners inside U, 0 when too few,
    u_L(h) when need is 0; status[i, h] the row's state (ROW_NONE, ROW_AT_L, ROW_SCAN) in that box.
    ``parent[i, h]``: the row's state in a box containing box i (ROW_SCAN when none is known).
    Why a state holds in every sub-box [L', U'] (L' >= L, U' <= U): ROW_NONE, the partners
    inside U' are among those inside U, so fewer than need still; ROW_AT_L, a partner with
    m <= L has m <= L' <= U', so it is inside U' and merged at L' (v = u_L'(h), the largest v of
    any partner: weights do not increase with the level), so the need-th largest v is u_L'(h),
    computed as the scan computes it (the same sum in the same order: the same float).
    ``packed``: the partners' meet vectors packed (``meet_packing``'s ``shifts``, ``guard``;
    guard -1: compared QID by QID); ``wm``: their meet weights (``_meet_weights``); ``woff``,
    ``bits``: the partners' ``partner_bitsets`` (``woff`` empty: the packed test per partner)."""
    n_nodes, nq = L.shape
    n = codes.shape[0]
    out = np.zeros((n_nodes, n))
    top_v = np.empty(SELECT_MAX_NEED + 1)
    top_m = np.empty(SELECT_MAX_NEED + 1, dtype=np.int64)
    status = np.full((n_nodes, n), ROW_SCAN, dtype=np.int8)
    # The boxes' corners packed with the guard bits set: "inside U" and "merged at L" are then
    # one subtraction per partner (``meet_packing``).
    lowg = _pack(L, shifts) | guard
    highg = _pack(U, shifts) | guard
    vals = np.empty(meet.shape[0] + 1)
    muls = np.empty(meet.shape[0] + 1, dtype=np.int64)
    inside_at = np.empty(64, dtype=np.int64)
    by_bits = woff.shape[0] > 0
    n_levels = weight.shape[1]
    # Rows outside, boxes inside: a row's partner list (a few dozen meet vectors) stays in cache
    # while every box of the batch reads it, where box-major order streamed the whole table
    # (megabytes) once per box. Each (box, row) value is computed as before.
    # The row's weights by QID and level, gathered once per row (the same values as
    # weight[q, level, codes[h, q]], read from a small array that stays in cache).
    wrow = np.empty((nq, weight.shape[1]))
    for h in range(n):
        k = need[h]
        for q in range(nq):
            for j in range(weight.shape[1]):
                wrow[q, j] = weight[q, j, codes[h, q]]
        for i in range(n_nodes):
            if k <= 0:
                own = 0.0
                for q in range(nq):
                    own += wrow[q, L[i, q]]
                out[i, h] = own
                continue
            state = parent[i, h]
            if state == ROW_NONE:
                status[i, h] = ROW_NONE  # out stays 0
                continue
            own = 0.0
            for q in range(nq):
                own += wrow[q, L[i, q]]
            if state == ROW_AT_L:
                status[i, h] = ROW_AT_L
                out[i, h] = own
                continue
            # Partners come in order of meet weight, largest first (``wm_order``): once the
            # running top-k holds k records and a partner inside U has wm below the k-th largest v
            # so far, no later partner can raise it (v <= wm <= this wm) and none is merged at L
            # (such a partner has wm >= u_L(h) >= every v): the scan stops there, with the value
            # and the state of the full scan. Merged at L, v is the row's own weight: stop once
            # k of them are seen.
            npart = 0
            inside_records = 0
            best = 0.0
            low = 0
            done = False
            stop = False
            small = k <= SELECT_MAX_NEED
            n_top = 0  # the running top-k (small needs): values descending, their records
            top_records = 0
            row0 = start[h]
            end = start[h + 1]
            row_bits = by_bits and woff[h + 1] > woff[h]  # the row has bitsets (partner_bitsets)
            n_words = woff[h + 1] - woff[h] if row_bits else 0
            base = woff[h] * nq * n_levels if row_bits else 0
            word = 0
            word_first = row0
            inside_bits = NO_BITS
            while not done and not stop:
                # The next partners inside U, in table order: with bitsets, up to 8 set bits of the
                # current word (64 partners) of the AND over the QIDs of "m_q <= U_q", taken lazily
                # so that an early stop skips the rest; otherwise a chunk gathered without a branch
                # (the test is one packed subtraction, its outcome unpredictable: a branch per
                # partner mispredicts often), chunks so that the early stop saves the gather too.
                n_in = 0
                if row_bits:
                    while inside_bits == NO_BITS and word < n_words:
                        inside_bits = ALL_BITS
                        for q in range(nq):
                            inside_bits &= bits[base + (q * n_levels + U[i, q]) * n_words + word]
                        word_first = start[h] + 64 * word
                        word += 1
                    if inside_bits == NO_BITS:
                        break
                    while inside_bits != NO_BITS and n_in < 8:
                        low_bit = inside_bits & (~inside_bits + ONE_BIT)
                        inside_bits ^= low_bit
                        inside_at[n_in] = word_first + DEBRUIJN_POS[(low_bit * DEBRUIJN) >> DEBRUIJN_SHIFT]
                        n_in += 1
                elif row0 >= end:
                    break
                elif guard >= 0:
                    row1 = min(row0 + GATHER_CHUNK, end)
                    for row in range(row0, row1):
                        inside_at[n_in] = row
                        n_in += ((highg[i] - packed[row]) & guard) == guard
                    row0 = row1
                else:
                    row1 = min(row0 + GATHER_CHUNK, end)
                    for row in range(row0, row1):
                        inside = True
                        for q in range(nq):
                            if meet[row, q] > U[i, q]:
                                inside = False
                                break
                        inside_at[n_in] = row
                        n_in += inside
                    row0 = row1
                for x in range(n_in):
                    row = inside_at[x]
                    if small and top_records >= k and wm[row] < top_v[n_top - 1]:
                        stop = True
                        break
                    if guard >= 0:
                        at_low = ((lowg[i] - packed[row]) & guard) == guard
                    else:
                        at_low = True
                        for q in range(nq):
                            if L[i, q] < meet[row, q]:
                                at_low = False
                                break
                    inside_records += mult[row]
                    if at_low:  # merged at L: every level is L's, v is the row's own u_L(h)
                        low += mult[row]
                        if low >= k:
                            best = own
                            done = True
                            break
                        v = own
                    else:
                        if small and top_records >= k and wm[row] <= top_v[n_top - 1]:
                            continue  # v <= wm: cannot raise the k-th largest (SELECT_MAX_NEED)
                        v = 0.0
                        for q in range(nq):
                            v += wrow[q, max(L[i, q], meet[row, q])]
                    if not small:
                        vals[npart] = v
                        muls[npart] = mult[row]
                        npart += 1
                    elif top_records < k or v > top_v[n_top - 1]:
                        pos = n_top
                        while pos > 0 and top_v[pos - 1] < v:
                            top_v[pos] = top_v[pos - 1]
                            top_m[pos] = top_m[pos - 1]
                            pos -= 1
                        top_v[pos] = v
                        top_m[pos] = mult[row]
                        n_top += 1
                        top_records += mult[row]
                        while n_top > 1 and top_records - top_m[n_top - 1] >= k:  # the tail holds no k-th
                            n_top -= 1
                            top_records -= top_m[n_top]
            if done:
                status[i, h] = ROW_AT_L
            elif inside_records < k:
                status[i, h] = ROW_NONE  # best stays 0: fewer than k partner records inside U
            elif small:
                best = top_v[n_top - 1]
            else:
                order = np.argsort(-vals[:npart])
                acc = 0
                for j in order:
                    acc += muls[j]
                    if acc >= k:
                        best = vals[j]
                        break
            out[i, h] = best
    return out, status


# numpy's pairwise summation block (PW_BLOCKSIZE in numpy's loops_utils.h)
_PW_BLOCK = 128


@nb.njit(cache=True)
def _pairwise_block(a, lo, n):
    """numpy's sum of a block of at most 128 (``pairwise_sum_DOUBLE``'s leaves): a plain loop
    below 8, else eight accumulators, combined as a tree, then the remainder."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    whole = n - n % 8
    while i < whole:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@nb.njit(cache=True)
def _pairwise(a, n):
    """numpy's pairwise sum of a[:n] (``pairwise_sum_DOUBLE``), the same float: blocks of at
    most 128 (``_pairwise_block``), above that the sum of two halves (the first a multiple of 8).
    The recursion runs on an explicit stack (Numba's cache mishandles recursive functions)."""
    if n <= _PW_BLOCK:
        return _pairwise_block(a, 0, n)
    lo = np.empty(64, dtype=np.int64)  # frames: a range, its phase, its left half's sum
    size = np.empty(64, dtype=np.int64)
    phase = np.zeros(64, dtype=np.int64)
    left = np.empty(64)
    lo[0], size[0], phase[0] = 0, n, 0
    sp = 1
    ret = 0.0
    while sp > 0:
        f = sp - 1
        half = size[f] // 2
        half -= half % 8
        if phase[f] == 0:
            if size[f] <= _PW_BLOCK:
                ret = _pairwise_block(a, lo[f], size[f])
                sp -= 1
                continue
            phase[f] = 1
            lo[sp], size[sp], phase[sp] = lo[f], half, 0
            sp += 1
        elif phase[f] == 1:
            left[f] = ret
            phase[f] = 2
            lo[sp], size[sp], phase[sp] = lo[f] + half, size[f] - half, 0
            sp += 1
        else:
            ret = left[f] + ret
            sp -= 1
    return ret


@nb.njit(cache=True)
def weighted_sums(per_row, counts):
    """out[i] = sum over rows h of per_row[i, h] * counts[h], summed as numpy's
    ``np.multiply(per_row, counts).sum(axis=1)`` sums (pairwise, bit for bit: tested)."""
    n_boxes, n = per_row.shape
    out = np.empty(n_boxes)
    prod = np.empty(n)
    for i in range(n_boxes):
        for h in range(n):
            prod[h] = per_row[i, h] * counts[h]
        out[i] = _pairwise(prod, n)
    return out




@nb.njit(cache=True)
def _class_bounds(L, U, codes, gen, n_gen, weight, counts, kmin):
    """out[i]: the class bound B_c(L[i], U[i]) (module docstring): the rows classified at U[i],
    count_h * u_L(h) summed over the rows whose class there holds at least kmin records."""
    return _class_bounds_small(L, U, codes, gen, n_gen, weight, counts, kmin)[0]


@nb.njit(cache=True)
def _class_bounds_small(L, U, codes, gen, n_gen, weight, counts, kmin):
    """(``_class_bounds``, small[i]): the records in classes of fewer than kmin records at U[i],
    which every node of the box suppresses (its classes lie inside those at U[i])."""
    n_boxes, nq = L.shape
    n = codes.shape[0]
    work = _big_rows_work(n)
    big = np.zeros(n, dtype=np.bool_)
    out = np.zeros(n_boxes)
    small = np.zeros(n_boxes, dtype=np.int64)
    for i in range(n_boxes):
        small[i] = _big_rows_into(U[i], codes, gen, n_gen, counts, kmin, work, big)
        total = 0.0
        for h in range(n):
            if big[h]:
                own = 0.0
                for q in range(nq):
                    own += weight[q, L[i, q], codes[h, q]]
                total += counts[h] * own
        out[i] = total
    return out, small


@nb.njit(cache=True)
def _big_rows_work(n):
    """Scratch arrays of ``_big_rows_into`` for a table of n rows."""
    size = _table_size(n)
    return (np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int32), np.empty(size, dtype=np.int64),
            np.empty(size, dtype=np.int32), np.ones(n, dtype=np.bool_), np.zeros(n, dtype=np.int64))


@nb.njit(cache=True)
def _big_rows_into(u, codes, gen, n_gen, counts, kmin, work, big):
    """big[h]: row h's class at levels u holds at least kmin records; returns the records of
    the other rows (those every node below u suppresses)."""
    keys, cls, slot_key, slot_id, active, records = work
    n = codes.shape[0]
    m = _classify_into(u, codes, gen, n_gen, active, keys, cls, slot_key, slot_id)
    for c in range(m):
        records[c] = 0
    for h in range(n):
        records[cls[h]] += counts[h]
    lost = 0
    for h in range(n):
        big[h] = records[cls[h]] >= kmin
        if not big[h]:
            lost += counts[h]
    return lost


@nb.njit(cache=True)
def class_round(L, U, src, act, axis, ids, n_ids, small, codes, codes_t, gen, n_gen, records, kmin, weight, counts,
                row_w, w_off, max_small, work):
    """The class bound of a round's boxes [L[i], U[i]] (``_class_bounds_small``'s numbers, bit
    for bit) with their classifications at U kept as rows of ``ids`` (class ids of the rows in
    classes of at least kmin records, -1 for the others; ``n_ids``: the bound of the ids, the
    number of classes). Box i reads ``ids[src[i]]`` and ``small[src[i]]``, classified here
    first when ``act[i]`` >= -1: over every row (-1), or rolled up from ``ids[act[i]]``, the
    classes at a U' equal to U[i] but in QID ``axis[i]``, where U'[axis] > U[axis]: a class at U
    is a class at U' (one id) split by its generalized value in that QID, and a row outside a
    class of kmin records at U' is outside one at U (its class there lies inside), so only the
    rows with an id at U' are classified again: the same classes, the same sums.
    ``row_w[w_off[q] + j, h]`` = ``weight[q, j, codes[h, q]]`` when given (else no rows): the
    same numbers, read in row order. A box whose small exceeds ``max_small`` gets -inf instead
    of its sum (under a suppression limit of max_small records no node of it is within the
    limit: every one suppresses those records).
    ``work``: (keys, cls, slot_key, slot_id, flags, class records, own) scratch of n rows."""
    n_boxes, nq = L.shape
    n = codes.shape[0]
    keys, cls, slot_key, slot_id, flags, rec, own = work
    for i in range(n_boxes):
        a = act[i]
        if a < -1:
            continue
        s = src[i]
        if a == -1:
            for h in range(n):
                flags[h] = True
            m = _classify_into(U[i], codes, gen, n_gen, flags, keys, cls, slot_key, slot_id)
        else:
            q = axis[i]
            radix = n_gen[q, U[i, q]]
            lvl = gen[q, U[i, q]]
            c = codes_t[q]
            par = ids[a]
            for h in range(n):
                p = par[h]
                flags[h] = p >= 0
                keys[h] = p * radix + lvl[c[h]] if p >= 0 else 0
            m = _rank_bounded_into(keys, n_ids[a] * radix, flags, cls, slot_key, slot_id)
        for c2 in range(m):
            rec[c2] = 0
        for h in range(n):
            if flags[h]:
                rec[cls[h]] += records[h]
        out = ids[s]
        lost = 0
        for h in range(n):
            if flags[h] and rec[cls[h]] >= kmin:
                out[h] = cls[h]
            else:
                out[h] = -1
                lost += records[h]
        small[s] = lost
        n_ids[s] = m
    return _class_sums(L, src, ids, small, counts, weight, codes_t, row_w, w_off, max_small, own)


@nb.njit(cache=True)
def _row_weights(weight, codes_t, levels, w_off, n_w):
    """``class_round``'s ``row_w``: row w_off[q] + j holds weight[q, j, codes[h, q]] of every row h
    (n_w rows; none when n_w is 0)."""
    n = codes_t.shape[1]
    out = np.empty((n_w, n))
    if n_w == 0:
        return out
    for q in range(levels.shape[0]):
        c = codes_t[q]
        for j in range(levels[q]):
            w = weight[q, j]
            r = out[w_off[q] + j]
            for h in range(n):
                r[h] = w[c[h]]
    return out


@nb.njit(cache=True)
def _class_sums(L, src, ids, small, counts, weight, codes_t, row_w, w_off, max_small, own):
    """``class_round``'s bounds from its classifications (rows of ``ids``)."""
    n_boxes, nq = L.shape
    n = own.shape[0]
    bounds = np.empty(n_boxes)
    for i in range(n_boxes):
        if small[src[i]] > max_small:
            bounds[i] = -np.inf
            continue
        # u_L(h) of every row, QID by QID (each row's sum in _class_bounds' order), then the
        # rows with an id summed in row order: _class_bounds' value, bit for bit
        for h in range(n):
            own[h] = 0.0
        for q in range(nq):
            if row_w.shape[0] > 0:  # the weights row by row, laid out per (QID, level)
                wr = row_w[w_off[q] + L[i, q]]
                for h in range(n):
                    own[h] += wr[h]
            else:
                w = weight[q, L[i, q]]
                c = codes_t[q]
                for h in range(n):
                    own[h] += w[c[h]]
        row = ids[src[i]]
        total = 0.0
        for h in range(n):
            # adding +0.0 for a row without an id leaves the sum's bits as they are (it is
            # never -0.0): no branch to mispredict
            v = counts[h] * own[h]
            total += v if row[h] >= 0 else 0.0
        bounds[i] = total
    return bounds


class ClassMasks:
    """The class bound's classifications at U of the boxes a search holds, as rows of one 2-D
    array (``class_round``): ``ids[r]`` the class ids of the rows in classes of at least kmin
    records (-1 for the others), ``n_ids[r]`` their bound, ``small[r]`` the records of the
    others. The search takes and releases rows (a row belongs to one box at a time: the half
    that keeps its parent's U takes over its row); the free rows are ``free[:count[0]]``, a
    stack the box loop kernel (``_box_kernels.tops_split``) also pops and pushes."""

    def __init__(self, n_rows: int, capacity: int = 64) -> None:
        # uninitialized: ``class_round`` writes a row before any box reads it
        self.ids = np.empty((capacity, n_rows), dtype=np.int32)
        self.n_ids = np.empty(capacity, dtype=np.int64)
        self.small = np.empty(capacity, dtype=np.int64)
        self.free = np.arange(capacity - 1, -1, -1, dtype=np.int64)
        self.count = np.array([capacity], dtype=np.int64)

    def reserve(self, n: int) -> None:
        """At least n free rows (the rows double until there are; the new ones are free)."""
        while self.count[0] < n:
            cap = len(self.ids)
            self.ids = np.concatenate([self.ids, np.empty_like(self.ids)])
            self.n_ids = np.concatenate([self.n_ids, np.empty_like(self.n_ids)])
            self.small = np.concatenate([self.small, np.empty_like(self.small)])
            free = np.concatenate([self.free[: self.count[0]], np.arange(2 * cap - 1, cap - 1, -1, dtype=np.int64)])
            self.count[0] = len(free)
            self.free = np.concatenate([free, np.zeros(2 * cap - len(free), dtype=np.int64)])

    def take(self) -> int:
        self.reserve(1)
        self.count[0] -= 1
        return int(self.free[self.count[0]])

    def release(self, r: int) -> None:
        self.free[self.count[0]] = r
        self.count[0] += 1


class BoxBound:
    """B(L, U) for batches of boxes (module docstring); O(rows x partners x nQID) a box with
    partner tables, O(rows x nQID) with the class bound (tables too large for partner tables)."""

    def __init__(self, problem: Problem, *, partners: bool = True) -> None:
        t = problem.table
        # partners=False: no partner tables (the class bound where kmin >= 2, else UB(L)).
        self.tables = partner_tables(problem) if partners else []
        self.kmin = min_class_size(problem)
        # The class bound only where no partner table exists: on small tables the partner bound
        # is never larger (module docstring), so their minimum would only cost time.
        self.by_class = self.kmin >= 2 and not self.tables
        self._gen, _, self._n_gen = t.lookup
        self._codes = np.ascontiguousarray(t.codes, dtype=np.int64)
        self._weight = t.lookup[1]
        self._counts = t.counts.astype(np.float64)
        self._records = t.counts.astype(np.int64)
        self._shifts, self._guard = meet_packing(np.asarray(t.heights, dtype=np.int64))
        self._heights = np.asarray(t.heights, dtype=np.int64)
        self._packed: dict[int, tuple[PartnerTable, PartnerTable, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
        self.use_bitsets = True  # False: the packed test per partner (the tests compare both)
        self._round_work: tuple[np.ndarray, ...] | None = None  # class_round's scratch, made once
        self._codes_t = np.ascontiguousarray(self._codes.T)  # class_round reads the codes QID by QID
        self._row_w = self._w_off = np.zeros(0)  # class_round's weights per row (made with its scratch)
        self._none = PartnerTable(np.zeros(t.n_rows + 1, dtype=np.int64), np.zeros((0, t.n_qids), dtype=np.int64),
                                  np.zeros(0, dtype=np.int64), np.zeros(t.n_rows, dtype=np.int64))

    def _row_bounds(self, L: np.ndarray, U: np.ndarray, p: PartnerTable,
                    parent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        q, packed, wm, woff, bits = self._prepared(p)
        return _row_bounds(L, U, self._codes, self._weight, q.start, q.meet, q.mult, q.need, packed,
                           self._shifts, self._guard, parent, wm, woff, bits)

    def _prepared(self, p: PartnerTable) -> tuple[PartnerTable, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(table in ``wm_order``, its meet vectors packed, their meet weights, its bitsets'
        ``woff`` and ``bits``), made once per table (tests may swap tables)."""
        ready = self._packed.get(id(p))
        if ready is None or ready[0] is not p:
            by_wm = wm_order(p, _meet_weights(self._codes, self._weight, p.start, p.meet, self._heights))
            woff, bits = (partner_bitsets(by_wm[0].start, by_wm[0].meet, self._heights, self._weight.shape[1])
                          if self.use_bitsets else (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint64)))
            ready = (p, by_wm[0], _pack(by_wm[0].meet, self._shifts), by_wm[1], woff, bits)
            self._packed[id(p)] = ready
        return ready[1], ready[2], ready[3], ready[4], ready[5]

    def kernel_args(self) -> tuple[int, tuple[Any, ...]]:
        """(tables, arguments) of the box loop kernel (``_box_kernels.box_rounds``) after its
        ``n_tables``: codes, weights, counts, packing, then two tables as ``_row_bounds`` reads
        them (the first again when there is one). Only with partner tables (not ``by_class``)."""
        tables = [self._prepared(p) for p in self.tables]
        flat = []
        for q, packed, wm, woff, bits in (tables + tables)[:2]:
            flat += [q.start, q.meet, q.mult, q.need, packed, wm, woff, bits]
        return len(tables), (self._codes, self._weight, self._counts, self._shifts, np.int64(self._guard), *flat)

    @property
    def active(self) -> bool:
        """Some row has a partner or class bound (otherwise B(L, U) = UB(L))."""
        return self.by_class or any(p.active for p in self.tables)

    def with_small(self, L: np.ndarray, U: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(bounds, small): ``small[i]`` records every node of box i suppresses (those in classes
        of fewer than kmin records at U[i]; 0 without the class bound). Without partner tables."""
        L = np.ascontiguousarray(np.atleast_2d(L), dtype=np.int64)
        U = np.ascontiguousarray(np.atleast_2d(U), dtype=np.int64)
        if self.by_class:
            return _class_bounds_small(L, U, self._codes, self._gen, self._n_gen, self._weight, self._records,
                                       self.kmin)
        assert not self.tables
        return self.with_states(L, U, None)[0], np.zeros(len(L), dtype=np.int64)

    def new_masks(self) -> ClassMasks:
        """Empty rows for ``round_bounds`` (the class bound only)."""
        assert self.by_class
        return ClassMasks(len(self._codes))

    def round_bounds(self, L: np.ndarray, U: np.ndarray, src: np.ndarray, act: np.ndarray, axis: np.ndarray,
                     masks: ClassMasks, max_small: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(bounds, small) of the boxes [L[i], U[i]]: ``with_small``'s numbers, bit for bit, with
        box i's classification at U in row ``src[i]`` of ``masks``, made here when ``act[i]`` >=
        -1: over every row (-1), or rolled up from row ``act[i]``, a classification at U[i] with
        QID ``axis[i]`` higher (``class_round``); a box whose small exceeds ``max_small`` (a
        suppression limit in records) bounds -inf. The class bound only."""
        rest = (*self.round_args(), np.int64(NO_LIMIT if max_small is None else max_small), self.round_work)
        b = class_round(L, U, src, act, axis, masks.ids, masks.n_ids, masks.small, *rest)
        return b, masks.small[src]

    def round_args(self) -> tuple[Any, ...]:
        """``class_round``'s arguments after ``small``, its ``max_small`` left out: the table's
        arrays and weights per row (made on first use, with its scratch, ``round_work``)."""
        if self._round_work is None:
            n = len(self._codes)
            size = _table_size(n)
            self._round_work = (np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int32),
                                np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int32),
                                np.ones(n, dtype=np.bool_), np.empty(n, dtype=np.int64), np.empty(n))
            # weight[q, j, codes[h, q]] as rows per (QID, level), where they fit in ROW_WEIGHTS_MAX
            levels = self._heights + 1
            n_w = int(levels.sum())
            self._w_off = np.concatenate([[0], np.cumsum(levels)[:-1]]).astype(np.int64)
            self._row_w = _row_weights(self._weight, self._codes_t, levels, self._w_off,
                                       n_w if n_w * n <= ROW_WEIGHTS_MAX else 0)
        return (self._codes, self._codes_t, self._gen, self._n_gen, self._records, self.kmin, self._weight, self._counts,
                self._row_w, self._w_off)

    @property
    def round_work(self) -> tuple[np.ndarray, ...]:
        """``class_round``'s scratch (``round_args`` makes it)."""
        self.round_args()
        assert self._round_work is not None
        return self._round_work

    def __call__(self, L: np.ndarray, U: np.ndarray) -> np.ndarray:
        """(n,) bounds of the boxes [L[i], U[i]]: per row the smallest of the tables' bounds."""
        return self.with_states(L, U, None)[0]

    def with_states(self, L: np.ndarray, U: np.ndarray,
                    parent: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
        """(bounds, row states) of the boxes [L[i], U[i]]; ``parent[t, i]``: the row states of
        partner table t in a box containing box i (``_row_bounds``; None: unknown), which give
        the same bounds with fewer partner scans. The states are (tables, boxes, rows) int8, None
        with the class bound."""
        L = np.ascontiguousarray(np.atleast_2d(L), dtype=np.int64)
        U = np.ascontiguousarray(np.atleast_2d(U), dtype=np.int64)
        if self.by_class:
            return _class_bounds(L, U, self._codes, self._gen, self._n_gen, self._weight,
                                 self._records, self.kmin), None
        tables = self.tables or [self._none]
        if parent is None:
            parent = np.full((len(tables), len(L), len(self._codes)), ROW_SCAN, dtype=np.int8)
        states = np.empty_like(parent)
        per_row, states[0] = self._row_bounds(L, U, tables[0], np.ascontiguousarray(parent[0]))
        for t in range(1, len(tables)):
            rows, states[t] = self._row_bounds(L, U, tables[t], np.ascontiguousarray(parent[t]))
            per_row = np.minimum(per_row, rows)
        # a row-weighted sum without np.dot (no multi-threaded BLAS on these small arrays), the
        # box loop kernel's (numpy's pairwise sum, bit for bit)
        return weighted_sums(per_row, self._counts), states
