"""The pictures of a results file (matplotlib): a run table's ladder, a family's roofline from its
timed rows, a sweep's rate against its swept defines; each as a figure, an SVG string for the
report page, or a PNG file.

The ladder shows every variant's rate as a bar, in the table's order (the rungs a learner climbs),
with its speedup over the baseline and the vendor, and the ceiling and the vendor's rate as lines.
The roofline places each row at its algorithmic intensity (the family's FLOP count over the bytes
each element must move: what `run` rates against, not ncu's measured DRAM traffic) and its achieved
FLOP/s, under the datasheet roofs of the file's GPU.
"""

from __future__ import annotations

import io
import math
import re
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gpuprof.analysis.ceilings import Ceilings
from gpuprof.analysis.tables import Table
from gpuprof.render.label_layout import annotate_points
from gpuprof.render.roofline_plot import KERNEL_COLOURS, _pyplot
from gpuprof.results import OK, Row, size_label

RUNG_COLOUR, BEST_COLOUR, VENDOR_COLOUR, FAILED_COLOUR = "#4c78a8", "#1f4e79", "#9e9e9e", "#c62828"
CEILING_COLOUR, VENDOR_LINE = "#d95f02", "#555555"
CHARS_PER_INCH = 11  # at 10 pt a wrapped title stays inside the figure
SWEEP_LABEL = re.compile(r"^(?P<base>.*?)\[(?P<defines>[^\]]*)\]$")


