"""A family's roofline on the report page, as inline SVG (log-log FLOP/s against FLOP per byte).

Each timed row stands at the intensity of the bytes it MEASURABLY moved where the row has ncu
counters (its FLOP over its DRAM bytes, and over its L2 and L1 bytes where kept: one point per memory
level, joined by a dashed line at the row's height), else at the family's model (its FLOP count over
the bytes each element must move), with the chart saying which. The roofs are the file's GPU's DRAM
bandwidth, the L2 and L1 peaks ncu reported where the rows keep them, and the compute peak of each
precision the rows use; the roof that binds a row (the limiter its counters show, where kept) is
drawn bold. Hovering a point shows the row's numbers. A family whose rate is bytes across the
host link (rate kind "link") or that has no FLOPs gets its bandwidth as bars against its own roof
(the link's, or DRAM's); a family with no timed row gets one line saying why, not an empty frame."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from gpuprof.analysis.ceilings import FLOP_NAMES, Ceilings
from gpuprof.render.label_layout import spread
from gpuprof.render.page_svg import (
    CEILING_COLOUR,
    LINE_COLOURS,
    MUTED,
    RUNG_COLOUR,
    VENDOR_COLOUR,
    Scale,
    e,
    linear_ticks,
    log_ticks,
    number,
    plot_group,
    svg_open,
    text,
    x_grid,
    y_grid,
)
from gpuprof.results import OK, Row
from gpuprof.row_parts import NcuPart

WIDTH, HEIGHT = 1000, 470
LEFT, RIGHT, TOP, BOTTOM = 80, 690, 44, 410  # the plot area, px
LEVELS = (("dram", "DRAM", "circle"), ("l2", "L2", "square"), ("l1", "L1", "diamond"))
CHAR_PX = 6.2  # width of a character of an 11 px label, for placing labels apart
DRAM_COLOUR = "#d95f02"
LEVEL_ROOFS = {"l2": ("L2", "#7570b3"), "l1": ("L1", "#1b9e77")}  # the roof's name and colour per level
BINDING, ROOF = 3.6, 1.4  # stroke widths: the part of a roof that binds a row, the rest


@dataclass(frozen=True)
class Point:
    row: Row
    level: str  # "dram", "l2", "l1", or "model"
    intensity: float  # FLOP per byte
    flops: float  # achieved FLOP/s (the timed median)
    bytes: float


def timed(rows: list[Row]) -> list[Row]:
    return [r for r in rows if r.check.status == OK and r.derived and r.derived.rate and r.timing
            and r.timing.summary and r.timing.summary.median_s > 0]


def roofline_html(family: str, rows: list[Row], ceilings: Ceilings | None,
                  part_of: Callable[[Row], NcuPart | None]) -> str:
    """The family's roofline as SVG, or one line saying why there is none."""
    ok = timed(rows)
    if not ok:
        return (f'<p class="empty">No roofline for {e(family)}: no row passed its check and was timed '
                f'({len(rows)} row{"s" if len(rows) != 1 else ""}).</p>')
    kind = ok[0].derived.rate_kind if ok[0].derived else "bytes"
    if kind == "link" or not all(r.flop for r in ok):
        return bandwidth_svg(family, ok, ceilings, kind)
    return flop_svg(family, ok, ceilings, part_of)


def points_of(row: Row, part: NcuPart | None) -> list[Point]:
    """The row at each level it has measured bytes for (ncu), else at the family's model."""
    median = row.timing.summary.median_s if row.timing and row.timing.summary else 0.0
    flops = (row.flop or 0.0) / median if median else 0.0
    if part is not None and not part.error and part.flop:
        measured = {**part.level_bytes}
        if part.dram_bytes:
            measured["dram"] = part.dram_bytes
        found = [Point(row, key, part.flop / measured[key], flops, measured[key])
                 for key, _, _ in LEVELS if measured.get(key)]
        if found:
            return found
    return [Point(row, "model", row.flop / row.bytes, flops, row.bytes)] if row.flop and row.bytes else []


