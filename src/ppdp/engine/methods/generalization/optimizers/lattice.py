"""Lattice search with exact suppression (docs/design/paper_notes.md §3): certified optimum TD.

For a fixed G the best S is S*(G) (the oracle), so the search space is the generalization
lattice. Three modes:

``mode = "bound"`` (default): best-first branch and bound over *boxes* of the lattice.
A box [L, U] is every node G with L <= G <= U; its bound (engine/methods/generalization/optimizers/bounds.py,
proved there) is an upper bound on TD(G, S*(G)) for every G in it: a kept record needs
kmin - 1 partners (kmin = max(k, l)) that share its class at G <= U, or under t-closeness a
number of partners with other SA values, and then contributes at most what it would at
max(L, its meet levels with them). The box with the largest bound is split in two along its
widest QID (children's bounds only shrink); a box of one node is evaluated (in batches, with
``Problem.evaluate_optimal``). The result is certified as soon as the best TD found is >= the
largest bound left: every node lies in exactly one box left on the heap or dropped with a
bound <= the best TD. Each box split costs one bound computation (``boxes_bounded`` in the
info); only boxes of one node count as evaluations against the budget. The bound subsumes the
older ones: without partners it is TD(L, nothing suppressed), and a node anonymous with nothing
suppressed bounds its whole box by its own TD (the monotonicity pruning). Tables too large for
the partner tables (see bounds.MAX_PARTNER_ROWS) use the class bound instead when kmin >= 2 and
the lattice has at least CLASS_BOUND_MIN_LATTICE nodes: rows whose class at U has fewer than
kmin records contribute 0, the others u_L (on smaller lattices the node search is faster).
Without either (no minimum class size and no partner table) the box bound is UB(L) and mode
bound runs the node search instead (the same bound, cheaper bookkeeping, classes rolled up from predecessors);
``info["search"]`` says which ran.

With partner tables and no greedy incumbent the rounds of the box search run in Numba
(``_box_kernels.box_rounds``: the same boxes popped in the same order, Python evaluating each
round's leaves); ``_box_search`` is its plain-Python twin and runs otherwise. With infeasible
tops pruned (below) and the class bound, the boxes live in the same array heap
(``_tops_loop``: ``_box_kernels.tops_split`` pops and splits a round's boxes, one
``BoxBound.round_bounds`` call bounds the halves, Python evaluates their new tops,
``tops_push`` pushes the halves kept); ``_tops_round`` is its plain-Python twin.

``mode = "nodes"``: the earlier best-first over nodes by UB(G) = TD with nothing suppressed
(UB only decreases upward: 1/|v_g| shrinks as values generalize); certified as soon as the next
UB is no larger than the best TD found. Kept for comparison (benchmarks/certify.py).

``mode = "exhaustive"`` evaluates every node (certified when the lattice fits the budget).
Certification also needs an exact oracle (Problem.oracle_exact, models/oracle.py).

``greedy_start`` (mode bound; default on with the class bound, off otherwise): before the box
search, one greedy dive of the ``descent`` optimizer from the top (always on to the
predecessor with the best TD; at most a tenth of the budget) gives an incumbent, so boxes below
it are dropped from the start. On mach2019 (k = 5) it finds TD 526,028 within 200 evaluations,
where the box search alone had evaluated one node after 20,000 boxes. (Splitting the QID whose halves
have the smallest larger bound instead of the widest was tried and left out: at 20,000 boxes it
left a larger bound, 943,963 against 757,690 on mach2019, 582,191 against 521,978 on
creditcard.)

``max_boxes`` (mode bound; default max(4 x budget, 10,000)) caps the box bounds computed; a
search stopped by it or by the budget reports the largest bound left (``remaining_upper_bound``).

``suppression_limit`` (ARX's semantics, a fraction of nR in [0, 1], default 1 = no limit): a
node whose S*(G) suppresses more than ``floor(limit * nR)`` records is infeasible and reported
as (G, nothing suppressed). The bounds are unchanged: an exact S*(G) keeps the most records
of every class (all records of a class weigh the same in TD), so it also suppresses the fewest
records; G is feasible within the limit iff S*(G) is, and its TD is then TD(G, S*(G)), which
every bound above bounds. The result is certified optimal over every (G, S) that suppresses at
most the limit.

**Infeasible tops** (a limit below nR, an exact oracle, union-closed models; proof in
docs/design/lattice_limit.md): the records S*(G) suppresses never increase up the lattice (the
kept set of S*(G) is a union of feasible classes at every G' >= G, and the exact oracle keeps at
least as many in each class there), so a box whose top U suppresses more than the limit holds no
node within it and is dropped (ARX's predictive tagging, box-wise). Each round the box search
bounds the halves (the class bound also counts the records in classes below kmin at U, which
every node of the box suppresses: over the limit, the box goes without an oracle call), then
evaluates the new tops of the halves whose bound beats the incumbent (a feasible top is an
ordinary candidate and raises the incumbent; one over the limit is only counted) and keeps the
halves whose top is within the limit. There the partner tables do not pay for themselves: the class bound (UB(L) when kmin
< 2) certifies with about as many boxes, without their O(rows^2) build. ``info["search"]`` then
ends in "infeasible tops pruned". At a zero limit the same holds for every union-closed model,
exact oracle or not: a node is within the limit iff it is feasible with nothing suppressed, and a
union of feasible classes is feasible (this replaced Flash's tagging there, which checked 33-102
nodes where the pruned box search checks 9-21 on the drawn family's EMD rows).

Under EMD t-closeness (equal, ordered; exact oracle) with kmin >= 3, no limit and a table small
enough for partner tables, the search also takes the class bound's box search instead of them
(docs/design/lattice_limit.md).
"""

