"""Parameters every population-based optimizer takes, and their checks.

``COMMON_DEFAULTS`` are the options of the island model (``islands``, ``migration_interval``,
the executor ...), which every algorithm's defaults extend with its own; ``parse_params``
checks a run's parameters against such defaults.
"""

from __future__ import annotations

import multiprocessing as mp
from typing import Any

from ppdp.errors import SpecError

EXECUTORS = ("auto", "local", "process", "ray")

# Options every population-based optimizer takes (ours, not the papers', except islands/MI).
COMMON_DEFAULTS: dict[str, Any] = {
    "islands": 1,  # NSP; 4 for id-dga (ID-DGA §5.2)
    "migration_interval": 5,  # MI (ID-DGA §5.2)
    # Ours: the migrant an island takes before epoch e + 1 left its predecessor after epoch
    # e - lag. 0 = the paper's synchronous migration; lag >= 1 lets an island run up to ``lag``
    # epochs ahead of its predecessor instead of waiting for it. Reproducible either way.
    "migration_lag": 0,
    # "auto" (islands in processes only when the estimate says it pays, see auto.choose_executor),
    # "process" (one process per island) or "local" (all islands in this process). Same results.
    "executor": "auto",
    "ray_address": "",  # executor = "ray": the cluster ("" = RAY_ADDRESS, a running one, or a new local one)
    "start_method": "spawn",  # multiprocessing start method of the worker processes
    "oracle": False,  # memetic repair S := S*(G) on every evaluated solution (docs/design/paper_notes.md §3)
    # Record the population diversity every n generations for HAEF Fig. 9 (0 = never). Off by
    # default: a release does not need it, and its snapshots are most of the islands' messages.
    "diversity_every": 0,
}


def parse_params(name: str, params: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """``defaults`` updated with ``params``; SpecError for unknown names or wrong types."""
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        raise SpecError(f"{name} optimizer: unknown parameter(s) {unknown}. Known: {', '.join(sorted(defaults))}.")
    out = dict(defaults)
    for key, value in params.items():
        d = defaults[key]
        ok = (isinstance(value, bool) if isinstance(d, bool)
              else isinstance(value, int) and not isinstance(value, bool) if isinstance(d, int)
              else isinstance(value, int | float) and not isinstance(value, bool) if isinstance(d, float)
              else isinstance(value, str) if isinstance(d, str) else True)
        if not ok:
            raise SpecError(f"{name} optimizer: parameter {key!r} must be a {type(d).__name__}, got {value!r}. "
                            f"Hint: {key} = {d!r}.")
        out[key] = float(value) if isinstance(d, float) else value
    for key in ("islands", "migration_interval", "pop_size"):
        if key in out and out[key] < 1:
            raise SpecError(f"{name} optimizer: {key} must be at least 1, got {out[key]}.")
    if out.get("migration_lag", 0) < 0:
        raise SpecError(f"{name} optimizer: migration_lag must be >= 0 (0 = synchronous migration).")
    if out.get("diversity_every", 0) < 0:
        raise SpecError(f"{name} optimizer: diversity_every must be >= 0 (0 = off).")
    for key in ("mr", "cr", "cr_ga", "mr_ga", "cr_de"):
        if key in out and not 0.0 <= out[key] <= 1.0:
            raise SpecError(f"{name} optimizer: {key} must be in [0, 1], got {out[key]}.")
    if "f" in out and not 0.0 < out["f"] <= 2.0:
        raise SpecError(f"{name} optimizer: F must be in (0, 2] (HAEF §4.3.2), got {out['f']}.")
    if out.get("executor") not in (None, *EXECUTORS):
        raise SpecError(f"{name} optimizer: executor must be one of {', '.join(map(repr, EXECUTORS))}, "
                        f"not {out['executor']!r}. Hint: executor = \"auto\".")
    if "start_method" in out and out["start_method"] not in mp.get_all_start_methods():
        raise SpecError(f"{name} optimizer: start_method must be one of {mp.get_all_start_methods()}, "
                        f"not {out['start_method']!r}. Hint: \"spawn\".")
    return out


def split(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` near-equal integers, larger ones first."""
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]
