"""render.charts and render.label_layout on the recorded H100 results: what matplotlib draws
(labels that never overlap, titles inside the figure, axes around the points), not its pixels."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from gpuprof.analysis.roofline import Point, Roof
from gpuprof.commands import show
from gpuprof.render import charts, roofline_plot
from gpuprof.render.label_layout import text_extent

matplotlib = pytest.importorskip("matplotlib")


def boxes(fig, texts):
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    return [text_extent(t, renderer) for t in texts]


def overlapping(fig, texts) -> list[tuple[str, str]]:
    found = []
    for (a, box_a), (b, box_b) in itertools.combinations(zip(texts, boxes(fig, texts)), 2):
        if box_a.overlaps(box_b):
            found.append((a.get_text(), b.get_text()))
    return found


def inside(fig, artist) -> bool:
    fig.canvas.draw()
    box, frame = artist.get_window_extent(), fig.bbox
    return box.x0 >= frame.x0 - 1 and box.x1 <= frame.x1 + 1 and box.y0 >= frame.y0 - 1 and box.y1 <= frame.y1 + 1


def test_dram_roofline_labels_of_nearby_points_do_not_overlap(tmp_path):
    """cublas and warptile sit almost on one spot (the issue's picture printed them on top of each other)."""
    roof = Roof(66.9e12, 3.35e12, "datasheet H100 SXM5, with a long source name that wraps " * 3)
    points = [Point("matmul_cublas", 680.0, 51.7e12), Point("matmul_warptile", 682.0, 46.3e12),
              Point("matmul_swizzled", 681.0, 47.0e12), Point("matmul_multistage", 679.0, 46.9e12),
              Point("matmul_naive", 680.0, 0.5e12)]
    fig = roofline_plot.dram_figure(points, roof, "matmul roofline " + "(a long title) " * 12)
    (ax,) = fig.axes
    assert len(ax.texts) == len(points)
    fig.savefig(tmp_path / "roofline.png")
    assert overlapping(fig, ax.texts) == []
    assert inside(fig, ax.title)
    low, high = ax.get_xlim()
    assert low < 679.0 and high > 682.0 and high / low < 1e4  # sized to the points and the ridge near them


def test_ladder_chart_of_the_recorded_matmul_run(fixtures_dir):
    report = show.show(fixtures_dir / "results" / "h100_matmul_all.json")
    (table,) = report.tables
    fig = charts.ladder_figure(table)
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "naive", "smem_tiled", "multistage", "swizzled", "warptile", "cublas (vendor)", "cublas_tf32 (vendor)"]
    assert len(ax.patches) == 7  # one bar per row
    # linear from 0 although naive to cuBLAS TF32 spans 800x: on a log axis warptile (0.91x cuBLAS)
    # and cuBLAS looked equal; each bar's number beside it carries the small rungs
    assert ax.get_xscale() == "linear" and ax.get_xlim()[0] == 0
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(label.startswith("ceiling: FP32") for label in labels)
    assert any(label.startswith("vendor: cublas") for label in labels)
    notes = [t.get_text() for t in ax.texts]
    assert any("vs naive" in n and "vs cublas" in n for n in notes)
    assert inside(fig, ax._left_title)


def test_ladder_marks_a_failed_row_instead_of_a_bar(fixtures_dir):
    report = show.show(fixtures_dir / "results" / "h100_matmul_all.json")
    (table,) = report.tables
    rows = list(table.rows)
    rows[1] = replace(rows[1], check=replace(rows[1].check, status="wrong"), derived=None)
    fig = charts.ladder_figure(replace(table, rows=rows))
    (ax,) = fig.axes
    assert len(ax.patches) == 6 and any("WRONG" in t.get_text() for t in ax.texts)


def test_roofline_from_rows_and_the_bandwidth_roof(fixtures_dir):
    report = show.show(fixtures_dir / "results" / "smoke_a.json")
    tables = {t.family.name: t for t in report.tables}
    fig = charts.roofline_figure(tables["matmul"].rows, report.ceilings, "matmul roofline")
    (ax,) = fig.axes
    assert ax.get_xscale() == "log" and len(ax.collections) == 3 and overlapping(fig, ax.texts) == []
    no_flops = [replace(r, flop=0.0) for r in tables["vecadd"].rows]
    fig = charts.roofline_figure(no_flops, report.ceilings, "vecadd")
    (ax,) = fig.axes
    assert "memory roof alone" in ax.get_title(loc="left") and len(ax.patches) == 3


def test_sweep_chart_over_one_define_and_over_many(fixtures_dir):
    report = show.show(fixtures_dir / "results" / "h100_matmul_all.json")
    base = next(r for r in report.results.rows if r.variant == "swizzled")
    one = [replace(base, variant=f"swizzled[STAGES={s}]", defines={"STAGES": s}) for s in (2, 3, 4)]
    groups = charts.sweep_groups(one + [base])
    assert list(groups) == [("matmul", "swizzled", "4096x4096x4096")]
    cublas = [r for r in report.results.rows if r.variant == "cublas"]
    fig = charts.sweep_figure(one, cublas, "matmul sweep")
    (ax,) = fig.axes
    assert ax.get_xlabel() == "STAGES" and ax.get_legend() is not None
    many = [replace(base, variant=f"swizzled[BK={k},STAGES={s}]", defines={"BK": k, "STAGES": s})
            for k in (8, 16) for s in (3, 4)]
    fig = charts.sweep_figure(many, cublas, "matmul sweep")
    (ax,) = fig.axes
    assert len(ax.patches) == 4 and ax.get_yticklabels()[0].get_text().startswith("BK=")


def test_svg_text_is_an_inline_svg_element(fixtures_dir):
    report = show.show(fixtures_dir / "results" / "smoke_a.json")
    svg = charts.svg_text(charts.ladder_figure(report.tables[0]))
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>") and "http://" not in svg.split(">", 1)[1][:0]