from __future__ import annotations

import heapq
import itertools
from typing import Any

import numpy as np

from ppdp.engine.kernels import kinds
from ppdp.engine.methods.generalization.evaluators import Evaluation, finish
from ppdp.engine.methods.generalization.optimizers import (
    OPTIMIZERS,
    OptimizerResult,
    ProgressFn,
    Tracker,
    checks_params,
    takes_objectives,
)
from ppdp.engine.methods.generalization.optimizers import bounds as bounds_module
from ppdp.engine.methods.generalization.optimizers._box_kernels import (
    CAPPED,
    GROW,
    HEAP_EMPTY,
    LEAVES,
    LOG_FULL,
    TOP_AT_BEST,
    box_rounds,
    tops_push,
    tops_rounds,
    tops_split,
)
from ppdp.engine.methods.generalization.optimizers.bounds import (
    BoxBound,
    ClassMasks,
    min_class_size,
)
from ppdp.engine.methods.generalization.optimizers.descent import greedy_incumbent
from ppdp.engine.methods.generalization.optimizers.lattice_nodes import (
    all_nodes,
    check_suppression_limit,
    evaluate_nodes,
    lattice_size,
    max_suppressed_records,
)
from ppdp.engine.methods.generalization.problem import Problem
from ppdp.errors import SpecError

# The node helpers live in lattice_nodes (descent needs them without this module); they are
# still importable from here.
__all__ = ["all_nodes", "evaluate_nodes", "lattice_search", "lattice_size", "max_suppressed_records"]


@checks_params("lattice")
def _lattice_params(params: dict[str, Any]) -> tuple[str, int, Any, str, Any, Any]:
    """(mode, batch, suppression_limit, executor, max_boxes, greedy_start) from ``params``
    (consumed), or SpecError; needs no problem, so a release checks it before any write."""
    mode = params.pop("mode", "bound")
    batch = params.pop("batch", 64)
    limit = params.pop("suppression_limit", 1.0)
    executor = params.pop("executor", "local")
    max_boxes = params.pop("max_boxes", None)
    greedy = params.pop("greedy_start", None)  # default: on for the class bound (huge tables)
    if params:
        raise SpecError(f"lattice optimizer: unknown parameter(s) {sorted(params)}. "
                        "Known: mode, batch, suppression_limit, max_boxes, greedy_start, executor.")
    if executor not in ("local", "ray"):
        raise SpecError(f"lattice optimizer: executor must be 'local' or 'ray', not {executor!r}.")
    check_suppression_limit(limit, "lattice")
    if mode not in MODES:
        raise SpecError(f"lattice optimizer: mode must be one of {', '.join(map(repr, MODES))}, not {mode!r}.")
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise SpecError(f"lattice optimizer: batch must be a positive number of nodes, got {batch!r}.")
    return mode, batch, limit, executor, max_boxes, greedy


takes_objectives("lattice", "bounds")


