"""What a run record says, as the lines ``ppdp run``, ``ppdp show``, ``job run`` and the
certificate print: only what the run's method recorded (a microaggregation or
heterogeneous release has no optimizer, levels or TD, so none is printed as "None" or "nan"),
and what the cross-version check held back (a "[succeeded]" version that none of the
source's changes reached must say so).

Each function returns ``(label, text)`` pairs; the callers lay them out.
"""

from __future__ import annotations

import json
from typing import Any

from ppdp.engine.core.catalog import RunRecord

# Utility figures a method records in its metrics, in the order they are printed.
UTILITY_KEYS = ("td", "max_td", "query_precision", "workload_error", "gcp", "initial_gcp", "sil", "total_pr",
                "average_il")


def method_lines(run: RunRecord) -> list[tuple[str, str]]:
    """How the release was chosen: the optimizer and levels of a generalization, the method's own
    settings otherwise (each only when the run recorded it)."""
    s = run.solution or {}
    out: list[tuple[str, str]] = []
    if s.get("optimizer") is not None:
        out.append(("optimizer", f"{s['optimizer']} (budget {s.get('budget')}, seed {s.get('seed')}), "
                    f"{s.get('evaluations')} evaluations in {s.get('seconds')} s, "
                    f"{'certified optimal' if s.get('certified') else 'NOT certified optimal'}"))
    elif s.get("method"):
        settings = ", ".join(f"{k} {s[k]}" for k in ("algorithm", "k", "catalogue", "initial", "objective", "seed")
                             if s.get(k) is not None)
        search = f", {s['evaluations']} evaluations in {s.get('seconds')} s" if s.get("evaluations") is not None else ""
        out.append(("method", f"{s['method']} ({settings}){search}"))
    if s.get("levels"):
        heights = s.get("heights", {})
        out.append(("levels (G)", ", ".join(f"{q}={lv}/{heights.get(q, '?')}" for q, lv in s["levels"].items())))
    for note in s.get("notices", []):
        out.append(("notice", str(note)))
    return out


def metric_lines(run: RunRecord) -> list[tuple[str, str]]:
    """The utility figures the method recorded, the suppressed records and the classes or groups."""
    m = run.metrics or {}
    out: list[tuple[str, str]] = []
    if m.get("td") is not None and m.get("max_td") is not None:
        precision = f"  (query precision {m['query_precision']:.2f} %)" if m.get("query_precision") is not None else ""
        out.append(("TD", f"{m['td']:,.2f} of {m['max_td']:,.0f}{precision}"))
    if m.get("gcp") is not None:
        start = f" (initial {m['initial_gcp']:.4f})" if m.get("initial_gcp") is not None else ""
        sil = f", SIL {m['sil']:.4f}" if m.get("sil") is not None else ""
        out.append(("GCP", f"{m['gcp']:.4f}{start}{sil}"))
    if m.get("total_pr") is not None or m.get("average_il") is not None:
        out.append(("utility", ", ".join(f"{label} {m[k]:.4f}" for k, label in (("total_pr", "total PR"), ("average_il", "average IL"))
                                         if m.get(k) is not None)))
    if "records" in m:
        if m.get("unit") == "person" and m.get("persons") is not None:
            out.append(("suppressed", f"{int(m.get('suppressed') or 0):,} of {int(m['persons']):,} persons "
                                      f"({int(m.get('released_records') or 0):,} of {int(m['records']):,} rows published)"))
        else:
            out.append(("suppressed", f"{int(m.get('suppressed') or 0):,} of {int(m['records']):,} records"))
    if m.get("workload_error") is not None:
        out.append(("workload error", f"{m['workload_error']:.4f} mean relative error of random COUNT queries"))
    cs = m.get("class_sizes") or {}
    if cs:
        out.append(("classes", f"{cs['classes']:,} (size min {cs['min']}, median {cs['median']}, mean {cs['mean']:.1f}, max {cs['max']})"))
    gs = m.get("group_size") or {}
    if m.get("groups") is not None and gs:
        out.append(("groups", f"{m['groups']:,} (size min {gs['min']}, mean {gs['mean']:.1f}, max {gs['max']})"))
    return out