def flop_svg(family: str, rows: list[Row], ceilings: Ceilings | None,
             part_of: Callable[[Row], NcuPart | None]) -> str:
    points = [p for r in rows for p in points_of(r, part_of(r))]
    if not points:
        return f'<p class="empty">No roofline for {e(family)}: its rows have no FLOP or byte count.</p>'
    measured = sorted({p.row.variant for p in points if p.level != "model"})
    modelled = sorted({p.row.variant for p in points if p.level == "model"})
    bandwidth = ceilings.bandwidth_bytes_s if ceilings else None
    precisions = list(dict.fromkeys(["fp32", *(r.precision for r in rows)]))
    peaks = {q: ceilings.flops[q] for q in precisions if ceilings and ceilings.flops.get(q)}
    xs = [p.intensity for p in points]
    ridges = [peak / bandwidth for peak in peaks.values()] if bandwidth else []
    near = [r for r in ridges if min(xs) / 100 <= r <= max(xs) * 100]
    x = Scale(min(xs + near) / 4, max(xs + near) * 4, LEFT, RIGHT, log=True)
    tops = [p.flops for p in points] + [min(peak, x.hi * (bandwidth or math.inf)) for peak in peaks.values()]
    y = Scale(min(p.flops for p in points) / 1e12 / 4, max(tops) / 1e12 * 2.2, BOTTOM, TOP, log=True)
    how = ("placed by measured bytes (ncu) for " + ", ".join(measured) if measured else "") + \
        ("; " if measured and modelled else "") + \
        (f"placed by {family}'s model (FLOP over the bytes each element must move) for " + ", ".join(modelled)
         if modelled else "")
    title = f"{family} roofline: achieved TFLOP/s against FLOP per byte, {how}"
    out = [svg_open(WIDTH, HEIGHT, title, "roofline"), text(4, 16, f"{family} roofline", font_weight=600,
                                                             font_size=13),
           text(4, 32, _short(how, 150), fill=MUTED, font_size=11, css="placement"),
           plot_group(x, y), x_grid(x, y, log_ticks(x.lo, x.hi), "FLOP per byte (log)"),
           y_grid(x, y, log_ticks(y.lo, y.hi), "achieved TFLOP/s (median, log)")]
    out.append(f'<clipPath id="clip-{e(_id(family))}"><rect x="{LEFT}" y="{TOP}" width="{RIGHT - LEFT}" '
               f'height="{BOTTOM - TOP}"/></clipPath><g clip-path="url(#clip-{e(_id(family))})">')
    parts = [part for r in rows if (part := part_of(r)) is not None]
    level_roofs = {level: max(p.level_peaks[level] for p in parts if level in p.level_peaks)
                   for level in ("l2", "l1") if any(level in p.level_peaks for p in parts)}
    limiters = {r.id: part.limiter for r in rows if (part := part_of(r)) is not None and part.limiter}
    binds = _bindings(points, peaks, bandwidth, limiters, level_roofs)
    legend: list[tuple[str, str, bool]] = []
    for index, (precision, peak) in enumerate(peaks.items()):
        colour = "#111" if index == 0 else LINE_COLOURS[(index + 2) % len(LINE_COLOURS)]
        out += _roof(x, y, precision, peak, bandwidth, colour, binds)
        legend.append((f"{precision_name(precision)} peak {number(peak / 1e12)} TFLOP/s", colour,
                       bool(binds.get(("compute", precision)))))
    if bandwidth:
        out += _memory_roof(x, y, peaks, bandwidth, binds)
        legend.append((f"DRAM {number(bandwidth / 1e12)} TB/s", DRAM_COLOUR,
                       any(binds.get(("DRAM", q)) for q in peaks)))
    for level, level_bandwidth in level_roofs.items():
        name, colour = LEVEL_ROOFS[level]
        out += _memory_roof(x, y, peaks, level_bandwidth, binds, name, colour)
        legend.append((f"{name} {number(level_bandwidth / 1e12)} TB/s (ncu)", colour,
                       any(binds.get((name, q)) for q in peaks)))
    out.append("</g>")
    variants = list(dict.fromkeys(r.variant for r in rows))  # one colour per variant, at every size
    colours = {r.id: LINE_COLOURS[variants.index(r.variant) % len(LINE_COLOURS)] for r in rows}
    out += _points(points, x, y, colours, peaks, bandwidth)
    out += _labels(points, x, y, colours)
    out.append("</g>")
    out += _legend(legend, points, ceilings, bool(level_roofs))
    out.append("</svg>")
    return "".join(out)


