"""Issue 14 item 1: the run table fits the console (80/100/160 columns) on recorded H100 results,
never cutting a variant name or a check cell; optional columns go first and the caption names them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from gpuprof.commands.show import show
from gpuprof.render.tables import print_run_tables

RESULTS = Path(__file__).parents[1] / "fixtures" / "results"
FILES = ["h100_matmul_all.json", "smoke_a.json"]


def render(path: Path, width: int, wide: bool = False) -> str:
    console = Console(width=width, record=True, color_system=None)
    print_run_tables(console, show(path), wide)
    return console.export_text()


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("width", [80, 100, 160])
def test_the_table_fits_and_cuts_no_cell(name, width):
    path = RESULTS / name
    text = render(path, width)
    lines = text.splitlines()
    assert max(map(len, lines)) <= width
    assert "…" not in text
    for row in show(path).results.rows:
        label = row.variant + (" (vendor)" if row.vendor else "")
        line = next((x for x in lines if x.startswith(label + " ")), None)
        assert line is not None, label  # whole, on one line
        assert re.search(rf"\b{row.check.status.upper()} \d\.\de[-+]\d\d\b", line), line  # check cell whole
    if width == 160:
        for head in ("size", "check", "median", "spread", "samples", "% ceiling", "vs "):
            assert re.search(rf"^variant .*{re.escape(head)}", text, re.MULTILINE), head
        assert "not shown at this width" not in text


def test_the_7_variant_matmul_at_80_keeps_the_ceiling_and_names_what_it_left_out():
    text = render(RESULTS / "h100_matmul_all.json", 80)
    header = next(x for x in text.splitlines() if x.startswith("variant "))
    assert "% ceiling" in header and "TFLOP/s" in header and "vs cublas" in header
    for gone in ("spread", "samples", "size", "vs naive"):
        assert gone not in header
    assert "not shown at this width: size, spread, samples, vs naive" in " ".join(text.split())
    assert "size 4096x4096x4096" in text.splitlines()[0]  # one size for every row: the title says it
    tf32 = next(x for x in text.splitlines() if x.startswith("cublas_tf32 (vendor)"))
    assert "398.48" in tf32 and "80.5 %" in tf32  # against the TF32 tensor peak, not FP32's


def test_wide_shows_every_column_whatever_the_width():
    text = render(RESULTS / "h100_matmul_all.json", 80, wide=True)
    header = next(x for x in text.splitlines() if x.lstrip().startswith("variant "))
    assert all(h in header for h in ("size", "spread", "samples", "vs naive")) and len(header) > 80
    assert "…" not in text


def test_throttled_rows_are_named_in_the_caption_when_the_samples_column_is_left_out(tmp_path):
    data = json.loads((RESULTS / "h100_matmul_all.json").read_text())
    row = next(r for r in data["rows"] if r["variant"] == "warptile")
    n = len(row["timing"]["samples_s"])
    row["timing"]["throttled"] = [i < 3 for i in range(n)]
    path = tmp_path / "throttled.json"
    path.write_text(json.dumps(data))
    narrow = " ".join(render(path, 80).split())
    assert f"throttled samples (NVML clock caps): warptile 3/{n}." in narrow
    wide = render(path, 160)
    assert f"3/{n} throttled" in next(x for x in wide.splitlines() if x.startswith("warptile "))


@pytest.mark.parametrize("width", [80, 100])
def test_show_lays_the_table_out_for_the_terminal_width(runner, width):
    result = runner.invoke(_app(), ["show", str(RESULTS / "h100_matmul_all.json")], env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    assert max(map(len, result.stdout.splitlines())) <= width
    assert "…" not in result.stdout and "--wide shows every column" in " ".join(result.stdout.split())
    wide = runner.invoke(_app(), ["show", "--wide", str(RESULTS / "h100_matmul_all.json")],
                         env={"COLUMNS": str(width)})
    assert wide.exit_code == 0 and "…" not in wide.stdout
    header = next(x for x in wide.stdout.splitlines() if x.startswith("variant "))
    assert len(header) > width and "spread" in header


def _app():
    from gpuprof.cli import app

    return app