def verification_lines(run: RunRecord) -> list[tuple[str, str]]:
    """Each model check and each of the method's own checks, with its verdict."""
    v = run.verification or {}
    out = [("verified (SQL)", f"{c['model']} {json.dumps(c['params'])}{' per person' if c.get('unit') == 'person' else ''}: "
                              f"AD = {c['ad']} -> {'PASS' if c['passed'] else 'FAIL'}")
           for c in v.get("checks", [])]
    out += [("verified (SQL)", f"{c['check']}: {c.get('detail', '')} -> {'PASS' if c['passed'] else 'FAIL'}")
            for c in v.get("method_checks", [])]
    return out


def held_back(run: RunRecord) -> dict[str, int]:
    """What the cross-version check kept out of this version: insertions withheld, deletions and
    changes delayed (their previous rows stand). Zeros for a first version."""
    held = (run.cross_version or {}).get("held_back") or {}
    return {k: int(held.get(k, 0) or 0) for k in ("inserts_withheld", "deletes_delayed", "changes_delayed")}


def change_lines(run: RunRecord) -> list[tuple[str, str]]:
    """The source's changes since the previous version, the cross-version check, and a plain
    sentence when changes were held back (all of them, or some)."""
    out: list[tuple[str, str]] = []
    ch = run.changes or {}
    if ch:
        out.append(("source changes", f"+{ch.get('inserted', 0)} inserted, -{ch.get('deleted', 0)} deleted, "
                    f"~{ch.get('updated', 0)} updated"))
    cv = run.cross_version or {}
    held = held_back(run)
    if cv.get("versions_checked"):
        classes = (f"{cv['history_classes']} history classes over {cv['versions_checked']} versions, smallest "
                   f"{cv.get('smallest_history_class')}" if cv.get("history_classes") is not None
                   else f"{cv['versions_checked']} versions")
        out.append(("cross-version", f"{classes} -> PASS; held back: {held['inserts_withheld']} insertions, "
                    f"{held['deletes_delayed']} deletions, {held['changes_delayed']} changes"))
    n_held = sum(held.values())
    if n_held:
        n_changes = int(ch.get("inserted", 0)) + int(ch.get("deleted", 0)) + int(ch.get("updated", 0)) if ch else 0
        whole = "none of the source's changes reached this version" if n_changes and n_held >= n_changes \
            else f"{n_held} of the source's changes did not reach this version"
        out.append(("HELD BACK", f"{whole}: publishing them now would single someone out across versions; a later "
                    "run publishes them when it is safe"))
    return out


def risk_lines(run: RunRecord) -> list[tuple[str, str]]:
    """Re-identification risk of the source and of the published version (stages/risk.py), and
    the kept-columns warning when the release published with one."""
    rk = (run.verification or {}).get("risk")
    if not rk:
        return []
    from ppdp.engine.risk.base import estimators, values_of  # each estimator phrases its own keys

    # the unit every count counted (docs/design/person_unit.md); runs before it counted rows
    out: list[tuple[str, str]] = [("counted per", str(rk.get("unit") or "row = person assumed"))]
    for side in ("source", "release"):
        r = rk.get(side)
        if r is None:
            out.append((f"risk {side}", "not measured (the method's rows do not form equivalence classes)"))
            continue
        phrases = [p for e in estimators() if (v := values_of(e, r)) and (p := e.summary(v)) is not None]
        out.append((f"risk {side}", "; ".join(phrases)))
    kept = rk.get("kept_columns") or {}
    if kept.get("message"):
        out.append(("WARNING", kept["message"]))
    return out


def summary_lines(run: RunRecord) -> list[tuple[str, str]]:
    """Every line of a run's summary, in order."""
    from ppdp.redact import redact_text

    lines = method_lines(run) + metric_lines(run) + verification_lines(run) + risk_lines(run) + change_lines(run)
    if run.error:
        lines.append(("error", redact_text(run.error)))  # a URL's password never printed
    return lines


def utility(metrics: dict[str, Any]) -> dict[str, Any]:
    """The utility figures of ``metrics`` that the method recorded (none as None)."""
    return {k: metrics[k] for k in UTILITY_KEYS if metrics.get(k) is not None}