def precision_name(precision: str) -> str:
    return FLOP_NAMES.get(precision, precision.upper())


def _id(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name)


def _short(words: str, most: int) -> str:
    return words if len(words) <= most else words[:most - 1] + "…"


def _bound(intensity: float, peak: float, bandwidth: float | None) -> str:
    return "DRAM" if bandwidth and intensity * bandwidth < peak else "compute"


Bindings = dict[tuple[str, str], list[str]]  # ("DRAM" or "compute", precision) -> the variants that roof binds


def _bindings(points: list[Point], peaks: dict[str, float], bandwidth: float | None,
              limiters: dict[str, str] | None = None, level_roofs: dict[str, float] | None = None) -> Bindings:
    """Which roof binds each row, at its DRAM (or model) point: {("DRAM"|"L2"|"L1"|"compute", precision):
    variants}. A row whose ncu part names the limiter the counters show (row_parts.NcuPart.limiter)
    binds that roof where the chart draws it; otherwise the lower of DRAM's slope and the peak."""
    out: dict[tuple[str, str], list[str]] = {}
    drawn = {"dram": "DRAM", "compute": "compute"} | {level: LEVEL_ROOFS[level][0] for level in level_roofs or {}}
    for p in points:
        peak = peaks.get(p.row.precision) or peaks.get("fp32")
        if p.level in ("dram", "model") and peak:
            precision = p.row.precision if p.row.precision in peaks else "fp32"
            roof = drawn.get((limiters or {}).get(p.row.id, "")) or _bound(p.intensity, peak, bandwidth)
            out.setdefault((roof, precision), []).append(p.row.variant)
    return out


def _memory_roof(x: Scale, y: Scale, peaks: dict[str, float], bandwidth: float, binds: Bindings,
                 name: str = "DRAM", colour: str = DRAM_COLOUR) -> list[str]:
    """A memory level's slope (DRAM's from the GPU's datasheet, L2's and L1's from ncu's peaks), shared by
    every precision, up to the highest ridge; bold where it binds a row."""
    end = min(max(peaks.values()) / bandwidth, x.hi) if peaks else x.hi
    if end <= x.lo:
        return []
    who = [v for (roof, _), variants in binds.items() if roof == name for v in variants]
    css = ("roof memory binding" if who else "roof memory") + ("" if name == "DRAM" else f" {name.lower()}")
    dash = "" if name == "DRAM" else ' stroke-dasharray="7 3"'
    return [(f'<line class="{css}" x1="{x(x.lo):.1f}" y1="{y(x.lo * bandwidth / 1e12):.1f}" '
             f'x2="{x(end):.1f}" y2="{y(end * bandwidth / 1e12):.1f}" stroke="{colour}"{dash} '
             f'stroke-width="{BINDING if who else ROOF}"><title>{e(_roof_title(name, who))}</title></line>')]


