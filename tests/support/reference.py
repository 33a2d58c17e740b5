"""Plain-Python twins of the evaluator and of the exact suppression oracle (after stumpy's
``naive.py``): dicts and loops straight from the definitions of docs/design/paper_notes.md §1-3, no
Numba, no NumPy tricks, no use of the lookup arrays of ``EncodedTable``.

Records are numbered by histogram row (engine/core/encoding.py): row h owns records
offsets[h] .. offsets[h+1]-1. A solution here is G (level per QID) and ``keep`` (one 0/1 flag
per record); generalized values are read from the hierarchies' text rows.
"""

from __future__ import annotations

import itertools
import math

T_TOLERANCE = 1e-12  # engine/privacy/t_closeness.py
L_TOLERANCE = 1e-12  # engine/privacy/l_diversity.py


def leaf_count(hierarchy, level, value):
    """|v_g|: leaves of the hierarchy below ``value`` at ``level`` (docs/design/paper_notes.md §1)."""
    n = 0
    for row in hierarchy.rows:
        if row[level] == value:
            n += 1
    return n


def records(table):
    """(row index, leaf strings per QID, SA code) of every record, in record order."""
    out = []
    for h in range(table.n_rows):
        leaves = [table.hierarchies[q].rows[int(table.codes[h][q])][0] for q in range(table.n_qids)]
        for _ in range(int(table.counts[h])):
            out.append((h, leaves, int(table.sa[h])))
    return out


def source_distribution(table):
    """Q: share of each joint SA code over all source records."""
    n_sa = max(len(table.sa_values), 1)
    counts = [0] * n_sa
    total = 0
    for h in range(table.n_rows):
        counts[int(table.sa[h])] += int(table.counts[h])
        total += int(table.counts[h])
    return [c / total for c in counts]


def generalize(table, g, leaves):
    """The generalized QID values of a record under levels ``g``."""
    values = []
    for q in range(table.n_qids):
        hierarchy = table.hierarchies[q]
        row = hierarchy.rows[hierarchy.leaf_code[leaves[q]]]
        values.append(row[int(g[q])])
    return tuple(values)


def classes(table, g, keep):
    """{generalized QID tuple: {SA code: retained records}} over retained records."""
    out = {}
    for r, (_, leaves, sa) in enumerate(records(table)):
        if keep[r]:
            cls = out.setdefault(generalize(table, g, leaves), {})
            cls[sa] = cls.get(sa, 0) + 1
    return out


def transparency(table, g, keep):
    """TD = sum over retained records of sum over QIDs of 1/|v_g| (docs/design/paper_notes.md §1)."""
    total = 0.0
    for r, (_, leaves, _) in enumerate(records(table)):
        if keep[r]:
            values = generalize(table, g, leaves)
            for q in range(table.n_qids):
                total += 1.0 / leaf_count(table.hierarchies[q], int(g[q]), values[q])
    return total


def t_distance(counts, q):
    """Euclidean distance between a class's SA distribution and Q, over every SA value."""
    n = sum(counts.values())
    d2 = 0.0
    for v in range(len(q)):
        d2 += (counts.get(v, 0) / n - q[v]) ** 2
    return math.sqrt(d2)


def entropy(counts):
    n = sum(counts.values())
    h = 0.0
    for c in counts.values():
        if c > 0:
            h -= c / n * math.log(c / n)
    return h


def model_ad(model, class_counts, q):
    """AD of one model over a release given as {class: {SA: n}} (docs/design/paper_notes.md §2): the model's
    own plain-Python twin (``PrivacyModel.reference_ad``)."""
    return model.reference_ad(class_counts, q)


def evaluate(table, models, g, keep):
    """(AD per model, TD, feasible, suppressed) of one solution."""
    cls = classes(table, g, keep)
    q = source_distribution(table)
    ad = [float(model_ad(m, cls, q)) for m in models]
    feasible = all(m.feasible(a) for m, a in zip(models, ad, strict=True))
    suppressed = sum(1 for k in keep if not k)
    return ad, transparency(table, g, keep), feasible, suppressed


