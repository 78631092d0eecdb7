"""The roofline as a PNG or SVG (matplotlib).

With the hierarchical data (docs/tools.md, "ncu: hierarchical roofline"): one panel per precision
that does most of some kernel's work, one roof per memory level, and each kernel's points at its
intensity at every level, all at the same height (its achieved FLOP/s). Without it: the DRAM roof
per precision and one labelled point per variant.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from gpuprof.analysis.roofline import PRECISION_NAMES, LevelPoint, Point, Roof
from gpuprof.errors import EnvironmentProblem, UsageError
from gpuprof.render.label_layout import annotate_points

# The roofs, in the order a load meets the levels. The L1 data pipe moves 128 bytes a cycle like
# the L1 writeback, so both sit under one roof unless their peaks differ.
LEVEL_STYLE = {  # level -> (roof colour, point marker, legend words)
    "L1 pipe": ("#1b9e77", "D", "L1 data pipe"),
    "L1": ("#1b9e77", "o", "L1"),
    "L2": ("#7570b3", "s", "L2"),
    "DRAM": ("#d95f02", "^", "DRAM"),
}
# No green, purple or orange: those are the roofs'.
KERNEL_COLOURS = ("#1f77b4", "#d62728", "#e377c2", "#8c564b", "#17becf", "#bcbd22", "#7f7f7f", "#000080")
TITLE_CHARS_PER_INCH = 11  # at 10 pt: a wrapped title stays inside the figure
PANEL_INCHES = 6.0


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise EnvironmentProblem("--plot needs matplotlib: pip install 'gpuprof[plot]'") from None
    return plt


def plot_metadata(path: Path) -> dict[str, str]:
    """gpuprof's mark in a plot it writes (files.is_own knows it again): PNG's Software, SVG's Creator."""
    from gpuprof.files import PLOT_SOFTWARE

    return {"Creator": PLOT_SOFTWARE} if path.suffix.lower() in (".svg", ".pdf") else {"Software": PLOT_SOFTWARE}


def save_roofline(points: list[Point], roof: Roof, path: Path, title: str) -> Path:
    """The hierarchical rooflines where the points carry them, else the DRAM roofline; the title
    says whose peaks the roofs are."""
    if not path.parent.is_dir():
        raise UsageError(f"--plot {path}: directory {path.parent} does not exist")
    levels = [p.levels for p in points if p.levels is not None]
    if levels:
        fig = level_figure(levels, f"{title} by memory level (peaks: ncu's metrics at the profiled clocks)")
    else:
        fig = dram_figure(points, roof, f"{title} ({roof.source})")
    return save_figure(fig, path)


def save_figure(fig: Any, path: Path) -> Path:
    """The figure in the format its suffix names, written atomically (files.atomic_write_bytes: never
    through a link, an old plot's mode kept), with gpuprof's mark; the figure closed."""
    import io

    from gpuprof.files import atomic_write_bytes

    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format=path.suffix.lower().lstrip(".") or "png", metadata=plot_metadata(path))
    finally:
        _pyplot().close(fig)
    return atomic_write_bytes(path, buffer.getvalue())