def _roof(x: Scale, y: Scale, precision: str, peak: float, bandwidth: float | None, colour: str,
          binds: Bindings) -> list[str]:
    """A precision's flat compute roof from its ridge on; bold where it binds a row."""
    ridge = peak / bandwidth if bandwidth else x.lo
    if ridge >= x.hi:
        return []
    who = binds.get(("compute", precision), [])
    css = "roof compute binding" if who else "roof compute"
    return [(f'<line class="{css}" x1="{x(max(ridge, x.lo)):.1f}" y1="{y(peak / 1e12):.1f}" '
             f'x2="{x(x.hi):.1f}" y2="{y(peak / 1e12):.1f}" stroke="{colour}" '
             f'stroke-width="{BINDING if who else ROOF}"><title>'
             f'{e(_roof_title(precision_name(precision) + " compute", who))}</title></line>')]


def _roof_title(roof: str, who: list[str]) -> str:
    return f"{roof} roof" + (f": binds {', '.join(who)}" if who else "")


MARKS = {"dram": "circle", "l2": "square", "l1": "diamond", "model": "ring"}


def _points(points: list[Point], x: Scale, y: Scale, colours: dict[str, str], peaks: dict[str, float],
            bandwidth: float | None) -> list[str]:
    out = []
    by_row: dict[str, list[Point]] = {}
    for p in points:
        by_row.setdefault(p.row.id, []).append(p)
    for row_points in by_row.values():  # a row's levels, joined at its height
        if len(row_points) > 1:
            xs = sorted(x(p.intensity) for p in row_points)
            out.append(f'<line x1="{xs[0]:.1f}" x2="{xs[-1]:.1f}" y1="{y(row_points[0].flops / 1e12):.1f}" '
                       f'y2="{y(row_points[0].flops / 1e12):.1f}" stroke="{colours[row_points[0].row.id]}" '
                       f'stroke-dasharray="3 3" stroke-width="1"/>')
    for p in points:
        px, py, colour = x(p.intensity), y(p.flops / 1e12), colours[p.row.id]
        peak = peaks.get(p.row.precision) or peaks.get("fp32")
        hover = _hover(p, peak, bandwidth)
        data = (f'class="point {p.level}" data-row="{e(p.row.id)}" data-level="{p.level}" '
                f'data-intensity="{p.intensity!r}" data-flops="{p.flops!r}"')
        if p.level == "model":
            shape = f'<circle cx="{px:.1f}" cy="{py:.1f}" r="5" fill="white" stroke="{colour}" stroke-width="2.2"'
        elif p.level == "dram":
            shape = f'<circle cx="{px:.1f}" cy="{py:.1f}" r="5.5" fill="{colour}" stroke="#111" stroke-width="0.6"'
        elif p.level == "l2":
            shape = (f'<rect x="{px - 4.5:.1f}" y="{py - 4.5:.1f}" width="9" height="9" fill="{colour}" '
                     f'stroke="#111" stroke-width="0.6" data-cx="{px:.2f}" data-cy="{py:.2f}"')
        else:
            shape = (f'<path d="M{px:.1f} {py - 6:.1f}L{px + 6:.1f} {py:.1f}L{px:.1f} {py + 6:.1f}L{px - 6:.1f} '
                     f'{py:.1f}Z" fill="{colour}" stroke="#111" stroke-width="0.6" data-cx="{px:.2f}" '
                     f'data-cy="{py:.2f}"')
        out.append(f'<g {data}>{shape}><title>{e(hover)}</title></{shape.split()[0][1:]}></g>')
    return out


def _hover(p: Point, peak: float | None, bandwidth: float | None) -> str:
    where = {"model": "the family's model", "dram": "ncu's DRAM bytes", "l2": "ncu's L2 bytes",
             "l1": "ncu's L1 bytes"}[p.level]
    words = [f"{p.row.variant} ({p.row.precision}): {number(p.flops / 1e12)} TFLOP/s at {number(p.intensity)} FLOP/B",
             f"from {where}: {p.bytes:.3g} B for {(p.flops * _median(p.row)):.3g} FLOP"]
    if peak and p.level in ("dram", "model"):
        roof = min(peak, p.intensity * bandwidth) if bandwidth else peak
        words.append(f"{_bound(p.intensity, peak, bandwidth)}-bound here: {100 * p.flops / roof:.0f} % of the roof "
                     f"({number(roof / 1e12)} TFLOP/s)")
    return "; ".join(words)


