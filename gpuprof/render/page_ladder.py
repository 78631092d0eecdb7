"""A run table's ladder on the report page, as inline SVG: one bar per rung (the table's variants
that are not the vendor's, in table order) on a LINEAR rate axis from 0, so the last rungs, where
the work is, are told apart; the spread of its timing samples as an error bar (the rate at the
samples' 25th and 75th percentile times); the vendor rows and the ceiling as vertical reference
lines, not bars among the rungs. Beside each bar its rate, median time, speedups and throttled
samples; under it the step in one line: what changed from the rung before and which limiter moved
(ladder.py's verdicts, from the row's ncu counters), else the variant's technique."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpuprof.analysis import part_ladder
from gpuprof.analysis.ceilings import Ceilings
from gpuprof.analysis.ladder import Rung
from gpuprof.analysis.tables import Table
from gpuprof.render import units
from gpuprof.render.page_svg import (
    AXIS,
    BEST_COLOUR,
    CEILING_COLOUR,
    FAILED_COLOUR,
    MUTED,
    RUNG_COLOUR,
    VENDOR_COLOUR,
    WARN_COLOUR,
    Scale,
    e,
    linear_ticks,
    number,
    plot_group,
    svg_open,
    text,
    x_grid,
)
from gpuprof.results import OK, Row, size_label
from gpuprof.row_parts import NcuPart

WIDTH, LABEL, BARS, TOP = 1180, 170, 440, 46  # px: the chart, the name column, the bar area, above the rungs
ROW = 40  # a rung: its bar, then its step in words
LABEL_CHAR_PX = 6.0  # width of a character of an 11 px name, to keep names apart
OFF_SCALE = 1.6  # a reference line beyond this many times the fastest rung is marked at the edge instead


def rate_unit(rate_kind: str) -> tuple[str, float]:
    return ("TFLOP/s", 1e12) if rate_kind == "flop" else ("GB/s", 1e9)


def rate_range(row: Row) -> tuple[float, float] | None:
    """The row's rate at its samples' 75th and 25th percentile times: its spread as a rate."""
    summary = row.timing.summary if row.timing else None
    rate = row.derived.rate if row.derived else None
    if not rate or summary is None or not summary.p25_s or not summary.p75_s:
        return None
    return rate * summary.median_s / summary.p75_s, rate * summary.median_s / summary.p25_s


def throttled(row: Row) -> str:
    """'3/26 throttled' where NVML saw clock caps during the row's samples, as the terminal says it."""
    timing = row.timing
    if timing is None or not timing.throttled_count:
        return ""
    return f"{timing.throttled_count}/{len(timing.throttled)} throttled"


@dataclass(frozen=True)
class Step:
    """One rung's step in words, and where the words came from ("ncu" or "technique")."""

    words: str
    source: str


def steps(rows: list[Row], part_of: Callable[[Row], NcuPart | None], ceilings: Ceilings | None) -> dict[str, Step]:
    """Per rung (by row id), its step in one line. Rows with ncu counters are explained against the
    rung before that has them (ladder.changes); the others by their technique."""
    measured = [(r, p) for r in rows if (p := part_of(r)) is not None and not p.error and p.duration_ns]
    explained: dict[str, Step] = {}
    if measured:
        peaks = [ceilings.flops.get(r.precision) if ceilings and r.flop else None for r, _ in measured]
        built = part_ladder.rungs([(r.variant, p, peak) for (r, p), peak in zip(measured, peaks)])
        for (row, _), rung, first in zip(measured, built, [True] + [False] * (len(built) - 1)):
            explained[row.id] = Step(step_words(rung, first), "ncu")
    for row in rows:
        if row.id not in explained and row.technique:
            explained[row.id] = Step(row.technique, "technique")
    return explained


def step_words(rung: Rung, first: bool) -> str:
    limiter = f"limiter {rung.measured_limiter}" + (f" ({rung.measured})" if rung.measured else "") \
        if rung.measured_limiter else ""
    parts = ["first rung" if first else ", ".join(w for w in rung.changes if not w.startswith("limiter "))]
    moved = next((w for w in rung.changes if w.startswith("limiter ")), "")
    parts.append(f"{moved}: {rung.measured}" if moved and rung.measured else moved or limiter)
    if rung.top_stall:
        parts.append(f"top stall {rung.top_stall}")
    return " · ".join(p for p in parts if p)


