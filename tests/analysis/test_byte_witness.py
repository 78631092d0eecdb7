"""The byte witness (issue 39) on launches ncu recorded on the H100: vecadd/grid and vecadd/torch at
2^22 read at least the 33.55 MB their inputs hold, so the rule holds for both; the same counts
against an op that must read a fifth more (what a kernel that skipped a sixth of its input would
show) are IMPOSSIBLE, with both byte counts named. Writes are owed only beyond one L2."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuprof.analysis import byte_witness
from gpuprof.commands.row_story import ncu_summary
from gpuprof.row_parts import NcuPart
from gpuprof.tools.ncu import read_report_isolated

TOOLS = Path(__file__).resolve().parents[1] / "fixtures" / "tools"
H100_L2 = 50 * 1024 * 1024
N = 16384 * 256  # the recorded launches: 16384 blocks of 256 threads, one element each


@pytest.fixture(scope="module", params=["grid", "torch"])
def recorded(request) -> NcuPart:
    pytest.importorskip("ncu_report")
    return ncu_summary(read_report_isolated(TOOLS / f"ncu-2025.3.1__launch_vecadd_{request.param}.ncu-rep"))


def test_the_recorded_honest_launches_read_every_input_byte(recorded):
    inputs = 8.0 * N
    assert recorded.dram_read_bytes >= inputs
    # at this size the op is one L2, too small to judge: the rule stays silent on it
    assert byte_witness.shortfall(recorded.dram_read_bytes, inputs, recorded.dram_write_bytes, 4.0 * N,
                                  H100_L2) is None
    # and with the L2 made small enough for the rule to apply, it still holds
    assert byte_witness.shortfall(recorded.dram_read_bytes, inputs, None, None, H100_L2 // 64) is None


def test_reads_short_of_the_inputs_are_impossible_with_the_counts_named(recorded):
    must_read = 1.2 * 8.0 * N
    why = byte_witness.shortfall(recorded.dram_read_bytes, must_read, None, None, H100_L2 // 64)
    assert why is not None and "read from DRAM" in why and "never read" in why
    assert f"{100 * recorded.dram_read_bytes / must_read:.0f} %" in why


def test_writes_are_owed_beyond_one_l2_only():
    l2 = 50e6
    assert byte_witness.shortfall(None, None, 950e6, 1e9, int(l2)) is None  # 50 MB may still sit in the L2
    why = byte_witness.shortfall(None, None, 500e6, 1e9, int(l2))
    assert why is not None and "never written" in why


@pytest.mark.parametrize(("read", "must_read"), [
    (1e6, 3 * H100_L2),  # within a few L2s: too small to judge
    (None, 1e10),  # not profiled
    (1e6, None),  # the family does not say what its op reads
])
def test_the_rule_applies_only_where_it_holds(read, must_read):
    assert byte_witness.shortfall(read, must_read, None, None, H100_L2) is None