def available() -> bool:
    """Whether matplotlib can be imported here (the charts need it; the report's tables do not)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def rate_unit(rate_kind: str) -> tuple[str, float]:
    return ("TFLOP/s", 1e12) if rate_kind == "flop" else ("GB/s", 1e9)


def wrapped(title: str, inches: float) -> str:
    return "\n".join(textwrap.wrap(title, max(30, int(inches * CHARS_PER_INCH))))


def ladder_figure(table: Table) -> Any:
    """Horizontal bars, one per row in table order: its rate, its speedups, the ceiling and vendor lines."""
    plt = _pyplot()
    rows = table.rows
    unit, scale = rate_unit(table.rate_kind)
    rates = [(r.derived.rate / scale) if r.derived and r.derived.rate else None for r in rows]
    known = [v for v in rates if v]
    best = max((i for i, r in enumerate(rows) if rates[i] and not r.vendor), key=lambda i: rates[i] or 0.0,
               default=None)
    width, height = 10.0, 1.3 + 0.42 * len(rows)
    fig, ax = plt.subplots(figsize=(width, height), dpi=110)
    ys = list(range(len(rows)))[::-1]  # the first rung on top
    ceilings = {(r.derived.ceiling_name, r.derived.ceiling_value) for r in rows
                if r.derived and r.derived.ceiling_value and r.derived.ceiling_name}
    tops = known + [value / scale for _, value in ceilings if value]
    # A linear axis from 0, as on the page: on a log axis warptile at 0.91x cuBLAS looked equal to it;
    # each bar's number beside it carries the small rungs.
    for y, row, rate, index in zip(ys, rows, rates, range(len(rows))):
        if rate:
            colour = VENDOR_COLOUR if row.vendor else (BEST_COLOUR if index == best else RUNG_COLOUR)
            ax.barh(y, rate, height=0.62, color=colour, zorder=2)
        else:
            status = row.check.status.upper() if row.check.status != OK else "not timed"
            ax.text(0.005, y, f"  {status}", transform=ax.get_yaxis_transform(), va="center", fontsize=8,
                    color=FAILED_COLOUR, fontweight="bold")
    for number, (name, value) in enumerate(sorted(ceilings, key=lambda c: c[1] or 0.0)):
        ax.axvline(value / scale, color=CEILING_COLOUR, ls=("--", "-.", ":")[number % 3], lw=1.2, zorder=1,
                   label=f"ceiling: {name} {_number(value / scale)} {unit}")
    vendor = next((r for r in rows if r.variant == table.vendor and r.derived and r.derived.rate), None)
    if vendor is not None and vendor.derived is not None and vendor.derived.rate:
        ax.axvline(vendor.derived.rate / scale, color=VENDOR_LINE, ls=":", lw=1.2, zorder=1,
                   label=f"vendor: {vendor.variant} {_number(vendor.derived.rate / scale)} {unit}")
    if known:
        ax.set_xlim(0, max(tops) * 1.45)
    for y, row, rate in zip(ys, rows, rates):
        if rate:
            ax.text(rate, y, " " + _bar_note(row, table), va="center", fontsize=7.5, zorder=3,
                    bbox={"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.85})
    ax.set_yticks(ys)
    ax.set_yticklabels([r.variant + (" (vendor)" if r.vendor else "") for r in rows], fontsize=8.5)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlabel(f"{unit} (median), linear axis from 0", fontsize=8.5)
    ax.grid(True, axis="x", which="both", alpha=0.25, zorder=0)
    sizes = {size_label(r.size) for r in rows}
    title = (f"{table.family.name} ladder — {', '.join(largest_first(sizes))}: {unit} of each variant; "
             f"speedup vs {table.baseline or 'no baseline'} and vs {table.vendor or 'no vendor'}")
    ax.set_title(wrapped(title, width), fontsize=10, loc="left")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.5 / height * 2.2), ncol=3, fontsize=7.5, frameon=False)
    fig.tight_layout()
    return fig


def largest_first(labels: set[str]) -> list[str]:
    """Size labels ('4096x4096x4096'), the largest first."""
    return sorted(labels, key=lambda label: -math.prod(int(x) for x in label.split("x") if x.isdigit()))


def _bar_note(row: Row, table: Table) -> str:
    d = row.derived
    if d is None:
        return ""
    parts = []
    if d.vs_baseline is not None and row.variant != table.baseline:
        parts.append(f"{_ratio(d.vs_baseline)} vs {table.baseline}")
    if d.vs_vendor is not None and not row.vendor:
        parts.append(f"{_ratio(d.vs_vendor)} vs {table.vendor}")
    if d.pct_of_ceiling is not None:
        parts.append(f"{d.pct_of_ceiling:.0f} % of ceiling")
    return " · ".join(parts)


def _ratio(value: float) -> str:
    return f"{value:.3g}×"


def _number(value: float) -> str:
    return f"{value:.3g}" if value < 1000 else f"{value:,.0f}"


def roofline_figure(rows: Sequence[Row], ceilings: Ceilings | None, title: str) -> Any:
    """The family's rows under the roofs of the file's GPU: log-log FLOP/s against FLOP per byte,
    one compute roof per precision the rows use; rows without FLOPs (a transpose, the link copies)
    get the memory roof alone, as bars of their bandwidth against it."""
    timed = [r for r in rows if r.derived and r.derived.rate and r.timing and r.timing.summary]
    with_flop = [r for r in timed if r.flop and r.bytes]
    if with_flop and len(with_flop) == len(timed):
        return _flop_roofline(with_flop, ceilings, title)
    return _bandwidth_roof(timed, ceilings, title)


def _flop_roofline(rows: Sequence[Row], ceilings: Ceilings | None, title: str) -> Any:
    plt = _pyplot()
    width = 8.5
    fig, ax = plt.subplots(figsize=(width, 5.6), dpi=110)
    points = []
    for r in rows:
        median = r.timing.summary.median_s if r.timing and r.timing.summary else None
        if median and r.flop and r.bytes:
            points.append((r.flop / r.bytes, r.flop / median / 1e12, r))
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    bandwidth = ceilings.bandwidth_bytes_s if ceilings else None
    precisions = list(dict.fromkeys(["fp32", *(r.precision for _, _, r in points)]))
    peaks = {q: ceilings.flops[q] for q in precisions if ceilings and ceilings.flops.get(q)}
    ridges = [peak / bandwidth for peak in peaks.values()] if bandwidth else []
    # Axes sized to the points; a ridge within two decades of them is shown too (where the roof bends
    # matters to a point near it), a farther one is left out rather than squeezing the points together.
    near = [r for r in ridges if min(xs) / 100 <= r <= max(xs) * 100]
    lo = min(xs + [r / 2 for r in near]) / 4
    hi = max(xs + [r * 2 for r in near]) * 4
    line_x = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    for index, (precision, peak) in enumerate(peaks.items()):
        roof = [min(peak, x * bandwidth) / 1e12 if bandwidth else peak / 1e12 for x in line_x]
        found = ceilings.ceiling("flop", precision) if ceilings else None
        name = found.name if found else precision
        ax.loglog(line_x, roof, lw=2 if precision == "fp32" else 1.4, color="black" if precision == "fp32" else
                  ["#7570b3", "#1b9e77", "#e7298a", "#66a61e"][index % 4],
                  label=f"{name} {peak / 1e12:.3g} TFLOP/s" + (f", DRAM {bandwidth / 1e12:.3g} TB/s" if bandwidth
                                                                  and precision == "fp32" else ""))
    colours = [KERNEL_COLOURS[i % len(KERNEL_COLOURS)] for i in range(len(points))]
    for (x, y, r), colour in zip(points, colours):
        ax.scatter(x, y, s=36, color=colour, edgecolors="black", linewidths=0.4, zorder=3,
                   marker="s" if r.vendor else "o")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    roof_top = max((min(p, hi * bandwidth) if bandwidth else p) / 1e12 for p in peaks.values()) if peaks else 0.0
    ax.set_ylim(min(ys) / 4, max([*ys, roof_top]) * 2.5)
    sizes = {size_label(r.size) for _, _, r in points}
    annotate_points(ax, [(x, y, r.variant + (f" {size_label(r.size)}" if len(sizes) > 1 else ""))
                         for x, y, r in points], fontsize=7.5, colours=colours)
    ax.set_xlabel("arithmetic intensity (the family's FLOP per byte each element must move)", fontsize=8.5)
    ax.set_ylabel("achieved TFLOP/s (median)", fontsize=8.5)
    ax.grid(True, which="both", alpha=0.25)
    if peaks:
        ax.legend(loc="lower right", fontsize=7.5, title=f"roofs ({ceilings.source})" if ceilings else None,
                  title_fontsize=7)
    ax.set_title(wrapped(title, width), fontsize=10, loc="left")
    fig.tight_layout()
    return fig


def _bandwidth_roof(rows: Sequence[Row], ceilings: Ceilings | None, title: str) -> Any:
    """No FLOPs to place on a roofline: each row's bandwidth as a bar under its memory roof."""
    plt = _pyplot()
    width = 8.5
    fig, ax = plt.subplots(figsize=(width, 1.6 + 0.36 * max(len(rows), 1)), dpi=110)
    kind = rows[0].derived.rate_kind if rows and rows[0].derived else "bytes"
    roof = None
    if ceilings is not None:
        roof = ceilings.link_bytes_s if kind == "link" else ceilings.bandwidth_bytes_s
    ys = list(range(len(rows)))[::-1]
    for y, r in zip(ys, rows):
        rate = r.derived.rate / 1e9 if r.derived and r.derived.rate else 0.0
        ax.barh(y, rate, height=0.6, color=VENDOR_COLOUR if r.vendor else RUNG_COLOUR, zorder=2)
        share = f"  {100 * rate * 1e9 / roof:.0f} % of the roof" if roof else ""
        ax.text(rate, y, share, va="center", fontsize=7.5)
    if roof:
        ax.axvline(roof / 1e9, color=CEILING_COLOUR, ls="--", lw=1.4,
                   label=f"{'host link' if kind == 'link' else 'DRAM'} roof {roof / 1e9:,.0f} GB/s")
        ax.legend(loc="lower right", fontsize=7.5)
    ax.set_xlim(0, max([roof / 1e9 if roof else 0.0] + [(r.derived.rate or 0.0) / 1e9 for r in rows if r.derived])
                * 1.25 or 1.0)
    ax.set_yticks(ys)
    ax.set_yticklabels([r.variant for r in rows], fontsize=8.5)
    ax.set_xlabel("GB/s (median)", fontsize=8.5)
    ax.grid(True, axis="x", alpha=0.25)
    ax.set_title(wrapped(title + " — no FLOPs: the memory roof alone", width), fontsize=10, loc="left")
    fig.tight_layout()
    return fig


