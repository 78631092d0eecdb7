"""parsers.ncu_levels: the hierarchical roofline read from the recorded `--set full` reports, and from
the raw counters gpuprof's default collection asks for (docs/tools.md, "ncu: hierarchical roofline")."""

from __future__ import annotations

import pytest

from gpuprof.parsers.ncu_levels import RooflineLevels, levels_from_metrics
from gpuprof.parsers.ncu_metrics import _Metrics
from gpuprof.parsers.ncu_rep import rows_from_json, rows_to_json
from tests.ncu_full_reports import kernel_rows, requires_ncu_report


def levels_of(metrics: dict, duration_ns: float | None = 1e6) -> RooflineLevels | None:
    return levels_from_metrics(_Metrics(metrics, "test", None).num, metrics, duration_ns)


@requires_ncu_report
def test_naive_matmul_levels_as_ncu_computes_them():
    r = kernel_rows()["matmul_naive"]
    levels = r.roofline_levels
    assert levels is not None
    m = r.metrics
    # L1: 128 bytes per writeback cycle; L2: 32 per L2-to-crossbar cycle; each peak x its unit's clock.
    assert levels.traffic["L1"] == pytest.approx(m["l1tex__lsu_writeback_active_mem_lgds.sum.per_second"] * 128)
    assert levels.bandwidth["L1"] == pytest.approx(132 * 128 * m["l1tex__cycles_elapsed.avg.per_second"])
    assert levels.traffic["L2"] == pytest.approx(m["lts__lts2xbar_cycles_active.sum.per_second"] * 32)
    assert levels.bandwidth["L2"] == pytest.approx(160 * 32 * m["lts__cycles_elapsed.avg.per_second"])
    assert levels.traffic["DRAM"] == pytest.approx(m["dram__bytes.sum.per_second"])
    assert levels.bandwidth["DRAM"] == pytest.approx(r.peak_dram_bytes_per_s)
    assert levels.bandwidth["L1"] / 1e12 == pytest.approx(33.45, abs=0.05)
    assert levels.bandwidth["L2"] / 1e12 == pytest.approx(8.74, abs=0.05)
    # FP32 work: (fadd + fmul + 2 ffma) per cycle x the SMSP clock = 2 n^3 over the duration (n = 2048).
    assert levels.work["fp32"] == pytest.approx(2 * 2048**3 / (r.duration_ns * 1e-9), rel=1e-3)
    assert levels.peak_work["fp32"] == pytest.approx(r.peak_fp32_flops)
    # The L1 data pipe: 96 % busy with one wavefront per sector of the uncoalesced loads.
    assert levels.traffic["L1 pipe"] / levels.bandwidth["L1 pipe"] == pytest.approx(0.9604, abs=1e-3)
    assert levels.bandwidth["L1 pipe"] == pytest.approx(levels.bandwidth["L1"])
    # SourceCounters: the numbers of ncu's UncoalescedGlobalAccess rule (85 % of 8862564352 sectors).
    assert (levels.global_sectors, levels.global_sectors_excessive) == (8862564352, 7519862784)
    assert levels.excessive_sectors_pct == pytest.approx(84.85, abs=0.01)
    assert levels.tensor_path is None and "tensor" not in levels.work


@requires_ncu_report
def test_full_set_flops_come_from_the_per_cycle_rates():
    """`--set full` has no absolute FLOP counts: rate x elapsed cycles gives 2 n^3 exactly."""
    rows = kernel_rows()
    assert rows["matmul_naive"].flop_fp32 == pytest.approx(2 * 2048**3, rel=1e-9)
    assert rows["matmul_tiled"].flop_fp32 == pytest.approx(2 * 2048**3, rel=1e-9)
    assert rows["matmul_warptile"].flop_fp32 == pytest.approx(2 * 4096**3, rel=1e-9)


@requires_ncu_report
def test_shared_memory_share_of_the_l1_pipe():
    rows = kernel_rows()
    assert rows["matmul_tiled"].roofline_levels.shared_pipe_pct == pytest.approx(86.46, abs=0.01)
    assert rows["matmul_naive"].roofline_levels.shared_pipe_pct < 0.01


@requires_ncu_report
def test_levels_survive_the_reader_child_json():
    rows = list(kernel_rows().values())
    assert [r.roofline_levels for r in rows_from_json(rows_to_json(rows))] == [r.roofline_levels for r in rows]


# The raw counters gpuprof asks for by default (no derived__ metrics, no per-cycle rates): the same
# quantities through the sections' formulas by hand.
RAW = {
    "gpu__time_duration.sum": 1e6,  # ns
    "l1tex__lsu_writeback_active_mem_lgds.sum.per_second": 1e10,
    "l1tex__lsu_writeback_active_mem_lgds.sum.peak_sustained": 132.0,
    "l1tex__cycles_elapsed.avg.per_second": 2e9,
    "l1tex__cycles_elapsed.sum.per_second": 264e9,
    "l1tex__data_pipe_lsu_wavefronts.sum.pct_of_peak_sustained_elapsed": 50.0,
    "lts__lts2xbar_cycles_active.sum.per_second": 1e10,
    "lts__lts2xbar_cycles_active.sum.peak_sustained": 160.0,
    "lts__cycles_elapsed.avg.per_second": 1.5e9,
    "dram__bytes.sum": 1e9,
    "dram__bytes.sum.peak_sustained": 1280.0,
    "dram__cycles_elapsed.avg.per_second": 2.5e9,
    "sm__sass_thread_inst_executed_op_ffma_pred_on.sum": 5e12,
    "sm__sass_thread_inst_executed_op_fadd_pred_on.sum": 1e12,
    "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained": 16896.0,
    "sm__cycles_elapsed.avg.per_second": 2e9,
}