def ladder_svg(table: Table, explained: dict[str, Step], ceilings: Ceilings | None) -> str:
    """The table's ladder; "" where no rung has a rate (the caller says why in words)."""
    unit, scale = rate_unit(table.rate_kind)
    rungs = [r for r in table.rows if not r.vendor]
    vendors = [r for r in table.rows if r.vendor and r.derived and r.derived.rate]
    rated = [r for r in rungs if r.derived and r.derived.rate]
    if not rated:
        return ""
    best = max(rated, key=lambda r: r.derived.rate if r.derived and r.derived.rate else 0.0)
    tops = [(rate_range(r) or (0.0, r.derived.rate))[1] / scale for r in rated if r.derived and r.derived.rate]
    fastest = max(tops)
    references = [(f"{v.variant} (vendor)", v.derived.rate / scale, VENDOR_COLOUR, v.id)
                  for v in vendors if v.derived and v.derived.rate]
    for name, value in _ceilings(table, ceilings):
        references.append((f"ceiling: {name}", value / scale, CEILING_COLOUR, ""))
    shown = [value for _, value, _, _ in references if value <= fastest * OFF_SCALE]
    head = TOP + 13 * max(len(references) - 1, 0)  # room above the rungs for the reference lines' names
    height = head + ROW * len(rungs) + 44
    x = Scale(0.0, max([fastest, *shown]) * 1.04, LABEL, LABEL + BARS)
    y = Scale(0.0, 1.0, head + ROW * len(rungs), head - 6)
    sizes = size_label(main_size(table))
    title = f"{table.family.name} ladder at {sizes}: {unit} per rung (median; bar ends: p25–p75 of the samples)"
    parts = [svg_open(WIDTH, height, title, "ladder"), text(4, 16, title, font_weight=600, font_size=13),
             plot_group(x, y), x_grid(x, y, linear_ticks(x.hi), f"{unit} (median), linear axis from 0")]
    for i, row in enumerate(rungs):
        parts.append(_rung(row, head + i * ROW, x, unit, scale, row is best, table, explained.get(row.id)))
    parts += _references(references, x, y, fastest, unit)
    parts.append("</g></svg>")
    return "".join(parts)


def main_size(table: Table) -> dict[str, int]:
    """The size most of the table's rows ran at (a capped slow variant ran smaller)."""
    labels = [size_label(r.size) for r in table.rows]
    common = max(set(labels), key=labels.count)
    return table.rows[labels.index(common)].size


def _ceilings(table: Table, ceilings: Ceilings | None) -> list[tuple[str, float]]:
    """The ceilings the rungs are judged against, one per precision among them (a BF16 ladder that
    starts from an FP32 rung has both); the rate kind's own where no rung carries one."""
    found = {(d.ceiling_name or "", d.ceiling_value) for r in table.rows if not r.vendor and (d := r.derived)
             and d.ceiling_value and d.ceiling_name}
    if found:
        return sorted(((name, value) for name, value in found if value), key=lambda c: c[1])
    own = ceilings.ceiling(table.rate_kind) if ceilings else None
    return [(own.name, own.value)] if own and own.value else []


