"""The compare table, verdict lines and trend on recorded H100 files: nothing that matters is cut."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from gpuprof import results
from gpuprof.analysis.compare import compare_results
from gpuprof.analysis.compare_presets import PRESETS
from gpuprof.render.compare_view import _change, render_compare_table, trend, verdict_lines
from gpuprof.render.fit import print_table

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "results"


def report():
    base, new = results.load(RECORDED / "smoke_a.json"), results.load(RECORDED / "smoke_b.json")
    for row in new.rows:
        row.timing.samples_s = [s * 1.025 for s in row.timing.samples_s]
    return compare_results(base, new, PRESETS["default"])


@pytest.mark.parametrize("width", [80, 100, 160])
def test_table_keeps_whole_row_ids_at_every_width(width):
    console = Console(width=width, record=True)
    console.print(render_compare_table(report(), width=width))
    text = console.export_text()
    for rid in ("matmul/smem_tiled/2048x2048x2048", "vecadd/vectorized/67108864"):
        assert rid in text
    assert all(len(line) <= width for line in text.splitlines())


def test_verdict_lines_say_what_was_compared_and_the_shift():
    lines = verdict_lines(report())
    assert lines[0] == "6 rows compared (relative to the run shift): 0 SLOWER (fail), 0 FASTER, 6 SAME"
    assert lines[1].startswith("every row, controls included, is 2.") and "2 controls" in lines[1]


def test_trend_draws_levels_and_gaps():
    assert trend([1.0, 2.0, None, 3.0]) == "▁▅·█"
    assert trend([1.0, 1.001, 1.002]) == "▄▄▄"  # within 0.5 %: a level line
    assert trend([None]) == ""


def long_id_report():
    """Row ids as long as fused's (family/variant/n x c x h x w x k x r x s), where the old table
    folded 'SLOWER' into 'SLOWE' + 'R' at 100 columns (an H200 two-GPU run of the course suite)."""
    base, new = results.load(RECORDED / "smoke_a.json"), results.load(RECORDED / "smoke_b.json")
    for run in (base, new):
        for row in run.rows:
            row.size = {"n": 32, "c": 64, "h": 56, "w": 56, "k": 64, "r": 3, "s": 3, **row.size}
    new.rows[0].timing.samples_s = [s * 1.2 for s in new.rows[0].timing.samples_s]  # one SLOWER row
    return compare_results(base, new, PRESETS["default"])


@pytest.mark.parametrize("width", [80, 100, 160])
def test_long_row_ids_keep_every_cell_whole_and_drop_columns_instead(width):
    report = long_id_report()
    console = Console(width=width, record=True)
    console.print(render_compare_table(report, width=width))
    text = console.export_text()
    lines = text.splitlines()
    assert all(len(line) <= width for line in lines)
    for verdict in report.verdicts:
        row_line = next(line for line in lines if line.startswith(verdict.row_id + " "))
        assert verdict.status.value in row_line  # the verdict is on the row's own line, whole
        assert _change(verdict.ratio) in row_line
    if width < 160:
        assert "not shown at this width:" in text and "--wide" in text
    else:
        assert "not shown" not in text and "reason" in lines[1]


def test_the_wide_table_has_every_column():
    console = Console(width=80, record=True)
    print_table(console, render_compare_table(long_id_report(), width=None), wide=True)
    header = next(line for line in console.export_text().splitlines() if line.startswith("row"))
    assert header.split() == ["row", "verdict", "base", "new", "change", "CI", "of", "change", "p", "reason"]