def sweep_groups(rows: Sequence[Row]) -> dict[tuple[str, str, str], list[Row]]:
    """Rows of a suite [[sweep]] ("swizzled[BM=128,BK=8]"), by (family, variant, size), where a
    variant ran with at least two sets of defines."""
    groups: dict[tuple[str, str, str], list[Row]] = {}
    for r in rows:
        match = SWEEP_LABEL.match(r.variant)
        if match and r.defines:
            groups.setdefault((r.family, match["base"], size_label(r.size)), []).append(r)
    return {key: members for key, members in groups.items() if len(members) >= 2}


def sweep_figure(rows: Sequence[Row], references: Sequence[Row], title: str) -> Any:
    """Rate against the swept defines: a line over the one define that varies, else every
    configuration as a bar, fastest on top. references: the same table's other rows (the vendor),
    drawn as lines to beat."""
    plt = _pyplot()
    kind = next((r.derived.rate_kind for r in rows if r.derived), "bytes")
    unit, scale = rate_unit(kind)
    varying = sorted({k for r in rows for k in r.defines if len({s.defines.get(k) for s in rows}) > 1})
    width = 9.0
    rated = [(r, r.derived.rate / scale) for r in rows if r.derived and r.derived.rate]
    if len(varying) == 1:
        name = varying[0]
        fig, ax = plt.subplots(figsize=(width, 4.6), dpi=110)
        line = sorted((r.defines[name], rate) for r, rate in rated)
        ax.plot([x for x, _ in line], [y for _, y in line], marker="o", color=RUNG_COLOUR, lw=1.6)
        ax.set_xlabel(name, fontsize=9)
        ax.set_ylabel(f"{unit} (median)", fontsize=9)
        if len({x for x, _ in line}) > 2 and max(x for x, _ in line) / max(min(x for x, _ in line), 1) >= 8:
            ax.set_xscale("log", base=2)
        draw_ref = ax.axhline
    else:
        ordered = sorted(rated, key=lambda pair: -pair[1])
        fig, ax = plt.subplots(figsize=(width, 1.4 + 0.3 * len(ordered)), dpi=110)
        ys = list(range(len(ordered)))[::-1]
        ax.barh(ys, [rate for _, rate in ordered], height=0.6,
                color=[BEST_COLOUR if i == 0 else RUNG_COLOUR for i in range(len(ordered))], zorder=2)
        ax.set_yticks(ys)
        ax.set_yticklabels([",".join(f"{k}={r.defines[k]}" for k in varying) for r, _ in ordered], fontsize=7.5)
        ax.set_xlabel(f"{unit} (median)", fontsize=9)
        draw_ref = ax.axvline
    for r in references:
        if r.derived and r.derived.rate:
            draw_ref(r.derived.rate / scale, color=VENDOR_LINE if r.vendor else CEILING_COLOUR, ls=":", lw=1.2,
                     label=f"{r.variant} {r.derived.rate / scale:.3g} {unit}")
    if any(r.derived and r.derived.rate for r in references):
        ax.legend(loc="best", fontsize=7.5)
    ax.grid(True, alpha=0.25, zorder=0)
    ax.set_title(wrapped(title, width), fontsize=10, loc="left")
    fig.tight_layout()
    return fig


def svg_text(fig: Any) -> str:
    """The figure as an inline <svg> element (text kept as text), and the figure closed."""
    plt = _pyplot()
    buffer = io.StringIO()
    with plt.rc_context({"svg.fonttype": "none", "svg.hashsalt": "gpuprof"}):
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    plt.close(fig)
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def save_png(fig: Any, path: Path) -> Path:
    """The figure as a PNG carrying gpuprof's mark (files.is_own), written atomically."""
    from gpuprof.render.roofline_plot import save_figure

    return save_figure(fig, path.with_suffix(".png") if path.suffix.lower() != ".png" else path)


def slug(text: str) -> str:
    """A file-name-safe form of a table's or family's name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "x"


def finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)