@OPTIMIZERS.register("lattice")
def lattice_search(problem: Problem, *, budget: int, seed: int = 0, params: dict[str, Any],
                   progress: ProgressFn | None = None) -> OptimizerResult:
    """Certified lattice search with S = S*(G): box branch and bound, node best-first or
    exhaustive; see the module docstring."""
    mode, batch, limit, executor, max_boxes, greedy = _lattice_params(params)
    max_suppressed = max_suppressed_records(problem, limit, "lattice")
    heights = problem.heights
    size = lattice_size(heights)
    tracker = Tracker(problem, budget, name="lattice", progress=progress)
    exact = problem.oracle_exact
    info: dict[str, Any] = {"mode": mode, "lattice_size": size, "oracle_exact": exact,
                            "suppression_limit": float(limit), "max_suppressed": max_suppressed}

    def evaluate(G: np.ndarray):
        return evaluate_nodes(problem, G, max_suppressed)

    if executor == "ray":  # the same numbers from Ray workers holding the histogram (ray_executor.py)
        from ppdp.engine.methods.generalization.optimizers.ray_executor import RayNodeEvaluator
        evaluate = RayNodeEvaluator(problem, max_suppressed)  # noqa: F811 - its actors stop with it
    info["executor"] = executor

    if mode == "exhaustive":
        nodes = all_nodes(heights)[: budget]
        for i in range(0, len(nodes), batch):
            G = nodes[i : i + batch]
            retained, ev = evaluate(G)
            tracker.offer(G, retained, ev)
        info["nodes_evaluated"] = tracker.used
        return tracker.result(certified=len(nodes) == size, info=info)
    if mode == "nodes":
        certified, remaining = _node_search(problem, tracker, evaluate, batch)
        info.update(nodes_evaluated=tracker.used, remaining_upper_bound=remaining)
        return tracker.result(certified=certified, info=info)
    # With a limit, feasibility within it is monotone up the lattice when every model is
    # union-closed and, for a limit above 0, the oracle is exact: a box whose top is over the
    # limit holds no feasible node, and the search prunes by its tops (module docstring). At a
    # zero limit no oracle is read (a node is within it iff feasible with nothing suppressed).
    # There the partner tables do not pay for themselves: the class bound (or UB(L)) with
    # pruned tops certifies with about as many boxes, without the O(rows^2) tables.
    union_closed = all(m.union_closed for m in problem.models)
    tops = union_closed and (max_suppressed == 0 or (max_suppressed < problem.n_records and exact))
    # Under EMD t-closeness with a minimum class size (k >= 2) the class bound's box search
    # (greedy start) also certifies sooner than the partner tables without a limit: the
    # tables' O(rows^2) build and scans cost more than their tighter bound saves (on the drawn
    # family's five unlimited EMD rows, 1.9-3.2 times less search time, the same TD).
    # Only where the tables would be built (larger tables keep the class bound's node search,
    # faster there: full adult, equal EMD t = 0.2 + k = 2, 1,740 ms against 4,538 for its box
    # search), and from kmin = 3 (at k = 2 the class bound drops only singleton classes: on
    # creditcard-q10-1000, equal EMD t = 0.2 + k = 2, the partner tables took 900-960 ms
    # against 1,210-1,320, 13 nodes against 432).
    o = problem.oracle_params
    emd_classes = (exact and o.t >= 0 and o.t_kind in (kinds.EQUAL_EMD, kinds.ORDERED_EMD)
                   and min_class_size(problem) >= 3 and problem.table.n_rows <= bounds_module.MAX_PARTNER_ROWS)
    bound = BoxBound(problem, partners=not (tops or emd_classes))
    # The class bound classifies the table at every box's U, where the node search rolls each
    # node up from a predecessor: below CLASS_BOUND_MIN_LATTICE nodes the node search certifies
    # sooner (about twice as fast on benchmarks/vs_arx.py's adult t-closeness and cup rows).
    if not (tops or emd_classes) and (not bound.active or (bound.by_class and size < CLASS_BOUND_MIN_LATTICE)):
        certified, remaining = _node_search(problem, tracker, evaluate, batch)
        info.update(search="nodes", nodes_evaluated=tracker.used, remaining_upper_bound=remaining)
        return tracker.result(certified=certified, info=info)
    # Box bounds cost about as much as evaluations: cap them too (at least one box is split).
    boxes_cap = max(4 * int(budget), 10_000) if max_boxes is None else max(int(max_boxes), 1)
    if tops:
        # the evaluated tops give incumbents; the greedy dive only adds evaluations here
        greedy = False if greedy is None else bool(greedy)
        certified, remaining, boxes = _box_search(problem, bound, tracker, evaluate, batch, boxes_cap, greedy=greedy,
                                                  prune_tops=True, max_suppressed=max_suppressed,
                                                  local=executor == "local")
        info.update(search="boxes by class, infeasible tops pruned" if bound.by_class else "boxes, infeasible tops pruned",
                    nodes_evaluated=tracker.used, boxes_bounded=boxes, remaining_upper_bound=remaining)
        return tracker.result(certified=certified, info=info)
    greedy = bound.by_class if greedy is None else bool(greedy)
    # The loop in Numba where it can run (partner tables, no greedy incumbent's evaluated nodes
    # to skip); the Python loop is its twin (tests/oracles/test_lattice_bounds.py).
    search = _box_search if bound.by_class or greedy or not BOX_LOOP_KERNEL else _box_search_kernel
    certified, remaining, boxes = search(problem, bound, tracker, evaluate, batch, boxes_cap, greedy=greedy)
    info.update(search="boxes by class" if bound.by_class else "boxes", nodes_evaluated=tracker.used, boxes_bounded=boxes, remaining_upper_bound=remaining)
    return tracker.result(certified=certified, info=info)