def _median(row: Row) -> float:
    return row.timing.summary.median_s if row.timing and row.timing.summary else 0.0


def _labels(points: list[Point], x: Scale, y: Scale, colours: dict[str, str]) -> list[str]:
    """One label per variant, beside its fastest DRAM (or model) point (its other sizes share its colour),
    pushed apart (label_layout.spread)."""
    fastest: dict[str, Point] = {}
    for p in points:
        if p.level in ("dram", "model") and (p.row.variant not in fastest or p.flops > fastest[p.row.variant].flops):
            fastest[p.row.variant] = p
    anchors_of = list(fastest.values())
    names = [p.row.variant + (" (vendor)" if p.row.vendor else "") for p in anchors_of]
    # spread works with y growing upwards: flip the SVG's y
    anchors = [(x(p.intensity), -y(p.flops / 1e12)) for p in anchors_of]
    sizes = [(CHAR_PX * len(n) + 4, 13.0) for n in names]
    area = (float(LEFT), float(-BOTTOM), float(RIGHT), float(-TOP))
    offsets = spread(anchors, sizes, area, [(8.0, 2.0)] * len(anchors))
    out = []
    for (ax, ay), (dx, dy), name, p in zip(anchors, offsets, names, anchors_of):
        lx, base = ax + dx, -(ay + dy) - 3  # the text's baseline: its box's bottom, a little up
        if abs(dx) > 14 or not -4 <= dy <= 14:
            out.append(f'<line x1="{ax:.1f}" y1="{-ay:.1f}" x2="{lx + 2:.1f}" y2="{base - 4:.1f}" stroke="#999" '
                       'stroke-width="0.6"/>')
        out.append(f'<text class="label" x="{lx + 2:.1f}" y="{base:.1f}" fill="{colours[p.row.id]}" font-size="11" '
                   f'paint-order="stroke" stroke="white" stroke-width="3">{e(name)}</text>')
    return out


def _legend(roofs: list[tuple[str, str, bool]], points: list[Point], ceilings: Ceilings | None,
            level_roofs: bool = False) -> list[str]:
    x0, y0 = RIGHT + 24, TOP + 6
    out = [text(x0, y0, "roofs", font_weight=600, font_size=11.5)]
    row = y0 + 18
    for words, colour, binding in roofs:
        out.append(f'<line x1="{x0:.1f}" x2="{x0 + 26:.1f}" y1="{row - 4:.1f}" y2="{row - 4:.1f}" stroke="{colour}" '
                   f'stroke-width="{BINDING if binding else ROOF}"/>')
        out.append(text(x0 + 32, row, words + (" — binds" if binding else ""), font_size=11))
        row += 16
    if not roofs:
        out.append(text(x0, row, "no roofs known for this GPU", fill=MUTED, font_size=11))
        row += 16
    row += 8
    out.append(text(x0, row, "points", font_weight=600, font_size=11.5))
    row += 16
    kinds = {"dram": "measured: FLOP per DRAM byte (ncu)", "l2": "measured: per L2 byte",
             "l1": "measured: per L1 byte", "model": "model: the family's bytes"}
    present = [k for k in ("dram", "l2", "l1", "model") if any(p.level == k for p in points)]
    for kind in present:
        out.append(_legend_mark(kind, x0 + 13, row - 4) + text(x0 + 32, row, kinds[kind], font_size=11))
        row += 16
    if any(p.level in ("l2", "l1") for p in points) and not level_roofs:
        out.append(text(x0, row + 4, "L1/L2 roofs: not in the results file", fill=MUTED, font_size=10.5))
    if ceilings is not None:
        out.append(text(x0, HEIGHT - 42, _short(f"roofs: {ceilings.source}", 46), fill=MUTED, font_size=10.5))
    out.append(text(x0, HEIGHT - 28, "bold: the roof that binds a row", fill=MUTED, font_size=10.5))
    out.append(text(x0, HEIGHT - 14, "hover a point for its numbers", fill=MUTED, font_size=10.5))
    return out


