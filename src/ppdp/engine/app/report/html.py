"""The report page: ReportData (gather.py) as one self-contained HTML document.

No script, no stylesheet link, no image file, no font: inline CSS and inline SVG only, and a
Content-Security-Policy that forbids every fetch, so opening the page (also offline, also from a
mail attachment) contacts nobody. Every value is HTML-escaped: labels come from the data.
"""

from __future__ import annotations

import json
import math
from html import escape
from typing import Any

from ppdp.engine.app.report import svg
from ppdp.engine.app.report.gather import ReportData, RiskView
from ppdp.engine.risk.base import estimators, risk_rows, values_of

SECTIONS = (("summary", "Summary"), ("certificate", "Certificate"), ("levels", "Levels per quasi-identifier"),
            ("classes", "Class sizes"), ("suppression", "Suppression"), ("utility", "Utility per attribute"),
            ("sensitive", "Sensitive values per class against the source"), ("risk", "Re-identification risk"),
            ("history", "Version history"))

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1f2933;background:#f7f8fa}
header{background:#243b53;color:#fff;padding:18px 28px}header h1{margin:0;font-size:22px}header p{margin:4px 0 0;opacity:.85}
nav{padding:8px 28px;background:#e4e7eb}nav a{margin-right:14px;color:#243b53}
main{padding:8px 28px 40px;max-width:1100px}section{background:#fff;border:1px solid #d9e2ec;border-radius:6px;padding:12px 18px;margin:16px 0}
h2{font-size:18px;margin:4px 0 10px}table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #d9e2ec;padding:3px 8px;text-align:left}
th{background:#f0f4f8}td.n{text-align:right;font-variant-numeric:tabular-nums}.note{color:#52606d}.warn{color:#b44d12}
pre{background:#f0f4f8;padding:8px;overflow:auto;max-height:320px;font-size:12px}
svg.chart{display:block;margin:6px 0}.axis{stroke:#7b8794}.tick{font-size:10px;fill:#52606d}.lab{font-size:11px;fill:#323f4b}.ct{font-size:12px;font-weight:600}
.pair{display:flex;flex-wrap:wrap;gap:16px}
"""


def render(data: ReportData) -> str:
    """The whole page as text (UTF-8 when written)."""
    body = [_summary(data), _certificate(data), _levels(data), _classes(data), _suppression(data), _utility(data),
            _sensitive(data), _risk(data), _history(data)]
    audience = "external" if data.external else "internal"
    nav = "".join(f'<a href="#{key}">{escape(title)}</a>' for key, title in SECTIONS)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>ppdp report: {escape(data.release)} v{data.version}</title><style>{CSS}</style></head>"
        f'<body data-audience="{audience}"><header><h1>Release report: {escape(data.release)} version {data.version}</h1>'
        f"<p>{escape(data.method)} · {data.records:,} released rows · {audience} report"
        f"{'' if data.version == data.current_version else f' · current version is {data.current_version}'}</p></header>"
        f"<nav>{nav}</nav><main>{''.join(body)}</main></body></html>\n"
    )


def _section(key: str, inner: str) -> str:
    title = dict(SECTIONS)[key]
    return f'<section id="{key}" data-section="{key}"><h2>{escape(title)}</h2>{inner}</section>'


def _table(header: list[str], rows: list[list[Any]], numeric: set[int] | None = None, cls: str = "") -> str:
    numeric = numeric or set()
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = []
    for r in rows:
        cells = []
        for i, c in enumerate(r):
            cells.append(c if isinstance(c, _Raw) else f'<td{" class=n" if i in numeric else ""}>{escape(_text(c))}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f'<table{f" class={cls}" if cls else ""}><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


class _Raw(str):
    """A table cell already rendered (a <td> with attributes)."""


def _text(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        return "-" if math.isnan(x) else f"{x:,.4f}"
    return str(x)


def _summary(d: ReportData) -> str:
    return _section("summary", _table(["", ""], [[k, v] for k, v in d.summary]))


def _certificate(d: ReportData) -> str:
    cert = json.dumps(d.certificate, indent=2, default=str)
    return _section("certificate", '<p class="note">The audit record of this version (as <code>ppdp job certificate</code> '
                    f"prints it): models with the value achieved and the SQL that verified it.</p><pre>{escape(cert)}</pre>")


def _levels(d: ReportData) -> str:
    rows = [[q.attribute, ", ".join(q.columns) or "-", q.form, q.published_values] for q in d.qid_views]
    inner = [_table(["quasi-identifier", "published column(s)", "published as", "distinct published values"], rows, {3})]
    for q in d.qid_views:
        if q.widths:
            kind = "set size" if q.form == "value sets" else "range width"
            inner.append(svg.bars([b.label for b in q.widths], [("records", [b.records for b in q.widths], svg.RELEASE)],
                                  title=f"{q.attribute}: records per {kind}", x_label=kind, y_label="records", height=200))
    if d.groups is not None:
        g = d.groups
        inner.append(f"<p>Microaggregation: {g.count:,} groups.</p>")
        inner.append(svg.bars([b.label for b in g.sizes], [("groups", [b.groups for b in g.sizes], svg.RELEASE)],
                              title="groups per size", x_label="group size", y_label="groups", height=200))
        if g.labels is not None:
            attrs = sorted({a for _, lab in g.labels for a, _ in lab})
            rows = [[grp] + [dict(lab).get(a, "") for a in attrs] for grp, lab in g.labels]
            inner.append(f'<p class="note">The first {len(rows)} groups with their published labels (internal report only).</p>')
            inner.append(_table(["group"] + attrs, rows, {0}, cls="combinations"))
        else:
            inner.append('<p class="note">Group labels are left out of the external report.</p>')
    return _section("levels", "".join(inner))


def _classes(d: ReportData) -> str:
    b = d.class_bins
    chart = svg.bars([x.label for x in b], [("classes", [x.groups for x in b], svg.SOURCE), ("records", [x.records for x in b], svg.RELEASE)],
                     title="equivalence classes and records per class size", x_label="class size", y_label="count")
    table = _table(["class size", "classes", "records"], [[x.label, x.groups, x.records] for x in b], {1, 2})
    return _section("classes", f"<p>{d.classes:,} classes on the published quasi-identifier columns; smallest "
                    f"{_text(d.smallest_class)}.</p>{chart}{table}")


def _suppression(d: ReportData) -> str:
    src = d.source_rows or 0
    share = d.suppressed / src if src else 0.0
    chart = svg.bars([f"v{h.version}" for h in d.history],
                     [("released", [h.released_rows or 0 for h in d.history], svg.RELEASE),
                      ("suppressed", [h.suppressed for h in d.history], "#e15759")],
                     title="released and suppressed rows per version", x_label="version", y_label="rows", height=200)
    return _section("suppression", f"<p>{d.suppressed:,} of {src:,} source rows suppressed ({share:.2%}) in version "
                    f"{d.version}. Which rows were suppressed is kept in <code>_ppdp.suppressed</code> and never shown here.</p>{chart}")


def _utility(d: ReportData) -> str:
    # The source's domain counts values held only by suppressed rows: left out of the external page.
    rows = [[q.attribute, q.form, *([] if d.external else [q.domain]), q.published_values, q.loss, q.exact_share]
            for q in d.qid_views]
    head = ["attribute", "published as", *([] if d.external else ["domain values"]), "published values",
            "loss (0-1)", "exact share"]
    numeric = {2, 3, 4} if d.external else {2, 3, 4, 5}
    note = ('<p class="note">The number of source values per attribute is left out of the external report '
            "(it counts values held only by suppressed rows).</p>" if d.external else "")
    return _section("utility", note + '<p class="note">Loss is the mean normalized generalization of a released value '
                    "(Iyengar's loss metric: leaves covered minus one over domain leaves minus one, or range width over "
                    "the attribute's range); 0 means as in the source, 1 fully suppressed. Exact share: released values not generalized.</p>"
                    + _table(head, rows, numeric)
                    + svg.bars([q.attribute for q in d.qid_views], [("loss", [q.loss or 0.0 for q in d.qid_views], svg.RELEASE)],
                               title="loss per attribute", x_label="attribute", y_label="loss", height=200))


def _sensitive(d: ReportData) -> str:
    s = d.sensitive_view
    if s is None:
        return _section("sensitive", "<p>The release declares no sensitive attribute.</p>")
    values = [k for k, _ in (s.source or s.released)]
    colours = svg.colour_map(values)
    parts = [f"<p>Sensitive attribute(s): {escape(', '.join(s.columns))}. Distance is the Euclidean distance of a class's "
             "distribution to the source's Q (as the t-closeness check, HAEF eq. 2-4); largest "
             f"{s.max_distance:.4f}.</p>"]
    if s.source:
        released = dict(s.released)
        parts.append(svg.bars([k for k, _ in s.source], [("source", [q for _, q in s.source], svg.SOURCE),
                                                         ("release", [released.get(k, 0.0) for k, _ in s.source], svg.RELEASE)],
                              title="sensitive values: source (Q) and release", x_label="value", y_label="share"))
    else:
        parts.append('<p class="note">The source distribution is left out of the external report (it counts suppressed rows too).</p>')
    parts.append(svg.bars([b.label for b in s.distance_bins], [("classes", [b.groups for b in s.distance_bins], svg.RELEASE)],
                          title="classes per distance to the source", x_label="distance to Q (upper end of a bin of width 0.05)", y_label="classes", height=200))
    if s.classes is not None:
        source_bar = _Raw(f"<td>{svg.share_bar(list(s.source), colours)}</td>")
        rows: list[list[Any]] = [["(source Q)", "", source_bar, ""]]
        for c in s.classes:
            rows.append([" | ".join(c.labels), c.size, _Raw(f"<td>{svg.share_bar(list(c.shares), colours)}</td>"), c.distance])
        parts.append(f'<p class="note">The {len(s.classes)} classes farthest from the source (internal report only).</p>')
        parts.append(_table(["class (" + ", ".join(d.qids) + ")", "size", "distribution", "distance"], rows, {1, 3},
                            cls="combinations"))
        legend = "".join(f'<span style="color:{colours[v]}">■</span> {escape(v)} ' for v in values[: len(svg.PALETTE)])
        parts.append(f"<p>{legend}</p>")
    else:
        parts.append('<p class="note">Per-class distributions are left out of the external report (they name each class).</p>')
    return _section("sensitive", "".join(parts))


def _get(obj: dict[str, Any] | None, path: str) -> Any:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def _risk_cell(obj: dict[str, Any] | None, path: str, side: str) -> _Raw:
    v = _get(obj, path)
    shown = _text(v) if not isinstance(v, float) else (f"{v:.6g}" if not math.isnan(v) else "-")
    raw = "null" if v is None else json.dumps(v)
    return _Raw(f'<td class=n data-key="{escape(path)}" data-side="{side}" data-value="{escape(raw)}">{escape(shown)}</td>')


def _risk(d: ReportData) -> str:
    """The risk table (the assessment's rows, then each risk estimator's, as ``ppdp risk
    --json`` keys) and each estimator's chart of source against release."""
    r: RiskView = d.risk
    if r.source is None and r.release is None:
        return _section("risk", f"<p>{escape(r.note)}</p>")
    rows = [[label, _risk_cell(r.source, path, "source"), _risk_cell(r.release, path, "release")] for label, path in risk_rows()]
    parts = [_table(["", ""], [["attacker columns", ", ".join(r.qids)]]), f'<p class="note">{escape(r.note)}</p>',
             _table(["measure (ppdp risk --json)", "source", "release"], rows, cls="risk")]
    for e in estimators():
        vs, vr = values_of(e, r.source), values_of(e, r.release)
        cs, cr = e.chart(vs) if vs else None, e.chart(vr) if vr else None
        if cs is None and cr is None:
            continue
        src, rel = dict(cs.bars) if cs else {}, dict(cr.bars) if cr else {}
        meta = cr or cs
        assert meta is not None  # (one of the two is set)
        # only the bars that hold something on either side (ARX's bands are fine near 0 and mostly empty)
        labels = [b for b, _ in meta.bars if src.get(b, 0.0) > 0 or rel.get(b, 0.0) > 0]
        if labels:
            parts.append(svg.bars(labels, [("source", [src.get(b, 0.0) for b in labels], svg.SOURCE),
                                           ("release", [rel.get(b, 0.0) for b in labels], svg.RELEASE)],
                                  title=meta.title, x_label=meta.x_label, y_label=meta.y_label))
    return _section("risk", "".join(parts))


def _history(d: ReportData) -> str:
    rows = [[h.version, h.published_at, h.optimizer, h.source_rows, h.released_rows, h.suppressed, h.inserted, h.deleted, h.updated,
             h.delta_added, h.delta_removed, h.inserts_withheld, h.deletes_delayed, h.changes_delayed, h.history_classes,
             h.smallest_history_class, h.verified] for h in d.history]
    chart = svg.bars([f"v{h.version}" for h in d.history],
                     [("inserted", [h.inserted or 0 for h in d.history], "#59a14f"), ("deleted", [h.deleted or 0 for h in d.history], "#e15759"),
                      ("held back", [h.inserts_withheld + h.deletes_delayed + h.changes_delayed for h in d.history], "#edc948")],
                     title="source changes, held back", x_label="version", y_label="rows", height=200)
    return _section("history", '<p class="note">Held back: insertions withheld, deletions and changes delayed so that '
                    "every history class over all versions still meets the models (docs/concepts/threat-model.md, \"Privacy across versions\").</p>"
                    + _table(["version", "published (UTC)", "optimizer", "source rows", "released", "suppressed", "inserted",
                              "deleted", "updated", "delta +", "delta -", "inserts withheld", "deletes delayed",
                              "changes delayed", "history classes", "smallest history class", "verified"],
                             rows, {0, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}) + chart)

