"""render.roofline_plot's hierarchical rooflines: what matplotlib draws (the figure's objects, not its
pixels), on the three matmul kernels recorded under `ncu --set full` and on made-up points."""

from __future__ import annotations

import pytest

from gpuprof.analysis import roofline
from gpuprof.analysis.roofline import LevelBound, LevelPoint
from gpuprof.render import roofline_plot
from tests.ncu_full_reports import kernel_rows, requires_ncu_report

matplotlib = pytest.importorskip("matplotlib")


def inside_the_figure(fig, artist) -> bool:
    fig.canvas.draw()
    box, frame = artist.get_window_extent(), fig.bbox
    return box.x0 >= frame.x0 and box.x1 <= frame.x1 and box.y0 >= frame.y0 and box.y1 <= frame.y1


@requires_ncu_report
def test_one_panel_three_roofs_and_every_level_point(tmp_path):
    points = [roofline.point(name, [row]) for name, row in kernel_rows().items()]
    levels = [p.levels for p in points]
    fig = roofline_plot.level_figure(levels, "matmul roofline by memory level (peaks: ncu's metrics at the "
                                             "profiled clocks, H100 80GB HBM3, Nsight Compute 2025.3.1)")
    (ax,) = fig.axes  # FP32 does most of every kernel's work: one panel
    roofs = [line for line in ax.get_lines() if line.get_gid() == "roof"]
    # L1 and the L1 data pipe share one roof (both 128 B per cycle per SM), then L2, DRAM, the FP32 peak.
    assert sorted(line.get_label().split(" ")[0] for line in roofs) == ["DRAM", "FP32", "L1", "L2"]
    peak = next(line for line in roofs if line.get_label().startswith("FP32"))
    assert max(peak.get_ydata()) == pytest.approx(levels[0].peak_flops / 1e12, rel=1e-3)
    # Each kernel: one point per level, all at its achieved FLOP/s, joined by one line.
    drawn = sorted((round(float(x), 6), round(float(y), 6)) for c in ax.collections for x, y in c.get_offsets())
    expected = sorted((round(b.intensity, 6), round(p.flops / 1e12, 6)) for p in levels for b in p.levels)
    assert len(ax.collections) == 3 * 4 and drawn == expected
    assert len([line for line in ax.get_lines() if line.get_gid() == "kernel"]) == 3
    # Labels in legends, none beside the points; the title and the legend stay inside the figure.
    assert len(ax.texts) == 0
    (legend,) = fig.legends
    labels = [t.get_text() for t in legend.get_texts()]
    assert "matmul_naive: L1-bound (96 % of that roof)" in labels
    assert "matmul_warptile: compute-bound (70 % of peak)" in labels
    assert inside_the_figure(fig, fig._suptitle) and inside_the_figure(fig, legend)
    path = roofline_plot.save_roofline(points, roofline.roof_from_rows(list(kernel_rows().values())),
                                       tmp_path / "levels.png", "matmul roofline")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_one_panel_per_precision():
    def p(label: str, precision: str, peak: float) -> LevelPoint:
        return LevelPoint(label, precision, 1e12, peak, (LevelBound("L2", 1.0, 10e12, 10e12),
                                                         LevelBound("DRAM", 10.0, 3e12, 30e12)))

    fig = roofline_plot.level_figure([p("a", "fp32", 60e12), p("b", "fp64", 30e12), p("c", "fp32", 60e12)], "t")
    assert [ax.get_title().split(":")[0] for ax in fig.axes] == ["FP32", "FP64"]
    assert [len(ax.collections) for ax in fig.axes] == [4, 2]
