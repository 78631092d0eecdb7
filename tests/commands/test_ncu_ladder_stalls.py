"""`gpuprof ncu FAMILY --ladder` collects WarpStateStats (one replay pass more, said before profiling),
and the ladder's top-stall column is filled from it without --source."""

from __future__ import annotations

import pytest

from gpuprof.commands import ncu as core
from gpuprof.commands.ncu_source import collection_note
from gpuprof.commands.target import Target
from gpuprof.tools import ncu as ncu_tool
from tests.ncu_full_reports import csv_kernel_rows

MATMUL = Target(families=("matmul",), variants="naive,warptile")


def sections(**kw) -> tuple[str, ...]:
    return core.NcuRequest(MATMUL, **kw).ncu_options().sections


def test_the_ladder_adds_warp_state_stats_to_the_default_sections():
    assert sections(ladder=True) == (*ncu_tool.SECTIONS, ncu_tool.WARP_STATE_SECTION)
    assert ncu_tool.WARP_STATE_SECTION not in sections()
    argv = ncu_tool.profile_argv("ncu", core.NcuRequest(MATMUL, ladder=True).ncu_options(), core.DEFAULT_OUT / "x",
                                 ["./prog"])
    assert argv[argv.index(ncu_tool.WARP_STATE_SECTION) - 1] == "--section"


@pytest.mark.parametrize("kw", [{"source": True}, {"set_name": "why"}, {"sections": ("WarpStateStats",)}])
def test_the_section_is_named_once_when_already_collected(kw):
    assert sections(ladder=True, **kw).count(ncu_tool.WARP_STATE_SECTION) == 1
    assert "WarpStateStats for each rung's top stall" not in (collection_note(core.NcuRequest(MATMUL, ladder=True,
                                                                                                **kw)) or "")


def test_the_note_before_profiling_names_the_added_pass():
    note = collection_note(core.NcuRequest(MATMUL, ladder=True))
    assert note is not None and "WarpStateStats" in note and "20 instead of 19" in note
    assert collection_note(core.NcuRequest(MATMUL)) is None
    basic = collection_note(core.NcuRequest(MATMUL, ladder=True, set_name="basic"))
    assert basic is not None and "19 replay passes" in basic and "20 instead of 19" in basic
    full = collection_note(core.NcuRequest(MATMUL, ladder=True, set_name="full"))  # ncu's full set has it
    assert full is not None and "20 instead of 19" not in full


def test_the_top_stall_column_is_filled_without_source():
    rows = csv_kernel_rows()  # recorded with WarpStateStats; no per-line data is read here
    results = [core.NcuResult("naive", None, [rows["matmul_naive"]]),
               core.NcuResult("warptile", None, [rows["matmul_warptile"]])]
    run = core.NcuRun("matmul", "none", results, "ncu_report module")
    naive, warptile = core.ladder(run, core.NcuRequest(MATMUL, ladder=True))
    assert not any(result.source for result in run.results)
    assert naive.top_stall == "gmem queue 96 %" and warptile.top_stall == "dispatch 37 %"
    assert (naive.verdict, warptile.verdict) == ("confirmed", "confirmed")