def dram_figure(points: list[Point], roof: Roof, title: str) -> Any:
    plt = _pyplot()
    # One compute roof per precision the points use (FP32 always): a TF32 GEMM sits under the TF32 one.
    precisions = list(dict.fromkeys(["fp32", *(p.precision for p in points if roof.peak(p.precision))]))
    ridges = [r for q in precisions if (r := roof.ridge_for(q))]
    xs = [p.intensity for p in points]
    # Axes sized to the points; a ridge within two decades of them is shown too, a farther one left out.
    near = [r for r in ridges if min(xs) / 100 <= r <= max(xs) * 100] if xs else ridges
    lo = min(xs + [r / 2 for r in near]) / 4
    hi = max(xs + [r * 2 for r in near]) * 4
    line_x = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    fig, ax = plt.subplots(figsize=(8, 5.5), dpi=120)
    for q in precisions:
        ax.loglog(line_x, [(roof.attainable(x, q) or 0) / 1e12 for x in line_x], lw=2,
                  color="black" if q == "fp32" else None,
                  label=f"roof: DRAM, {roof.name(q)} {(roof.peak(q) or 0.0) / 1e12:.1f} TFLOP/s")
        if ridge := roof.ridge_for(q):
            ax.axvline(ridge, color="grey", ls=":", lw=1)
    colours = [KERNEL_COLOURS[i % len(KERNEL_COLOURS)] for i in range(len(points))]
    for p, colour in zip(points, colours):
        ax.scatter(p.intensity, p.flops / 1e12, s=40, zorder=3, color=colour, edgecolors="black", linewidths=0.4)
    if points:
        top = max([p.flops for p in points] + [roof.attainable(hi, q) or 0.0 for q in precisions]) / 1e12
        ax.set_xlim(lo, hi)
        ax.set_ylim(min(p.flops for p in points) / 1e12 / 4, top * 2.5)
    annotate_points(ax, [(p.intensity, p.flops / 1e12, p.label) for p in points], fontsize=8, colours=colours)
    ax.set_xlabel("arithmetic intensity (FLOP per DRAM byte)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(_wrapped(title, 8), fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return fig


def level_figure(points: list[LevelPoint], title: str) -> Any:
    """One panel per precision; its roofs are the highest peaks among its points (each kernel ran
    at the clocks of its own moment, and a roof must sit above every point). The legends sit right
    of the panels, the figure as wide as they need."""
    plt = _pyplot()
    precisions = list(dict.fromkeys(p.precision for p in points))
    panels, height = PANEL_INCHES * len(precisions), 5.4
    fig, axes = plt.subplots(1, len(precisions), figsize=(panels + 3.0, height), dpi=120, squeeze=False)
    colours = {label: KERNEL_COLOURS[i % len(KERNEL_COLOURS)]
               for i, label in enumerate(dict.fromkeys(p.label for p in points))}
    for ax, precision in zip(axes[0], precisions):
        _level_panel(ax, [p for p in points if p.precision == precision], colours)
    handles = [plt.Line2D([], [], color=colours[p.label], marker="o", ls="--", lw=1,
                          label=f"{p.label}: {'latency' if p.far_from_every_roof else p.bound}-bound "
                                f"({100 * p.fraction:.0f} % of "
                                f"{'peak' if p.bound == 'compute' else 'that roof'})")
               for p in points]
    handles += [plt.Line2D([], [], color="black", marker=LEVEL_STYLE[level][1], ls="none", label=LEVEL_STYLE[level][2])
                for level in _levels_of(points)]
    legend = fig.legend(handles=handles, loc="upper left", fontsize=8, title="kernels (colour), levels (marker)",
                        title_fontsize=8, frameon=False)
    fig.canvas.draw()  # measure the legend, then make room for it
    width = panels + legend.get_window_extent().width / fig.dpi + 0.3
    fig.set_size_inches(width, height)
    legend.set_bbox_to_anchor((panels / width, 0.9), transform=fig.transFigure)
    fig.suptitle(_wrapped(title, width), fontsize=10)
    fig.tight_layout(rect=(0, 0, panels / width, 0.93))
    return fig


def _level_panel(ax: Any, points: list[LevelPoint], colours: dict[str, str]) -> None:
    peak = max(p.peak_flops for p in points)
    bandwidth: dict[str, float] = {}
    for p in points:
        for b in p.levels:
            bandwidth[b.level] = max(bandwidth.get(b.level, 0.0), b.bandwidth)
    # L1 data pipe and L1 writeback share one roof when their peaks agree (they do on the H100).
    roofs = {level: bw for level, bw in bandwidth.items()
             if not (level == "L1 pipe" and abs(bw - bandwidth.get("L1", 0.0)) <= 0.01 * bw)}
    intensities = [b.intensity for p in points for b in p.levels] + [peak / bw for bw in roofs.values()]
    lo, hi = min(intensities) / 4, max(intensities) * 4
    for level, bw in roofs.items():
        colour, _, words = LEVEL_STYLE[level]
        if level == "L1" and "L1 pipe" in bandwidth and "L1 pipe" not in roofs:
            words = "L1 and L1 data pipe"
        ridge = peak / bw
        ax.loglog([lo, ridge], [lo * bw / 1e12, peak / 1e12], color=colour, lw=2,
                  label=f"{words} {bw / 1e12:.3g} TB/s", gid="roof")
    ax.axhline(peak / 1e12, color="black", lw=2, label=f"{PRECISION_NAMES.get(points[0].precision)} peak "
                                                        f"{peak / 1e12:.3g} TFLOP/s", gid="roof")
    for p in points:
        xs = [b.intensity for b in p.levels]
        ax.plot(xs, [p.flops / 1e12] * len(xs), color=colours[p.label], ls="--", lw=0.8, gid="kernel")
        for b in p.levels:
            ax.scatter(b.intensity, p.flops / 1e12, s=45, marker=LEVEL_STYLE[b.level][1], color=colours[p.label],
                       edgecolors="black", linewidths=0.5, zorder=3)
    ax.set_xlim(lo, hi)
    low = min(min(p.flops for p in points), lo * min(roofs.values())) / 1e12
    ax.set_ylim(low / 2, peak / 1e12 * 2)
    ax.set_xlabel("arithmetic intensity (FLOP per byte at each level)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(f"{PRECISION_NAMES.get(points[0].precision)}: roofs per memory level", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize=7)


def _levels_of(points: list[LevelPoint]) -> list[str]:
    present = {b.level for p in points for b in p.levels}
    return [level for level in LEVEL_STYLE if level in present]


def _wrapped(title: str, inches: float) -> str:
    return "\n".join(textwrap.wrap(title, max(30, int(inches * TITLE_CHARS_PER_INCH))))
