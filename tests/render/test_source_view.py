"""render.source_view at 80, 100 and 160 columns on the recorded reports: every line within the
width, `file:line` and the start of each line's text whole, the columns left out named."""

from __future__ import annotations

import pytest
from rich.console import Console

from gpuprof.commands import ncu as core
from gpuprof.commands.target import Target
from gpuprof.render import source_view

WIDTHS = (80, 100, 160)


@pytest.fixture(scope="module")
def runs(where_reports):
    return {key: core.execute(core.NcuRequest(Target(import_path=path), source=True))
            for key, path in where_reports.items()}


def view(run, width: int | None, **kw) -> list[str]:
    console = Console(width=width or 100, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    source_view.print_source_view(console, run, wide=width is None, **kw)
    return console.export_text().splitlines()


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("key, places, texts", [
    ("plain", ["matmul_lineinfo.cu:18", "matmul_lineinfo.cu:34"], ["acc += A[row * n", "acc += As[threadIdx.y]"]),
    ("warptile", ["warptile.cu:243", "warptile.cu:196"], ["acc[i][j] += fragA", "const float4 v = *reinte"]),
])
def test_hot_lines_fit_with_file_line_and_the_texts_start_whole(runs, width, key, places, texts):
    lines = view(runs[key], width)
    assert all(len(line) <= width for line in lines), max(lines, key=len)
    for place, text in zip(places, texts, strict=True):
        row = next((line for line in lines if line.startswith(place + " ")), None)
        assert row is not None, f"{place} not whole at the start of a row at {width}:\n" + "\n".join(lines)
        assert text in row


def test_wide_shows_whole_texts_and_every_column(runs):
    lines = view(runs["plain"], None)
    joined = "\n".join(lines)
    assert "…" not in joined and "not shown at this width" not in joined
    assert "int row = blockIdx.x * blockDim.x + threadIdx.x;  // rows on x: neighbouring threads stride by n" in joined


def test_lines_option_limits_the_table(runs):
    lines = view(runs["plain"], 100, lines=2)
    assert sum(1 for line in lines if line.startswith("matmul_lineinfo.cu:")) == 4  # two per kernel
    assert "hottest lines (2 of 8 with samples)" in "\n".join(lines)


def test_sass_of_a_line_lists_its_most_sampled_instructions_in_address_order(runs):
    lines = view(runs["warptile"], 100, sass="kernels/matmul/warptile.cu:243")
    title = next(line for line in lines if "SASS of" in line)
    assert "the 24 most sampled of 1024 instructions" in title
    offsets = [int(line.split()[0], 16) for line in lines if line[:6].strip() and line.split()[0].isalnum()
               and len(line.split()[0]) == 4 and "FFMA" in line]
    assert len(offsets) == 24 and offsets == sorted(offsets)


@pytest.mark.parametrize("width", WIDTHS)
def test_stall_explanations_fold_and_are_never_cut(runs, width):
    """The 'what it means' prose is advice: at 80 columns it folds onto a second line, never '…'."""
    lines = view(runs["plain"], width)
    cut = [line for line in lines if "…" in line and ".cu:" not in line]  # only source text may be shortened
    assert cut == []
    text = " ".join(" ".join(lines).split())
    assert "too many global/local memory instructions queued (LSU full)" in text
