"""The run record's figures describe the version that was published.

The release method measures its candidate (the optimizer's TD, class sizes, suppressed count).
When the history stage then holds records back (inserts withheld, deletions and changes delayed:
stages/history.py), the published version differs from that candidate, and the candidate's
figures would describe a table nobody can read: a version identical to v1 got another TD, and
released + suppressed no longer added up to the source's rows. So the figures are measured again
on the version table, and the held-back counts stand beside them:

    released - deletions delayed + suppressed + inserts withheld = source rows

(a delayed deletion is a published row whose record left the source; a delayed change keeps the
record's previous row, one for one). The candidate's own figures stay under ``candidate``.
TD is docs/design/paper_notes.md §1's: sum over released rows and QIDs of 1/|v_g|, |v_g| the number of leaves
under the published value at the release's level; query precision = 100·TD/(nR·nQID) with nR
the source's rows, as for the candidate. The workload error is the candidate's only (it would
need the published rows mapped back to the source histogram).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ppdp.connectors.base import Connector
from ppdp.engine.core.hierarchy import Hierarchy
from ppdp.sql import figures as F

CANDIDATE_FIGURES = ("td", "query_precision", "suppressed", "workload_error", "class_sizes", "released_records")


def held_back_total(held_back: dict[str, int]) -> int:
    return sum(int(held_back.get(k, 0)) for k in ("inserts_withheld", "deletes_delayed", "changes_delayed"))


def published_figures(con: Connector, table: str, qids: list[str], hierarchies: list[Hierarchy], metrics: dict[str, Any],
                      levels: dict[str, int] | None, held_back: dict[str, int], released: int, source_rows: int) -> dict[str, Any]:
    """``metrics`` (the candidate's) made to describe the published version ``table`` (quoted)."""
    out = dict(metrics) | {"released_records": released, "held_back": dict(held_back), "records": source_rows}
    if not held_back_total(held_back):
        return out  # the candidate was published as it is
    out["candidate"] = {k: metrics[k] for k in CANDIDATE_FIGURES if k in metrics}
    out.pop("workload_error", None)
    wants_td = "td" in metrics and levels is not None
    if "class_sizes" not in metrics and not wants_td:
        return out  # a method without class figures (heterogeneous: its own GCP / SIL, per record)
    counts = con.query(F.class_counts(table, qids, con.dialect))
    sizes = np.asarray(counts["n"].to_list(), dtype=np.int64)
    if "class_sizes" in metrics:
        out["class_sizes"] = ({"classes": 0, "min": 0, "median": 0, "mean": 0, "max": 0} if sizes.size == 0 else
                              {"classes": int(sizes.size), "min": int(sizes.min()), "median": float(np.median(sizes)),
                               "mean": float(sizes.mean()), "max": int(sizes.max())})
    if wants_td and levels is not None:
        td = 0.0
        for q, h in zip(qids, hierarchies, strict=True):
            level = int(levels[q])
            leaves: dict[str, int] = {}
            for row in h.rows:
                leaves[row[level]] = leaves.get(row[level], 0) + 1
            weight = np.array([1.0 / leaves[v] if v in leaves else 0.0 for v in counts[q].cast(str).to_list()])
            td += float(np.sum(weight * sizes))
        out["td"] = td
        if "query_precision" in metrics:
            out["query_precision"] = 100.0 * td / (source_rows * len(qids)) if source_rows else 0.0
    return out
