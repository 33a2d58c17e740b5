"""Small inline SVG charts for the report: bars, paired bars, stacked share bars.

Our own few lines instead of a plotting library, so the page needs nothing from the network and
runs no script: every chart is static markup with its numbers also in a <title> per bar (the
browser shows it on hover) and in the tables next to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac")
SOURCE, RELEASE = "#9aa5b1", "#4e79a7"


def _fmt(x: float) -> str:
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.4g}"


def bars(labels: Sequence[str], series: Sequence[tuple[str, Sequence[float], str]], *, title: str, x_label: str,
         y_label: str, width: int = 640, height: int = 240) -> str:
    """A bar chart with one bar per label and series (side by side); ``series`` is (name, values, colour)."""
    left, right, top, bottom = 56, 12, 28, 44
    plot_w, plot_h = width - left - right, height - top - bottom
    top_value = max((v for _, vals, _ in series for v in vals), default=0.0) or 1.0
    n = max(len(labels), 1)
    slot = plot_w / n
    bar_w = max(slot * 0.8 / max(len(series), 1), 1.0)
    out = [f'<svg role="img" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" class="chart"><title>{escape(title)}</title>',
           f'<text x="{left}" y="16" class="ct">{escape(title)}</text>',
           f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" class="axis"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" class="axis"/>']
    for frac in (0.0, 0.5, 1.0):
        y = top + plot_h * (1 - frac)
        out.append(f'<text x="{left - 4}" y="{y + 4:.1f}" class="tick" text-anchor="end">{escape(_fmt(top_value * frac))}</text>')
    for i, label in enumerate(labels):
        x0 = left + i * slot + slot * 0.1
        for j, (name, vals, colour) in enumerate(series):
            v = float(vals[i]) if i < len(vals) else 0.0
            h = plot_h * v / top_value
            out.append(f'<rect x="{x0 + j * bar_w:.1f}" y="{top + plot_h - h:.1f}" width="{bar_w:.1f}" height="{h:.1f}" '
                       f'fill="{colour}"><title>{escape(name)} {escape(label)}: {escape(_fmt(v))}</title></rect>')
        if n <= 24 or i % max(n // 12, 1) == 0:
            out.append(f'<text x="{left + i * slot + slot / 2:.1f}" y="{top + plot_h + 14}" class="tick" '
                       f'text-anchor="middle">{escape(label)}</text>')
    out.append(f'<text x="{left + plot_w / 2:.1f}" y="{height - 6}" class="lab" text-anchor="middle">{escape(x_label)}</text>')
    out.append(f'<text x="12" y="{top + plot_h / 2:.1f}" class="lab" text-anchor="middle" '
               f'transform="rotate(-90 12 {top + plot_h / 2:.1f})">{escape(y_label)}</text>')
    if len(series) > 1:
        for j, (name, _, colour) in enumerate(series):
            x = left + plot_w - 80 * (len(series) - j)
            out.append(f'<rect x="{x}" y="6" width="10" height="10" fill="{colour}"/><text x="{x + 14}" y="15" class="tick">{escape(name)}</text>')
    out.append("</svg>")
    return "".join(out)


def share_bar(shares: Sequence[tuple[str, float]], colours: dict[str, str], *, width: int = 320, height: int = 14) -> str:
    """One horizontal bar split by shares (summing to at most 1), coloured by value."""
    out = [f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" class="share">']
    x = 0.0
    for label, p in shares:
        w = width * max(p, 0.0)
        out.append(f'<rect x="{x:.2f}" y="0" width="{w:.2f}" height="{height}" fill="{colours.get(label, "#cccccc")}">'
                   f"<title>{escape(label)}: {p:.1%}</title></rect>")
        x += w
    out.append("</svg>")
    return "".join(out)


def colour_map(values: Sequence[str]) -> dict[str, str]:
    """A colour per value, in the given order (values past the palette share grey)."""
    return {v: PALETTE[i] if i < len(PALETTE) else "#cccccc" for i, v in enumerate(values)}