MODES = ("bound", "nodes", "exhaustive")
BOX_LOOP_KERNEL = True  # False: the Python loop (the kernel's twin) everywhere
TOPS_LOOP_KERNEL = True  # False: the pruned-tops rounds in Python (_tops_round, the twin of _tops_loop)
FUSED_TOPS = True  # False: _tops_loop, Python evaluating the tops, also under a zero limit (_tops_fused's twin)
FUSED_LOG = 256  # tops _tops_fused's kernel evaluates before Python replays them (at least a round's)
SPARE_SLOTS = 1024  # box slots of the kernel loop beyond one round's (they double when short)
CLASS_BOUND_MIN_LATTICE = 1_000_000  # smaller lattices without partner tables: the node search


def _best_feasible(ev, best_td: float) -> float:
    feas_td = ev.td[ev.feasible]
    return max(best_td, float(feas_td.max())) if feas_td.size else best_td


def _box_search(problem: Problem, bound: BoxBound, tracker: Tracker, evaluate, batch: int,
                max_boxes: int, greedy: bool = False, prune_tops: bool = False, max_suppressed: int = 0,
                local: bool = False) -> tuple[bool, float | None, int]:
    """Best-first branch and bound over boxes [L, U] (module docstring, engine/methods/generalization/optimizers/bounds.py).

    Returns (no box left above the best TD, largest bound left or None, boxes bounded). Each
    round pops up to ``batch`` boxes above the best TD, bounds all their halves in one call and
    evaluates all popped one-node boxes in one call: both batches can be spread over workers.
    """
    heights = np.asarray(problem.heights, dtype=np.int64)
    L0 = np.zeros((1, len(heights)), dtype=np.int64)
    # prune_tops: each top evaluated, within the limit or not; a box is kept only when its top
    # is within the limit (the tops of a round are evaluated in one batch, after the bounds).
    status: dict[tuple[int, ...], bool] = {}
    tops_best = -np.inf

    def check_tops(highs: list[tuple[int, ...]]) -> list[bool]:
        nonlocal tops_best
        todo = list(dict.fromkeys(U for U in highs if U not in status))
        if todo:
            G = np.array(todo, dtype=np.int64)
            if local:
                # S*(G) in one pass; a node over the limit is only counted: the lattice's top,
                # feasible (checked first), is already offered, so it cannot be the best.
                if max_suppressed == 0:  # within the limit iff feasible with nothing suppressed
                    retained, ev = evaluate(G)
                    ok = np.asarray(ev.feasible, dtype=bool)
                else:
                    retained, ev = problem.evaluate_optimal(G)
                    ok = (problem.n_records - retained.sum(axis=1) <= max_suppressed) & np.asarray(ev.feasible, dtype=bool)
                tops_best = max(tops_best, _offer_runs(tracker, G, retained, ev, ok))
            else:
                retained, ev = evaluate(G)
                tracker.offer(G, retained, ev)
                tops_best = _best_feasible(ev, tops_best)
                ok = np.asarray(ev.feasible, dtype=bool)
            for key, good in zip(todo, ok.tolist(), strict=True):
                status[key] = bool(good)
        return [status[U] for U in highs]

    # prune_tops with the class bound: the classifications at U in rows of one array
    rows = bound.new_masks() if prune_tops and bound.by_class else None
    if prune_tops:
        top = heights[None, :]
        retained, ev = evaluate(top)  # the whole lattice's top, as every search reports it
        tracker.offer(top, retained, ev)
        status[tuple(heights.tolist())] = bool(ev.feasible[0])
        if not ev.feasible[0]:
            return True, None, 0  # the top suppresses more than the limit: no node can meet it
        tops_best = float(ev.td[0])
    root_bound, root_states = bound.with_states(L0, heights[None, :], None)
    root = float(root_bound[0])
    boxes = 1
    # Each box carries its row states (bounds.ROW_NONE..): its halves skip the partner scans of
    # rows the states settle, with the same bounds (bounds._row_bounds). A state, not a bound,
    # decides nothing here: the order of boxes and every value are those of the full scan.
    # (prune_tops: corners as tuples, _tops_round)
    heap: list[tuple[float, int, Any, Any, Any]] = [
        (-root, 0, tuple(L0[0].tolist()), tuple(heights.tolist()), None) if prune_tops else
        (-root, 0, L0[0], heights.copy(), None if root_states is None else root_states[:, 0])]
    order = 1  # FIFO among equal bounds, so runs are reproducible
    # at most a tenth of the budget for the incumbent
    best_td, evaluated = (greedy_incumbent(tracker, evaluate, heights, tracker.used + tracker.remaining // 10)
                          if greedy else (-np.inf, set()))
    if heights.tobytes() in evaluated and not heights.any():  # a one-node lattice, already evaluated
        heap = []
    best_td = max(best_td, tops_best)
    if prune_tops and not heights.any():  # a one-node lattice, its top evaluated
        heap = []
    if heap and rows is not None and TOPS_LOOP_KERNEL:
        fused = problem.fused_evaluation() if FUSED_TOPS and local and max_suppressed == 0 else None
        if fused is not None:  # the in-process evaluate_nodes, nothing suppressed: one kernel
            return _tops_fused(-root, heights, bound, rows, problem, tracker, fused, tops_best, batch, best_td, boxes,
                               max_boxes)
        return _tops_loop(-root, heights, bound, rows, tracker, check_tops, lambda: tops_best, batch, best_td, boxes,
                          max_boxes, max_suppressed)
    while heap:
        if -heap[0][0] <= best_td:
            return True, -heap[0][0], boxes
        if tracker.exhausted or boxes >= max_boxes:
            if tracker.used == 0:  # out of boxes before any evaluation: report the best box's bottom
                G = np.asarray(heap[0][2], dtype=np.int64)[None, :]
                tracker.offer(G, *evaluate(G))
            return False, -heap[0][0], boxes
        if prune_tops:
            best_td, order, boxes = _tops_round(heap, bound, rows, check_tops, lambda: tops_best, batch, best_td,
                                                order, boxes, max_suppressed)
            continue
        leaves: list[np.ndarray] = []
        lows: list[np.ndarray] = []
        highs: list[np.ndarray] = []
        parents: list[np.ndarray | None] = []
        while (heap and -heap[0][0] > best_td and len(leaves) < min(batch, tracker.remaining)
               and len(lows) < 2 * batch):
            _, _, L, U, states = heapq.heappop(heap)
            if np.array_equal(L, U):
                leaves.append(L)
                continue
            q = int(np.argmax(U - L))  # the widest QID: halves its range
            mid = (L[q] + U[q]) // 2
            U1 = U.copy()
            U1[q] = mid
            L2 = L.copy()
            L2[q] = mid + 1
            lows += [L, L2]
            highs += [U1, U]
            parents += [states, states]
        if lows:
            known = [s for s in parents if s is not None]  # all or none (the class bound keeps none)
            parent = np.stack(known, axis=1) if len(known) == len(parents) else None
            b, child_states = bound.with_states(np.stack(lows), np.stack(highs), parent)
            boxes += len(lows)
            for i, (value, L, U) in enumerate(zip(b.tolist(), lows, highs, strict=True)):
                # A box at or below the best TD cannot improve it; nor can a node already evaluated.
                if value > best_td and not (np.array_equal(L, U) and L.tobytes() in evaluated):
                    heapq.heappush(heap, (-value, order, L, U, None if child_states is None else child_states[:, i]))
                    order += 1
        if leaves:
            G = np.stack(leaves)
            retained, ev = evaluate(G)
            tracker.offer(G, retained, ev)
            best_td = _best_feasible(ev, best_td)
    return True, None, boxes


def _tops_round(heap: list, bound: BoxBound, rows: ClassMasks | None, check_tops, tops_best, batch: int,
                best_td: float, order: int, boxes: int, max_suppressed: int) -> tuple[float, int, int]:
    """One round of ``_box_search`` with infeasible tops pruned; returns (best TD, next push
    order, boxes bounded). No box of one node is ever on the heap here (a half is pushed only
    when wider), so the round pops up to ``batch`` boxes above the best TD and splits them all,
    each along its widest QID (the first one of the widest, as ``argmax``). Bound first
    (the class bound also counts the records every node of a box suppresses), then evaluate the
    new tops of the halves left (``check_tops``; ``tops_best()``: the best TD among the tops),
    then keep the halves whose top is within the limit."""
    # The boxes' corners are tuples here: a round splits a few boxes of a few QIDs, where
    # Python's ints cost less than numpy's calls on small arrays.
    lows: list[tuple[int, ...]] = []
    highs: list[tuple[int, ...]] = []
    axes: list[int] = []
    parents: list[Any] = []
    while heap and -heap[0][0] > best_td and len(parents) < batch:
        _, _, L, U, parent = heapq.heappop(heap)
        width = [u - lo for lo, u in zip(L, U, strict=True)]
        q = width.index(max(width))  # the first widest QID, as argmax
        mid = (L[q] + U[q]) // 2
        lows += [L, L[:q] + (mid + 1,) + L[q + 1:]]
        highs += [U[:q] + (mid,) + U[q + 1:], U]
        axes += [q, q]
        parents.append(parent)
    corners = np.array(lows + highs, dtype=np.int64)  # one conversion: lows, then highs
    lo_arr, hi_arr = corners[: len(lows)], corners[len(lows) :]
    masks: list[Any]
    if rows is not None:
        # Each half's classification at U in a row of ``rows``: the half [L2, U] takes over its
        # parent's row, the half [L, U1] gets a new one, rolled up from its parent's (over the
        # rows in classes of kmin records there: bounds.class_round), or over all at the root.
        masks = []
        act = []
        for parent in parents:
            if parent is None:
                masks += [rows.take(), rows.take()]
                act += [-1, -1]
            else:
                masks += [rows.take(), parent]
                act += [parent, -2]
        src, act_arr, axis = np.array([masks, act, axes], dtype=np.int64)
        b, small = bound.round_bounds(lo_arr, hi_arr, src, act_arr, axis, rows, max_suppressed)
    else:
        b, small = bound.with_small(lo_arr, hi_arr)
        masks = [None] * len(lows)
    boxes += len(lows)
    values = b.tolist()
    alive = [i for i, (value, lost) in enumerate(zip(values, small.tolist(), strict=True))
             if value > best_td and lost <= max_suppressed]
    keep = check_tops([highs[i] for i in alive])
    best_td = max(best_td, tops_best())
    held = set()
    for i, ok in zip(alive, keep, strict=True):
        # a box of one node is its top: evaluated, not kept
        if ok and values[i] > best_td and lows[i] != highs[i]:
            heapq.heappush(heap, (-values[i], order, lows[i], highs[i], masks[i]))
            order += 1
            held.add(masks[i])
    if rows is not None:  # the rows of the halves dropped are free again
        for row in set(masks) - held:
            rows.release(row)
    return best_td, order, boxes


def _tops_loop(root_key: float, heights: np.ndarray, bound: BoxBound, rows: ClassMasks, tracker: Tracker, check_tops,
               tops_best, batch: int, best_td: float, boxes: int, max_boxes: int,
               max_suppressed: int) -> tuple[bool, float | None, int]:
    """``_box_search``'s loop with infeasible tops pruned and the class bound, its boxes in the
    arrays of ``_box_kernels.tops_split`` / ``tops_push`` (``box_rounds``' heap) instead of a
    heapq of tuples: the same boxes popped in the same order, bounded, checked and pushed as
    ``_tops_round`` (its twin) does, so the same tops evaluated in the same batches. Python
    bounds the halves (one ``round_bounds`` call) and evaluates their tops between the two."""
    nq = len(heights)
    key, order, slot, slot_L, slot_U, slot_row, free, counters = _tops_slots(root_key, heights, batch)
    lows = np.empty((2 * batch, nq), dtype=np.int64)
    highs = np.empty((2 * batch, nq), dtype=np.int64)
    src, act, axis = (np.empty(2 * batch, dtype=np.int64) for _ in range(3))
    popped = np.empty(batch, dtype=np.int64)
    while True:
        if counters[0] == 0:
            return True, None, boxes
        if -key[0] <= best_td:
            return True, -float(key[0]), boxes
        if tracker.exhausted or boxes >= max_boxes:  # (the lattice's top is evaluated: never used == 0)
            return False, -float(key[0]), boxes
        if counters[1] < 2 * batch:  # double the slots; the new ones are free
            key, order, slot, slot_L, slot_U, slot_row, free = _grown_slots(key, order, slot, slot_L, slot_U,
                                                                            slot_row, free, counters)
        rows.reserve(2 * min(batch, int(counters[0])))  # a row for each half at most
        n_pop = tops_split(key, order, slot, slot_L, slot_U, slot_row, counters, float(best_td), batch, rows.free,
                           rows.count, lows, highs, src, act, axis, popped)
        m = 2 * n_pop
        b, small = bound.round_bounds(lows[:m], highs[:m], src[:m], act[:m], axis[:m], rows, max_suppressed)
        boxes += m
        alive = np.flatnonzero((b > best_td) & (small <= max_suppressed))
        keep = check_tops([tuple(r) for r in highs[alive].tolist()])
        best_td = max(best_td, tops_best())
        tops_push(key, order, slot, slot_L, slot_U, slot_row, free, counters, lows, highs, src, b, m, alive,
                  np.array(keep, dtype=np.bool_), float(best_td), popped, n_pop, rows.free, rows.count)


def _offer_runs(tracker: Tracker, G: np.ndarray, retained: np.ndarray, ev: Evaluation, ok: np.ndarray) -> float:
    """Offer evaluated nodes in order, as the Ray path offers them: each run of nodes within the
    limit (``ok``) in one offer, each run of others counted (the lattice's top, feasible and
    offered first, is better than any of them). Returns the largest TD offered (-inf: none)."""
    best = -np.inf
    start = 0
    for good, run in itertools.groupby(np.asarray(ok, dtype=bool).tolist()):
        end = start + len(list(run))
        if good:
            part = slice(start, end)
            tracker.offer(G[part], retained[part], Evaluation(ev.ad[part], ev.td[part], ev.feasible[part],
                                                              ev.violation[part], ev.suppressed[part]))
            best = max(best, float(ev.td[part].max()))
        else:
            tracker.count(end - start)
        start = end
    return best


def _tops_slots(root_key: float, heights: np.ndarray, batch: int) -> tuple[np.ndarray, ...]:
    """The array heap of ``_tops_loop`` and ``_tops_fused`` holding the root box alone: (key,
    order, slot, slot_L, slot_U, slot_row, free, counters = [heap size, free slots, next push
    order])."""
    nq = len(heights)
    capacity = 2 * batch + 1 + SPARE_SLOTS
    key = np.empty(capacity)
    order = np.empty(capacity, dtype=np.int64)
    slot = np.empty(capacity, dtype=np.int64)
    slot_L = np.empty((capacity, nq), dtype=np.int64)
    slot_U = np.empty((capacity, nq), dtype=np.int64)
    slot_row = np.empty(capacity, dtype=np.int64)
    free = np.arange(capacity - 1, -1, -1, dtype=np.int64)
    root = int(free[capacity - 1])  # the root box, classified nowhere yet (row -1)
    slot_L[root], slot_U[root], slot_row[root] = 0, heights, -1
    key[0], order[0], slot[0] = root_key, 0, root
    counters = np.array([1, capacity - 1, 1], dtype=np.int64)
    return key, order, slot, slot_L, slot_U, slot_row, free, counters


def _grown_slots(key: np.ndarray, order: np.ndarray, slot: np.ndarray, slot_L: np.ndarray, slot_U: np.ndarray,
                 slot_row: np.ndarray, free: np.ndarray, counters: np.ndarray) -> tuple[np.ndarray, ...]:
    """The heap's arrays with twice the slots, the new ones free (``counters[1]`` updated)."""
    capacity = len(key)
    n_free = int(counters[1])
    key, order, slot, slot_row = (np.concatenate([a, np.empty_like(a)]) for a in (key, order, slot, slot_row))
    slot_L, slot_U = (np.concatenate([a, np.empty_like(a)]) for a in (slot_L, slot_U))
    free = np.concatenate([free[:n_free], np.arange(2 * capacity - 1, capacity - 1, -1, dtype=np.int64),
                           np.empty(capacity - n_free, dtype=np.int64)])
    counters[1] = n_free + capacity
    return key, order, slot, slot_L, slot_U, slot_row, free


def _tops_fused(root_key: float, heights: np.ndarray, bound: BoxBound, rows: ClassMasks, problem: Problem,
                tracker: Tracker, fused: tuple, tops_best: float, batch: int, best_td: float, boxes: int,
                max_boxes: int) -> tuple[bool, float | None, int]:
    """``_tops_loop`` under a zero suppression limit with the in-process evaluator, its rounds
    and their tops' evaluations in one kernel (``_box_kernels.tops_rounds``); ``fused`` is
    ``Problem.fused_evaluation()``. Python grows the arrays and replays the kernel's log of
    evaluated tops to the tracker as ``_box_search``'s ``check_tops`` offers them (each run of
    nodes within the limit offered, each run of others counted), with the evaluation
    ``Problem.evaluate`` gives (``finish``); a feasibility that differs from the kernel's raises."""
    eval_args, ops, at = fused
    key, order, slot, slot_L, slot_U, slot_row, free, counters = _tops_slots(root_key, heights, batch)
    nq = len(heights)
    lows = np.empty((2 * batch, nq), dtype=np.int64)
    highs = np.empty((2 * batch, nq), dtype=np.int64)
    src, act, axis = (np.empty(2 * batch, dtype=np.int64) for _ in range(3))
    popped = np.empty(batch, dtype=np.int64)
    n_log = max(2 * batch, FUSED_LOG)
    log_G = np.empty((n_log, nq), dtype=np.int64)
    log_ad = np.empty((n_log, len(ops)))
    log_td = np.empty(n_log)
    log_sup = np.empty(n_log, dtype=np.int64)
    log_ok = np.empty(n_log, dtype=np.bool_)
    state_f = np.array([best_td, tops_best])
    bound_args = bound.round_args()
    counts = problem.table.counts
    while True:
        state_i = np.array([boxes, tracker.used, 0], dtype=np.int64)
        status = tops_rounds(key, order, slot, slot_L, slot_U, slot_row, free, counters, rows.ids, rows.n_ids,
                             rows.small, rows.free, rows.count, lows, highs, src, act, axis, popped, batch, max_boxes,
                             tracker.budget, state_f, state_i, bound_args, bound.round_work, eval_args, ops, at, log_G,
                             log_ad, log_td, log_sup, log_ok)
        boxes = int(state_i[0])
        n = int(state_i[2])
        if n:
            # copies: the tracker keeps rows of these, and the kernel reuses its log
            ev = finish(problem.models, log_ad[:n].copy(), log_td[:n].copy(), log_sup[:n].copy())
            if not np.array_equal(ev.feasible, log_ok[:n]):
                raise RuntimeError("the fused lattice search and the models disagree on a node's feasibility")
            problem.evaluations += n
            G = log_G[:n].copy()
            _offer_runs(tracker, G, np.broadcast_to(counts, (n, len(counts))), ev, log_ok[:n])
        if status == HEAP_EMPTY:
            return True, None, boxes
        if status == TOP_AT_BEST:
            return True, -float(key[0]), boxes
        if status == CAPPED:
            return False, -float(key[0]), boxes
        if status == GROW:
            if counters[1] < 2 * batch:
                key, order, slot, slot_L, slot_U, slot_row, free = _grown_slots(key, order, slot, slot_L, slot_U,
                                                                                slot_row, free, counters)
            rows.reserve(2 * min(batch, int(counters[0])))
        else:
            assert status == LOG_FULL, status


def _box_search_kernel(problem: Problem, bound: BoxBound, tracker: Tracker, evaluate, batch: int,
                       max_boxes: int, greedy: bool = False) -> tuple[bool, float | None, int]:
    """``_box_search`` with its rounds in ``_box_kernels.box_rounds`` (partner tables only, no
    greedy incumbent): the same boxes popped in the same order, the same leaves evaluated in the
    same batches, the same answer. Python evaluates each round's leaves and grows the slots."""
    assert not greedy and not bound.by_class
    heights = np.asarray(problem.heights, dtype=np.int64)
    nq = len(heights)
    L0 = np.zeros((1, nq), dtype=np.int64)
    root_bound, root_states = bound.with_states(L0, heights[None, :], None)
    assert root_states is not None
    n_tables, args = bound.kernel_args()
    n_rows = root_states.shape[2]
    capacity = 2 * batch + 1 + SPARE_SLOTS  # the root and one round's halves, and room to grow
    key = np.empty(capacity)
    order = np.empty(capacity, dtype=np.int64)
    slot = np.empty(capacity, dtype=np.int64)
    slot_L = np.empty((capacity, nq), dtype=np.int64)
    slot_U = np.empty((capacity, nq), dtype=np.int64)
    slot_states = np.empty((capacity, n_tables, n_rows), dtype=np.int8)
    free = np.arange(capacity - 1, -1, -1, dtype=np.int64)
    # the root in the last free slot: [heap size, free slots, boxes bounded, next push order]
    root = int(free[capacity - 1])
    slot_L[root], slot_U[root], slot_states[root] = L0[0], heights, root_states[:, 0]
    key[0], order[0], slot[0] = -float(root_bound[0]), 0, root
    counters = np.array([1, capacity - 1, 1, 1], dtype=np.int64)
    leaves = np.empty((batch, nq), dtype=np.int64)
    best_td = -np.inf
    while True:
        answer, n_leaves = box_rounds(key, order, slot, slot_L, slot_U, slot_states, free, counters, float(best_td),
                                      batch, tracker.remaining, max_boxes, leaves, n_tables, *args)
        boxes = int(counters[2])
        if answer == LEAVES:
            G = leaves[:n_leaves].copy()
            retained, ev = evaluate(G)
            tracker.offer(G, retained, ev)
            best_td = _best_feasible(ev, best_td)
        elif answer == GROW:  # double the slots; the new ones are free
            n_free = int(counters[1])
            key, order, slot = (np.concatenate([a, np.empty_like(a)]) for a in (key, order, slot))
            slot_L, slot_U, slot_states = (np.concatenate([a, np.empty_like(a)]) for a in (slot_L, slot_U, slot_states))
            free = np.concatenate([free[:n_free], np.arange(2 * capacity - 1, capacity - 1, -1, dtype=np.int64),
                                   np.empty(capacity - n_free, dtype=np.int64)])
            counters[1] = n_free + capacity
            capacity *= 2
        elif answer == HEAP_EMPTY:
            return True, None, boxes
        elif answer == TOP_AT_BEST:
            return True, -float(key[0]), boxes
        else:
            assert answer == CAPPED
            if tracker.used == 0:  # out of boxes before any evaluation: report the best box's bottom
                G = slot_L[slot[0]][None, :].copy()
                tracker.offer(G, *evaluate(G))
            return False, -float(key[0]), boxes


def _node_search(problem: Problem, tracker: Tracker, evaluate, batch: int) -> tuple[bool, float | None]:
    """Best-first over nodes by UB(G) (mode "nodes"); (certified, largest UB left or None)."""
    heights = problem.heights
    bottom = tuple([0] * len(heights))
    heap: list[tuple[float, tuple[int, ...]]] = [(-problem.td_upper_bound(np.array(bottom)), bottom)]
    seen = {bottom}
    best_td = -np.inf
    while True:
        if not heap:
            return True, None
        if tracker.exhausted:
            return False, -heap[0][0]
        ub = -heap[0][0]
        if ub <= best_td:
            return True, ub
        # Pop a batch of nodes in UB order (all still above best_td) to amortize the call.
        nodes: list[tuple[int, ...]] = []
        while heap and len(nodes) < min(batch, tracker.remaining) and -heap[0][0] > best_td:
            _, node = heapq.heappop(heap)
            nodes.append(node)
            for q in range(len(node)):
                if node[q] < heights[q]:
                    nxt = node[:q] + (node[q] + 1,) + node[q + 1 :]
                    if nxt not in seen:
                        seen.add(nxt)
                        heapq.heappush(heap, (-problem.td_upper_bound(np.array(nxt)), nxt))
        G = np.array(nodes, dtype=np.int64)
        retained, ev = evaluate(G)
        tracker.offer(G, retained, ev)
        best_td = _best_feasible(ev, best_td)
