"""Sweeps on the report page, as inline SVG: a family's rate against problem size, one line per
variant (the vendor's dashed), where its rows ran at several sizes (the picture of Triton's
`perf_report`: where a variant falls off at small sizes, where the vendor's heuristics switch); and a
suite [[sweep]]'s configurations ("swizzled[BM=128,BK=8]") as bars, fastest on top, the vendor's rate
as the line to beat."""

from __future__ import annotations

import math

from gpuprof.render.charts import SWEEP_LABEL, sweep_groups
from gpuprof.render.page_ladder import rate_unit
from gpuprof.render.page_svg import (
    LINE_COLOURS,
    MUTED,
    RUNG_COLOUR,
    VENDOR_COLOUR,
    Scale,
    e,
    linear_ticks,
    number,
    plot_group,
    svg_open,
    text,
    y_grid,
)
from gpuprof.results import OK, Row, size_label

WIDTH, HEIGHT = 1000, 400
LEFT, RIGHT, TOP, BOTTOM = 80, 690, 40, 330
PAD = 50  # px between the axis ends and the first and last size


def _rate(row: Row) -> float | None:
    return row.derived.rate if row.check.status == OK and row.derived and row.derived.rate else None


def size_lines(family: str, rows: list[Row]) -> str:
    """Rate against size for the variants with a rate at two or more sizes; "" where none has."""
    by_variant: dict[str, dict[str, Row]] = {}
    for r in rows:
        if _rate(r) is not None and not SWEEP_LABEL.match(r.variant):
            by_variant.setdefault(r.variant, {})[size_label(r.size)] = r
    lines = {v: sizes for v, sizes in by_variant.items() if len(sizes) >= 2}
    if not lines:
        return ""
    kind = next(r.derived.rate_kind for sizes in lines.values() for r in sizes.values() if r.derived)
    unit, scale = rate_unit(kind)
    # Sizes in order of the work they hold (product of the dimensions), one column each.
    sizes = sorted({s for sizes in lines.values() for s in sizes},
                   key=lambda s: (_work(next(r for v in lines.values() for k, r in v.items() if k == s)), s))
    step = (RIGHT - LEFT - 2 * PAD) / max(len(sizes) - 1, 1)
    column = {s: LEFT + PAD + step * i for i, s in enumerate(sizes)}
    top = max((_rate(r) or 0.0) / scale for v in lines.values() for r in v.values())
    y = Scale(0.0, top * 1.12, BOTTOM, TOP)
    x = Scale(0.0, float(max(len(sizes) - 1, 1)), LEFT, RIGHT)
    title = f"{family}: {unit} against problem size, one line per variant (Triton perf_report style)"
    out = [svg_open(WIDTH, HEIGHT, title, "sweep sizes"), text(4, 16, title, font_weight=600, font_size=13),
           plot_group(x, y), y_grid(x, y, linear_ticks(y.hi), f"{unit} (median)")]
    out.append(f'<line x1="{LEFT}" x2="{RIGHT}" y1="{BOTTOM}" y2="{BOTTOM}" stroke="#57606a"/>')
    for s in sizes:
        out.append(text(column[s], BOTTOM + 16, s, "middle", fill="#57606a", font_size=11))
    out.append(text((LEFT + RIGHT) / 2, BOTTOM + 34, "problem size (ordered by the work it holds)", "middle",
                    fill="#57606a", font_size=11.5))
    legend_y = TOP + 6
    for index, (variant, members) in enumerate(lines.items()):
        vendor = any(r.vendor for r in members.values())
        colour = VENDOR_COLOUR if vendor else LINE_COLOURS[index % len(LINE_COLOURS)]
        points = [(column[s], y((_rate(members[s]) or 0.0) / scale), members[s]) for s in sizes if s in members]
        path = " ".join(f"{'M' if i == 0 else 'L'}{px:.1f} {py:.1f}" for i, (px, py, _) in enumerate(points))
        dash = ' stroke-dasharray="6 4"' if vendor else ""
        out.append(f'<g class="line" data-variant="{e(variant)}"><path d="{path}" fill="none" stroke="{colour}" '
                   f'stroke-width="2"{dash}/>')
        for px, py, r in points:
            out.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="4" fill="{colour}"><title>'
                       f'{e(f"{variant} at {size_label(r.size)}: {number((_rate(r) or 0.0) / scale)} {unit}")}'
                       f'</title></circle>')
        out.append("</g>")
        out.append(f'<line x1="{RIGHT + 24}" x2="{RIGHT + 50}" y1="{legend_y - 4}" y2="{legend_y - 4}" '
                   f'stroke="{colour}" stroke-width="2"{dash}/>'
                   + text(RIGHT + 56, legend_y, variant + (" (vendor)" if vendor else ""), font_size=11))
        legend_y += 16
    out.append("</g></svg>")
    return "".join(out)


def _work(row: Row) -> float:
    return float(math.prod(row.size.values())) if row.size else 0.0


def define_sweeps(family: str, rows: list[Row]) -> list[str]:
    """One chart per swept variant and size: each configuration's rate as a bar, fastest on top."""
    out = []
    for (fam, variant, size), members in sweep_groups(rows).items():
        rated = sorted((r for r in members if _rate(r)), key=lambda r: -(_rate(r) or 0.0))
        if not rated:
            out.append(f'<p class="empty">Sweep of {e(variant)} at {e(size)}: no configuration passed its check.</p>')
            continue
        vendor = next((r for r in rows if r.vendor and size_label(r.size) == size and _rate(r)), None)
        kind = rated[0].derived.rate_kind if rated[0].derived else "bytes"
        unit, scale = rate_unit(kind)
        height = 60 + 20 * len(rated) + 30
        values = [(_rate(r) or 0.0) / scale for r in rated]
        reference = (_rate(vendor) or 0.0) / scale if vendor else 0.0
        x = Scale(0.0, max(values + [reference]) * 1.08, 260, 760)
        y = Scale(0.0, 1.0, 50 + 20 * len(rated), 44)
        title = f"{fam} sweep of {variant} at {size}: {unit} per configuration, fastest first"
        parts = [svg_open(WIDTH, height, title, "sweep defines"), text(4, 16, title, font_weight=600, font_size=13),
                 plot_group(x, y)]
        for i, (r, value) in enumerate(zip(rated, values)):
            top = 50 + 20 * i
            label = r.variant[len(variant):] or r.variant
            parts.append(text(252, top + 13, label, "end", font_size=11))
            parts.append(f'<rect x="{x.start}" y="{top + 3}" width="{max(1.0, x(value) - x.start):.1f}" height="13" '
                         f'fill="{RUNG_COLOUR}"><title>{e(f"{r.variant}: {number(value)} {unit}")}</title></rect>')
            parts.append(text(x(value) + 6, top + 13, f"{number(value)} {unit}", fill=MUTED, font_size=10.5))
        if vendor is not None:
            px = x(reference)
            parts.append(f'<line class="reference" x1="{px:.1f}" x2="{px:.1f}" y1="{y.end - 4}" y2="{y.start}" '
                         f'stroke="{VENDOR_COLOUR}" stroke-dasharray="5 3" stroke-width="1.6"/>'
                         + text(px, y.end - 8, f"{vendor.variant} (vendor) {number(reference)} {unit}", "middle",
                                fill=VENDOR_COLOUR, font_size=11))
        parts.append("</g></svg>")
        out.append("".join(parts))
    return out
