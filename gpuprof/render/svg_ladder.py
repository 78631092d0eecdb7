"""A run table's ladder as inline SVG drawn by gpuprof itself: the page's chart where matplotlib is
not installed (README command 1 installs no extras). One bar per row in table order, on a linear
axis from 0, with its rate and its speedups (charts._bar_note); vendor rows grey, the best rung dark,
rows without a rate named with their status. Text stays text; nothing is fetched."""

from __future__ import annotations

import html

from gpuprof.analysis.tables import Table
from gpuprof.render.charts import BEST_COLOUR, FAILED_COLOUR, RUNG_COLOUR, VENDOR_COLOUR, _bar_note, rate_unit
from gpuprof.results import OK

WIDTH, LABEL, NOTE, ROW, TOP = 1100, 190, 430, 22, 30  # px: the whole chart, name and note columns, a bar


def ladder_svg(table: Table) -> str:
    unit, scale = rate_unit(table.rate_kind)
    rows = table.rows
    rates = [(r.derived.rate / scale) if r.derived and r.derived.rate else None for r in rows]
    top = max((v for v in rates if v), default=0.0)
    best = max((i for i, r in enumerate(rows) if rates[i] and not r.vendor), key=lambda i: rates[i] or 0.0,
               default=None)
    span = WIDTH - LABEL - NOTE - 10
    height = TOP + ROW * len(rows) + 10
    title = f"{table.family.name} ladder: {unit} of each variant (median), linear axis"
    parts = [(f'<svg width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" role="img" '
              f'font-family="system-ui,sans-serif" font-size="12"><title>{html.escape(title)}</title>'),
             f'<text x="4" y="16" font-size="13" font-weight="600">{html.escape(title)}</text>']
    for i, (row, rate) in enumerate(zip(rows, rates)):
        y = TOP + i * ROW
        parts.append(f'<text x="{LABEL - 6}" y="{y + 15}" text-anchor="end">{html.escape(row.variant)}</text>')
        if rate and top:
            colour = VENDOR_COLOUR if row.vendor else (BEST_COLOUR if i == best else RUNG_COLOUR)
            length = max(1.0, span * rate / top)
            note = " · ".join(p for p in (f"{rate:.3g} {unit}", _bar_note(row, table)) if p)
            parts.append(f'<rect x="{LABEL}" y="{y + 3}" width="{length:.1f}" height="{ROW - 6}" fill="{colour}">'
                         f'<title>{html.escape(row.variant)}: {html.escape(note)}</title></rect>')
            parts.append(f'<text x="{LABEL + length + 6:.1f}" y="{y + 15}" fill="#333">{html.escape(note)}</text>')
        else:
            status = row.check.status.upper() if row.check.status != OK else "not timed"
            parts.append(f'<text x="{LABEL + 4}" y="{y + 15}" fill="{FAILED_COLOUR}" font-weight="700">'
                         f'{html.escape(status)}</text>')
    parts.append("</svg>")
    return "".join(parts)
