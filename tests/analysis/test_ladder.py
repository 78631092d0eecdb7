"""analysis.ladder on made-up rows: each rung's figures, the measured limiter judged against the
expected one (confirmed, refuted with the measurement, latency, not stated), and what changed."""

from __future__ import annotations

import pytest

from gpuprof.analysis import ladder
from gpuprof.analysis.ladder import Step
from gpuprof.parsers.ncu_levels import RooflineLevels
from gpuprof.parsers.ncu_metrics import NcuKernelRow

PEAK = 60e12
BANDWIDTH = {"L1 pipe": 30e12, "L1": 30e12, "L2": 10e12, "DRAM": 3e12}


def row(ns: float, flops: float, traffic: dict[str, float], **kw) -> NcuKernelRow:
    levels = RooflineLevels(traffic=traffic, bandwidth=BANDWIDTH, work={"fp32": flops} if flops else {},
                            peak_work={"fp32": PEAK})
    return NcuKernelRow(id=0, kernel_name="k", demangled_name="k", duration_ns=ns, roofline_levels=levels,
                        dram_bytes=traffic.get("DRAM", 0.0) * ns * 1e-9, **kw)


# an L1-pipe-bound kernel at 98 % of that roof; a compute-bound one at 80 % of the FP32 peak;
# a kernel far from every roof; a copy without FLOPs at 90 % of DRAM
L1_BOUND = row(4e6, 1e12, {"L1 pipe": 29.4e12, "L2": 1e12, "DRAM": 0.1e12}, registers_per_thread=32,
               occupancy_limiter="warps", metrics={"smsp__inst_executed.sum": 4e9})
COMPUTE_BOUND = row(1e6, 48e12, {"L1 pipe": 5e12, "L2": 1e12, "DRAM": 0.05e12}, registers_per_thread=128,
                    occupancy_limiter="registers", metrics={"smsp__inst_executed.sum": 1e9})
FAR = row(2e6, 0.1e12, {"L1 pipe": 1e12, "L2": 0.5e12, "DRAM": 0.3e12})
COPY = row(1e6, 0.0, {"L1": 3e12, "L2": 3e12, "DRAM": 2.7e12})


def test_confirmed_and_refuted_with_the_measurement():
    first, second = ladder.build([Step("tiled", [L1_BOUND], "l1"), Step("warptile", [COMPUTE_BOUND], "dram")])
    assert (first.measured_limiter, first.verdict, first.verdict_reason) == \
        ("l1", "confirmed", "98 % of the L1 data pipe roof")
    assert second.verdict == "refuted"
    assert second.verdict_reason == "expected dram, measured compute: 80 % of the FP32 roof"


def test_speedups_traffic_and_counters():
    first, second = ladder.build([Step("tiled", [L1_BOUND], "l1"), Step("warptile", [COMPUTE_BOUND], "compute")])
    assert first.speedup_vs_first == 1.0 and first.speedup_vs_previous is None
    assert second.speedup_vs_previous == pytest.approx(4.0) and second.speedup_vs_first == pytest.approx(4.0)
    assert second.l2_bytes == pytest.approx(1e12 * 1e-3) and second.dram_bytes == pytest.approx(0.05e12 * 1e-3)
    assert (second.instructions, second.registers, second.occupancy_limiter) == (1e9, 128, "registers")
    assert second.verdict == "confirmed"


def test_far_from_every_roof_is_latency():
    (rung,) = ladder.build([Step("sequential", [FAR], "latency")])
    assert rung.measured_limiter == "latency" and rung.verdict == "confirmed"
    (wrong,) = ladder.build([Step("sequential", [FAR], "dram")])
    assert wrong.verdict == "refuted"
    assert wrong.verdict_reason == "expected dram, measured latency: 10 % of the DRAM roof"


def test_a_kernel_without_flops_is_judged_by_its_busiest_level():
    (rung,) = ladder.build([Step("transpose", [COPY], "dram")])
    assert rung.verdict == "confirmed" and rung.verdict_reason == "90 % of the DRAM roof"


def test_not_stated_still_says_what_was_measured_and_vendor_rungs_are_references():
    rungs = ladder.build([Step("tiled", [L1_BOUND], "l1"), Step("cublas", [COMPUTE_BOUND], None, reference=True)])
    assert rungs[1].verdict == "not stated" and rungs[1].reference
    assert rungs[1].verdict_reason == "measured compute: 80 % of the FP32 roof"


def test_no_roofline_data_is_not_measured():
    bare = NcuKernelRow(id=0, kernel_name="k", demangled_name="k", duration_ns=1e6)
    (rung,) = ladder.build([Step("k", [bare], "dram")])
    assert rung.verdict == "not measured" and rung.measured_limiter is None


def test_what_changed_leads_with_time_then_the_largest_changes():
    _, second = ladder.build([Step("tiled", [L1_BOUND], "l1"), Step("warptile", [COMPUTE_BOUND], "compute")])
    assert second.changes[0] == "time ×0.25"
    # three figures (the largest, DRAM bytes ×0.125, first), then the limiters that changed
    assert second.changes[1] == "DRAM bytes ×0.12" and len(second.changes) == 5
    assert second.changes[3:] == ("occupancy limiter warps → registers", "limiter l1 → compute")
    few = ladder.changes(second, second)
    assert few == ()


def test_the_top_stall_reason_comes_from_source_data():
    (rung,) = ladder.build([Step("k", [L1_BOUND], "l1", stalls={"long_scoreboard": 30, "barrier": 10})])
    assert rung.top_stall is not None and rung.top_stall.endswith("75 %")


def test_the_top_stall_comes_from_warp_state_stats_without_source():
    from tests.ncu_full_reports import csv_kernel_rows

    rows = csv_kernel_rows()  # WarpStateStats ratios in the raw page; no per-line data read
    naive, tiled = ladder.build([Step("naive", [rows["matmul_naive"]]), Step("tiled", [rows["matmul_tiled"]])])
    assert naive.top_stall == "gmem queue 96 %" and tiled.top_stall == "smem queue 63 %"
    # the warp states win over samples when both are there (--source collects both)
    (both,) = ladder.build([Step("naive", [rows["matmul_naive"]], stalls={"barrier": 1.0})])
    assert both.top_stall == "gmem queue 96 %"


def test_a_rung_of_several_launches_names_each_occupancy_limiter_once():
    """PyTorch's math attention runs many kernels, each capped by "registers+warps" or "warps": the
    rung said "registers+warps+registers+warps" (seen on the H200); each part is named once."""
    tie = row(1e6, 1e12, {"L1 pipe": 5e12, "L2": 1e12, "DRAM": 0.5e12}, occupancy_limiter="registers+warps")
    warps = row(1e6, 1e12, {"L1 pipe": 5e12, "L2": 1e12, "DRAM": 0.5e12}, occupancy_limiter="warps")
    (rung,) = ladder.build([Step("sdpa_math", [tie, warps, tie], None)])
    assert rung.occupancy_limiter == "registers+warps"