def _rung(row: Row, top: float, x: Scale, unit: str, scale: float, best: bool, table: Table,
          step: Step | None) -> str:
    capped = f"at {size_label(row.size)} (its size is capped) · " if row.size != main_size(table) else ""
    name = text(LABEL - 8, top + 14, row.variant, "end", font_weight=600 if best else 400)
    rate = row.derived.rate / scale if row.derived and row.derived.rate else None
    out = [f'<g class="rung" data-row="{e(row.id)}">', name]
    if rate is None:
        status = row.check.status.upper() if row.check.status != OK else "not timed"
        why = "; ".join(row.check.reasons)[:120]
        out.append(text(LABEL + 4, top + 14, status + (f": {why}" if why else ""), fill=FAILED_COLOUR, font_weight=700))
    else:
        colour = BEST_COLOUR if best else RUNG_COLOUR
        summary = row.timing.summary if row.timing else None
        hover = (f"{row.variant}: {number(rate)} {unit}"
                 + (f", median {units.seconds(summary.median_s)}, p25–p75 {units.seconds(summary.p25_s)} – "
                    f"{units.seconds(summary.p75_s)}, {summary.n} samples" if summary else ""))
        out.append(f'<rect class="bar" x="{x.start:.1f}" y="{top + 4:.1f}" width="{max(1.0, x(rate) - x.start):.1f}" '
                   f'height="14" fill="{colour}" data-rate="{rate!r}"><title>{e(hover)}</title></rect>')
        spread = rate_range(row)
        if spread is not None:
            lo, hi = x(spread[0] / scale), x(spread[1] / scale)
            out.append(f'<g class="errorbar" stroke="#111" stroke-width="1.3" data-low="{spread[0] / scale!r}" '
                       f'data-high="{spread[1] / scale!r}"><line x1="{lo:.1f}" x2="{hi:.1f}" y1="{top + 11:.1f}" '
                       f'y2="{top + 11:.1f}"/>'
                       f'<line x1="{lo:.1f}" x2="{lo:.1f}" y1="{top + 6:.1f}" y2="{top + 16:.1f}"/>'
                       f'<line x1="{hi:.1f}" x2="{hi:.1f}" y1="{top + 6:.1f}" y2="{top + 16:.1f}"/></g>')
        out.append(_numbers(row, rate, unit, table, top))
    if step is not None or capped:
        words = capped + (step.words if step is not None else "")
        words = words if len(words) <= 150 else words[:149] + "…"
        source = step.source if step is not None else "size"
        out.append(text(LABEL + 4, top + 32, words, fill=MUTED if source == "technique" else AXIS,
                        font_size=11, css=f"step {source}", paint_order="stroke", stroke="white",
                        stroke_width=3))
    out.append("</g>")
    return "".join(out)


def _numbers(row: Row, rate: float, unit: str, table: Table, top: float) -> str:
    """Rate, median time, speedups, % of ceiling and throttled samples, in the column right of the bars."""
    d = row.derived
    summary = row.timing.summary if row.timing else None
    words = [f"{number(rate)} {unit}"]
    if summary:
        words.append(units.seconds(summary.median_s))
    if d and d.vs_baseline is not None and table.baseline and row.variant != table.baseline:
        words.append(f"{d.vs_baseline:.3g}× {table.baseline}")
    if d and d.vs_vendor is not None and table.vendor:
        words.append(f"{d.vs_vendor:.3g}× {table.vendor}")
    if d and d.pct_of_ceiling is not None:
        words.append(f"{d.pct_of_ceiling:.0f} % of ceiling")
    throttle = throttled(row)
    warning = f' · <tspan class="throttled" fill="{WARN_COLOUR}" font-weight="600">{e(throttle)}</tspan>' \
        if throttle else ""
    return (f'<text x="{LABEL + BARS + 14:.1f}" y="{top + 15:.1f}" fill="#1d1d1f">{e(" · ".join(words))}'
            f"{warning}</text>")


def _references(references: list[tuple[str, float, str, str]], x: Scale, y: Scale, fastest: float,
                unit: str) -> list[str]:
    """Vertical lines across the rungs, named above the plot (names that would overlap stacked upwards);
    a line far beyond the fastest rung is an arrow at the right edge with its value."""
    out = []
    taken: list[list[tuple[float, float]]] = []  # per level above the plot, the x spans of names there
    for name, value, colour, row_id in sorted(references, key=lambda ref: ref[1]):
        off = value > fastest * OFF_SCALE
        label = f"{name} {number(value)} {unit}" + (" →" if off else "")
        px = x.end if off else x(value)
        width = LABEL_CHAR_PX * len(label)
        span = (px - width, px) if off else (px - width / 2, px + width / 2)
        level = next((i for i, spans in enumerate(taken) if all(span[1] + 6 < a or span[0] - 6 > b
                                                                  for a, b in spans)), len(taken))
        if level == len(taken):
            taken.append([])
        taken[level].append(span)
        data = f' data-row="{e(row_id)}"' if row_id else ""
        words = text(px, y.end - 6 - 13 * level, label, "end" if off else "middle", fill=colour, font_size=11)
        if off:
            out.append(f'<g class="reference off-scale"{data} data-rate="{value!r}">{words}</g>')
            continue
        out.append(f'<g class="reference"{data} data-rate="{value!r}"><line x1="{px:.1f}" x2="{px:.1f}" '
                   f'y1="{y.end - 2:.1f}" y2="{y.start:.1f}" stroke="{colour}" stroke-width="1.6" '
                   f'stroke-dasharray="5 3"><title>{e(label)}</title></line>{words}</g>')
    return out