def test_raw_counters_give_the_same_quantities():
    levels = levels_of(RAW)
    assert levels is not None
    assert levels.traffic == pytest.approx({"L1": 1.28e12, "L1 pipe": 0.5 * 264e9 * 128, "L2": 3.2e11, "DRAM": 1e12})
    assert levels.bandwidth == pytest.approx({"L1": 132 * 128 * 2e9, "L1 pipe": 264e9 * 128, "L2": 160 * 32 * 1.5e9,
                                              "DRAM": 1280 * 2.5e9})
    assert levels.work["fp32"] == pytest.approx((1e12 + 2 * 5e12) / 1e-3)
    assert levels.peak_work == pytest.approx({"fp32": 2 * 16896 * 2e9})


def test_no_cache_level_means_no_hierarchical_roofline():
    """DRAM alone is the plain roofline: a report without the L1/L2 metrics has no levels."""
    without = {k: v for k, v in RAW.items() if not k.startswith(("l1tex", "lts"))}
    assert levels_of(without) is None
    assert levels_of({k: v for k, v in RAW.items() if "peak_sustained" not in k}) is None


def test_tensor_work_is_the_busiest_specific_path():
    metrics = dict(RAW)
    metrics.update({
        "sm__ops_path_tensor_src_fp16.sum.per_cycle_elapsed": 300_000.0,
        "sm__ops_path_tensor_src_fp16.sum.peak_sustained": 1_081_344.0,  # the sparse hgmma peak
        "sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off.sum.per_cycle_elapsed": 300_000.0,
        "sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off.sum.peak_sustained": 540_672.0,
        "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32_sparsity_off.sum.per_cycle_elapsed": 0.0,
        "sm__ops_path_tensor_src_int8.sum.per_cycle_elapsed": 900_000.0,  # integer ops: not FLOPs
    })
    levels = levels_of(metrics)
    assert levels.tensor_path == "op_hgmma_src_fp16_sparsity_off"
    assert levels.work["tensor"] == pytest.approx(300_000 * 2e9)
    assert levels.peak_work["tensor"] == pytest.approx(540_672 * 2e9)


def test_tensor_counts_without_rates_have_no_peak():
    metrics = dict(RAW, **{"sm__ops_path_tensor_src_tf32_dst_fp32.sum": 4e12})
    levels = levels_of(metrics)
    assert levels.tensor_path == "src_tf32_dst_fp32" and levels.work["tensor"] == pytest.approx(4e15)
    assert "tensor" not in levels.peak_work


def test_dense_path_counts_come_with_their_peak():
    """gpuprof's default collection: op counts of the instruction's dense path (wgmma: HGMMA) and the
    path's peak per cycle, so a tensor-core rung has a compute roof the ladder can judge it against."""
    metrics = dict(RAW, **{
        "sm__ops_path_tensor_src_bf16_dst_fp32.sum": 4e12,
        "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum": 4e12,
        "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum.peak_sustained": 540_672.0,
        "sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32_sparsity_off.sum": 0.0,
        "sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32_sparsity_off.sum.peak_sustained": 270_336.0,
    })
    levels = levels_of(metrics)
    assert levels.tensor_path == "op_hgmma_src_bf16_dst_fp32_sparsity_off"
    assert levels.work["tensor"] == pytest.approx(4e15)
    assert levels.peak_work["tensor"] == pytest.approx(540_672 * 2e9)


def test_half_precision_work_has_the_half_pipes_peak():
    """The course's cuBLAS HGEMM lesson (H200): its kernels' FLOPs are half-precision FMAs and
    FP16-accumulate HMMA, and the report had no peak for either, so no roofline by level. gpuprof now
    asks for the HFMA peak and the FP16-accumulate HMMA path (tools/ncu.py); both are read here."""
    from gpuprof.tools import ncu

    assert "sm__sass_thread_inst_executed_op_hfma_pred_on.sum.peak_sustained" in ncu.METRICS
    assert "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp16_sparsity_off.sum.peak_sustained" in ncu.METRICS
    half = dict(RAW, **{"sm__sass_thread_inst_executed_op_hfma_pred_on.sum": 1e11,
                        "sm__sass_thread_inst_executed_op_hfma_pred_on.sum.peak_sustained": 16896.0})
    levels = levels_of(half)
    assert levels.work["fp16"] == pytest.approx(4 * 1e11 / 1e-3)  # HFMA2: two FMAs, four FLOPs
    assert levels.peak_work["fp16"] == pytest.approx(4 * 16896 * 2e9)
    hmma = dict(RAW, **{"sm__ops_path_tensor_src_fp16.sum": 3e12,
                        "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp16_sparsity_off.sum": 3e12,
                        "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp16_sparsity_off.sum.peak_sustained": 360_448.0})
    levels = levels_of(hmma)
    assert levels.tensor_path == "op_hmma_src_fp16_dst_fp16_sparsity_off"
    assert levels.peak_work["tensor"] == pytest.approx(360_448 * 2e9)
