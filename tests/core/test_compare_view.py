"""The compare table, verdict lines and trend on recorded H100 files: nothing that matters is cut."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from gpuprof import results
from gpuprof.analysis.compare import PRESETS, compare_results
from gpuprof.render.compare_view import render_compare_table, trend, verdict_lines

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "results"


def report():
    base, new = results.load(RECORDED / "smoke_a.json"), results.load(RECORDED / "smoke_b.json")
    for row in new.rows:
        row.timing.samples_s = [s * 1.025 for s in row.timing.samples_s]
    return compare_results(base, new, PRESETS["default"])


@pytest.mark.parametrize("width", [80, 100, 160])
def test_table_keeps_whole_row_ids_at_every_width(width):
    console = Console(width=width, record=True)
    console.print(render_compare_table(report()))
    text = console.export_text()
    for rid in ("matmul/smem_tiled/2048x2048x2048", "vecadd/vectorized/67108864"):
        assert rid in text
    assert all(len(line) <= width for line in text.splitlines())


def test_verdict_lines_say_what_was_compared_and_the_shift():
    lines = verdict_lines(report())
    assert lines[0] == "6 rows compared (relative to the run shift): 0 SLOWER (fail), 0 FASTER, 6 SAME"
    assert lines[1].startswith("the whole run is 2.") and "2 controls" in lines[1]


def test_trend_draws_levels_and_gaps():
    assert trend([1.0, 2.0, None, 3.0]) == "▁▅·█"
    assert trend([1.0, 1.001, 1.002]) == "▄▄▄"  # within 0.5 %: a level line
    assert trend([None]) == ""