def _legend_mark(kind: str, cx: float, cy: float) -> str:
    if kind == "model":
        return f'<circle cx="{cx}" cy="{cy}" r="4.5" fill="white" stroke="{RUNG_COLOUR}" stroke-width="2"/>'
    if kind == "dram":
        return f'<circle cx="{cx}" cy="{cy}" r="5" fill="{RUNG_COLOUR}"/>'
    if kind == "l2":
        return f'<rect x="{cx - 4.5}" y="{cy - 4.5}" width="9" height="9" fill="{RUNG_COLOUR}"/>'
    return f'<path d="M{cx} {cy - 6}L{cx + 6} {cy}L{cx} {cy + 6}L{cx - 6} {cy}Z" fill="{RUNG_COLOUR}"/>'


def bandwidth_svg(family: str, rows: list[Row], ceilings: Ceilings | None, kind: str) -> str:
    """No FLOPs to place (or bytes across the host link): each row's bandwidth as a bar against the
    roof its rate is judged by: the host link's for "link", DRAM's otherwise."""
    roof = (ceilings.link_bytes_s if kind == "link" else ceilings.bandwidth_bytes_s) if ceilings else None
    roof_name = "host link, one direction" if kind == "link" else "DRAM"
    rates = [(r.derived.rate or 0.0) / 1e9 for r in rows if r.derived]
    height = 70 + 24 * len(rows) + 40
    x = Scale(0.0, max(rates + [roof / 1e9 if roof else 0.0]) * 1.08, 190, 190 + 560)
    y = Scale(0.0, 1.0, 56 + 24 * len(rows), 50)
    title = (f"{family}: bandwidth against the {roof_name} roof" + ("" if roof else " (no roof known for this GPU)")
             + (" — bytes across the host link, not a FLOP roofline" if kind == "link"
                else " — no FLOPs to place on a roofline"))
    out = [svg_open(WIDTH, height, title, "roofline bandwidth"), text(4, 16, title, font_weight=600, font_size=13),
           plot_group(x, y), x_grid(x, y, linear_ticks(x.hi), "GB/s (median), linear axis")]
    for i, r in enumerate(rows):
        top = 56 + 24 * i
        rate = (r.derived.rate or 0.0) / 1e9 if r.derived else 0.0
        share = f" · {100 * rate * 1e9 / roof:.0f} % of the roof" if roof else ""
        out.append(text(182, top + 15, r.variant + (" (vendor)" if r.vendor else ""), "end"))
        out.append(f'<rect class="bar" data-row="{e(r.id)}" x="{x.start:.1f}" y="{top + 4:.1f}" '
                   f'width="{max(1.0, x(rate) - x.start):.1f}" height="15" '
                   f'fill="{VENDOR_COLOUR if r.vendor else RUNG_COLOUR}">'
                   f'<title>{e(f"{r.variant}: {rate:,.1f} GB/s{share}")}'
                   f'</title></rect>')
        out.append(text(x.end + 12, top + 16, f"{number(rate)} GB/s{share}", font_size=11))
    if roof:
        px = x(roof / 1e9)
        out.append(f'<line class="roof binding" x1="{px:.1f}" x2="{px:.1f}" y1="{y.end - 4:.1f}" y2="{y.start:.1f}" '
                   f'stroke="{CEILING_COLOUR}" stroke-width="{BINDING}"><title>{e(roof_name)} roof</title></line>')
        out.append(text(px, y.end - 8, f"{roof_name} roof {number(roof / 1e9)} GB/s", "middle",
                        fill=CEILING_COLOUR, font_size=11))
    out.append("</g></svg>")
    return "".join(out)