def record_class_sizes(table, g, keep):
    """Class size of every record; 0 for suppressed records."""
    recs = records(table)
    size = {}
    for r, (_, leaves, _) in enumerate(recs):
        if keep[r]:
            key = generalize(table, g, leaves)
            size[key] = size.get(key, 0) + 1
    return [size[generalize(table, g, leaves)] if keep[r] else 0 for r, (_, leaves, _) in enumerate(recs)]


def keep_from_retained(table, retained):
    """Per-record flags keeping the first retained[h] records of each row (the layout the
    backends' ``record_class_sizes`` assume)."""
    keep = []
    for h in range(table.n_rows):
        for i in range(int(table.counts[h])):
            keep.append(1 if i < int(retained[h]) else 0)
    return keep


# --- exact suppression by brute force (docs/design/paper_notes.md §3) ----------------------------------


def allocation_feasible(alloc, q_of, q, *, k=1, t=-1.0, l_distinct=1, l_entropy=1.0):
    """Is a class holding ``alloc[i]`` records of SA value ``q_of[i]`` feasible (N > 0)?

    Tolerances as the models': distance <= t, entropy >= log l - 1e-12.
    """
    n = sum(alloc)
    if n < max(k, 1):
        return False
    counts = {}
    for a, v in zip(alloc, q_of, strict=True):
        counts[v] = counts.get(v, 0) + a
    if t >= 0 and t_distance(counts, q) > t:
        return False
    if sum(1 for a in alloc if a > 0) < l_distinct:
        return False
    return not (l_entropy > 1.0 and entropy(counts) < math.log(l_entropy) - L_TOLERANCE)


def best_retention(caps, q_of, q, **constraints):
    """Largest N over all allocations 0 <= n_i <= caps[i] that are feasible (0 if none)."""
    best = 0
    for alloc in itertools.product(*[range(c + 1) for c in caps]):
        n = sum(alloc)
        if n > best and allocation_feasible(alloc, q_of, q, **constraints):
            best = n
    return best


# --- EMD t-closeness's S*(G) by brute force --------------------------------------------------------


def emd_best_retention(caps, q_of, q, distance, *, k=1, t, rank=None):
    """Largest N over all allocations 0 <= n_i <= caps[i] of at least k records whose EMD to q
    (``distance`` "equal" or "ordered" with ``rank`` of each code) is within t (0 if none)."""
    best = 0
    for alloc in itertools.product(*[range(c + 1) for c in caps]):
        n = sum(alloc)
        if n <= best or n < max(k, 1):
            continue
        if emd(alloc, q_of, q, distance, rank) <= t:
            best = n
    return best


def emd(alloc, q_of, q, distance, rank=None):
    """Li et al. 2007's EMD of a class holding ``alloc[i]`` records of code ``q_of[i]``, term by
    term: equal 1/2 sum |p - q|; ordered 1/(m-1) sum_i |sum_{rank <= i} (p - q)|."""
    n = sum(alloc)
    p = [0.0] * len(q)
    for a, v in zip(alloc, q_of, strict=True):
        p[v] += a / n
    if distance == "equal":
        return 0.5 * sum(abs(p[v] - q[v]) for v in range(len(q)))
    by_rank = sorted(range(len(q)), key=lambda v: rank[v])
    cum, total = 0.0, 0.0
    for v in by_rank:
        cum += p[v] - q[v]
        total += abs(cum)
    return total / max(len(q) - 1, 1)


def presence_retention(size, persons, k, dmin, dmax):
    """Twin of engine/kernels/presence.py's oracle term, from the definition: per class, the
    largest r in 0..size with r = 0 or r >= k, and r / persons <= dmax (as the SQL check divides);
    with the verdict whether some r also has r / persons >= dmin (a class left with 0 released
    records has delta 0)."""
    keep, ok = [], []
    for n, p in zip(size, persons, strict=True):
        n, p = int(n), int(p)
        good = [r for r in range(n + 1) if (r == 0 or r >= k) and p > 0 and r / p <= dmax]
        keep.append(max(good) if good else 0)
        ok.append(any(dmin <= r / p for r in good) if p > 0 else False)
    return keep, ok


def leaf_codes(texts, leaves):
    """Each text's leaf code (its index in ``leaves``), None for a text that is no leaf: the plain
    twin of engine/kernels/leaves.py (a dict of the leaves, looked up per text)."""
    index = {leaf: code for code, leaf in enumerate(leaves)}
    return [index.get(t) for t in texts]
