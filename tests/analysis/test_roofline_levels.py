"""analysis.roofline's hierarchical roofline: each kernel judged against the tightest memory level,
on made-up numbers and on the three matmul kernels recorded under `ncu --set full` on the H100."""

from __future__ import annotations

import pytest

from gpuprof.analysis import roofline
from gpuprof.analysis.roofline import LevelBound, LevelPoint
from gpuprof.parsers.ncu_levels import RooflineLevels
from gpuprof.parsers.ncu_metrics import NcuKernelRow
from tests.ncu_full_reports import csv_kernel_rows, default_kernel_rows, kernel_rows, requires_ncu_report

PEAK = 60e12
BANDWIDTH = {"L1 pipe": 30e12, "L1": 30e12, "L2": 10e12, "DRAM": 3e12}


def point(flops: float, traffic: dict[str, float], **kw) -> LevelPoint:
    levels = RooflineLevels(traffic=traffic, bandwidth=BANDWIDTH, work={"fp32": flops}, peak_work={"fp32": PEAK}, **kw)
    row = NcuKernelRow(id=0, kernel_name="k", demangled_name="k", duration_ns=1e6, roofline_levels=levels)
    p = roofline.level_point("k", [row])
    assert p is not None
    return p


def test_each_level_gives_intensity_attainable_and_the_tightest_binds():
    p = point(1e12, {"L1": 2e12, "L2": 1e12, "DRAM": 0.1e12})
    assert [b.level for b in p.levels] == ["L1", "L2", "DRAM"]
    assert [b.intensity for b in p.levels] == pytest.approx([0.5, 1.0, 10.0])
    assert [b.attainable for b in p.levels] == pytest.approx([15e12, 10e12, 30e12])
    assert p.bound == "L2"
    assert p.attainable == pytest.approx(10e12) and p.fraction == pytest.approx(0.1)
    # 10 % of its tightest roof: the ladder calls it latency-bound, and so does the verdict (one rule)
    assert p.verdict == "latency-bound (far from every roof; the tightest is L2)"
    assert p.reason == "1 FLOP/B at L2 caps FP32 at 10 TFLOP/s; achieved 1 TFLOP/s (10 %)"


def test_dram_bound():
    p = point(2e12, {"L1": 0.5e12, "L2": 0.5e12, "DRAM": 2e12})
    assert p.verdict == "DRAM-bound" and p.attainable == pytest.approx(3e12)


def test_compute_bound_names_the_nearest_memory_roof():
    p = point(45e12, {"L1": 1e12, "L2": 4e12, "DRAM": 0.2e12})  # every level allows the peak
    assert p.binding is None and p.verdict == "compute-bound"
    assert p.attainable == PEAK and p.fraction == pytest.approx(0.75)
    assert p.reason == ("FP32 peak 60 TFLOP/s; achieved 45 TFLOP/s (75 %); nearest memory roof L2 "
                        "(11.2 FLOP/B, ridge 6)")


def test_l1_verdict_names_uncoalesced_access_or_shared_memory():
    uncoalesced = point(0.5e12, {"L1 pipe": 28e12, "L1": 2e12, "L2": 0.1e12}, global_sectors=100.0,
                        global_sectors_excessive=85.0)
    assert uncoalesced.verdict == "L1-bound (uncoalesced: 85 % of sectors excessive)"
    assert uncoalesced.binding.level == "L1 pipe"
    shared = point(9e12, {"L1 pipe": 27e12, "L1": 1e12, "L2": 1e12}, shared_pipe_pct=80.0)
    assert shared.verdict == "L1-bound (shared memory: 80 % of the L1 data pipe's peak)"
    plain = point(9e12, {"L1 pipe": 27e12, "L1": 1e12, "L2": 1e12}, shared_pipe_pct=10.0,
                  global_sectors=100.0, global_sectors_excessive=5.0)
    assert plain.verdict == "L1-bound"


def test_rows_sum_over_their_time():
    """Two launches of one kernel: rates weighted by duration, the highest peaks."""
    def row(ns: float, flops: float, l2: float, peak: float) -> NcuKernelRow:
        levels = RooflineLevels(traffic={"L2": l2}, bandwidth={"L2": 10e12}, work={"fp32": flops},
                                peak_work={"fp32": peak})
        return NcuKernelRow(id=0, kernel_name="k", demangled_name="k", duration_ns=ns, roofline_levels=levels)

    p = roofline.level_point("k", [row(3e6, 1e12, 2e12, 50e12), row(1e6, 5e12, 6e12, 60e12)])
    assert p.flops == pytest.approx(2e12) and p.peak_flops == 60e12
    (l2,) = p.levels
    assert l2.intensity == pytest.approx(2e12 / 3e12)


def test_a_precision_without_a_peak_gives_no_verdict():
    """A tensor kernel in gpuprof's default collection: tensor work but no tensor peak; its FP32
    roofs must not judge it."""
    levels = RooflineLevels(traffic={"L2": 1e12}, bandwidth={"L2": 10e12}, work={"fp32": 1e9, "tensor": 5e14},
                            peak_work={"fp32": PEAK})
    row = NcuKernelRow(id=0, kernel_name="k", demangled_name="k", duration_ns=1e6, roofline_levels=levels)
    assert roofline.level_point("k", [row]) is None
    assert set(roofline.level_points("k", [row])) == {"fp32"}


def test_no_hierarchical_data_no_point():
    row = NcuKernelRow(id=0, kernel_name="k", demangled_name="k", duration_ns=1e6)
    assert roofline.level_point("k", [row]) is None


def test_level_bound_is_plain_data():
    b = LevelBound("L2", 2.0, 10e12, 20e12)
    assert (b.level, b.intensity, b.bandwidth, b.attainable) == ("L2", 2.0, 10e12, 20e12)


# ---------------------------------------------------------------------------------------------
# The recorded kernels (H100, ncu 2025.3.1, --set full)


@pytest.fixture(scope="module")
def recorded():
    return {name: roofline.point(name, [row]) for name, row in kernel_rows().items()}


@requires_ncu_report
def test_naive_matmul_is_l1_bound_not_compute_bound(recorded):
    """Rows on threadIdx.x: every load of a warp touches 32 sectors. Against DRAM alone it sat far
    right of the ridge ("compute-bound, 0.7 % of the roof"); its bound is the L1."""
    p = recorded["matmul_naive"]
    assert p.intensity > 300 and p.flops / 1e12 == pytest.approx(0.486, abs=0.001)  # FLOP per DRAM byte
    hp = p.levels
    assert hp.precision == "fp32" and hp.bound == "L1" and hp.bound != "compute"
    assert hp.verdict == "L1-bound (uncoalesced: 85 % of sectors excessive)"
    assert hp.binding.level == "L1 pipe" and hp.binding.intensity == pytest.approx(0.0151, abs=1e-4)
    assert hp.attainable / 1e12 == pytest.approx(0.507, abs=0.001) and hp.fraction == pytest.approx(0.960, abs=0.001)
    # ncu's own three roofs alone say the same: L1 (writeback) binds, at 6 % of it.
    ncu_only = LevelPoint(hp.label, hp.precision, hp.flops, hp.peak_flops,
                          tuple(b for b in hp.levels if b.level != "L1 pipe"))
    assert ncu_only.bound == "L1" and ncu_only.binding.intensity == pytest.approx(0.243, abs=0.001)
    assert ncu_only.attainable / 1e12 == pytest.approx(8.14, abs=0.01)
    assert ncu_only.fraction == pytest.approx(0.06, abs=0.001)
    intensities = {b.level: round(b.intensity, 1) for b in hp.levels}
    assert intensities["L2"] == 8.2 and intensities["DRAM"] == 347.0


@requires_ncu_report
def test_tiled_matmul_is_bound_by_shared_memory_in_the_l1_pipe(recorded):
    hp = recorded["matmul_tiled"].levels
    assert hp.verdict == "L1-bound (shared memory: 86 % of the L1 data pipe's peak)"
    assert hp.binding.level == "L1 pipe" and hp.binding.intensity == pytest.approx(0.305, abs=0.001)
    assert hp.flops / 1e12 == pytest.approx(9.17, abs=0.01) and hp.fraction == pytest.approx(0.900, abs=0.001)
    # ncu's roofs alone would call it compute-bound at 14 % of the peak: shared memory is not in them.
    rest = [b for b in hp.levels if b.level != "L1 pipe"]
    assert all(b.attainable == hp.peak_flops for b in rest)


@requires_ncu_report
def test_warptile_matmul_is_compute_bound(recorded):
    hp = recorded["matmul_warptile"].levels
    assert hp.verdict == "compute-bound" and hp.binding is None
    assert hp.flops / 1e12 == pytest.approx(46.78, abs=0.01) and hp.fraction == pytest.approx(0.699, abs=0.001)
    assert hp.reason.endswith("nearest memory roof the L1 data pipe (2.7 FLOP/B, ridge 2)")


def test_the_csv_fallback_gives_the_same_verdicts():
    """The raw CSV page of the same reports (no ncu_report needed) carries the same metric names."""
    csv = {name: roofline.point(name, [row]) for name, row in csv_kernel_rows().items()}
    expected = {"matmul_naive": ("L1-bound (uncoalesced: 85 % of sectors excessive)", 0.960),
                "matmul_tiled": ("L1-bound (shared memory: 86 % of the L1 data pipe's peak)", 0.900),
                "matmul_warptile": ("compute-bound", 0.699)}
    assert {name: (p.levels.verdict, round(p.levels.fraction, 3)) for name, p in csv.items()} == expected


@requires_ncu_report
def test_csv_and_report_agree_level_by_level(recorded):
    for name, p in ((n, roofline.point(n, [r])) for n, r in csv_kernel_rows().items()):
        want = recorded[name].levels
        assert [b.level for b in p.levels.levels] == [b.level for b in want.levels]
        for got, exp in zip(p.levels.levels, want.levels):
            assert got.intensity == pytest.approx(exp.intensity, rel=1e-4)
            assert got.attainable == pytest.approx(exp.attainable, rel=1e-4)


@requires_ncu_report
def test_default_collection_gives_the_verdicts_without_source_counters():
    """gpuprof's own sections and metrics (n = 1024): the same bounds; the excessive-sector count
    needs SourceCounters, so the naive kernel's verdict names no cause."""
    rows = default_kernel_rows()
    naive = roofline.point("matmul_naive", [rows["matmul_naive"]]).levels
    assert naive.verdict == "L1-bound" and naive.binding.level == "L1 pipe"
    assert naive.fraction == pytest.approx(0.959, abs=0.001)
    tiled = roofline.point("matmul_tiled", [rows["matmul_tiled"]]).levels
    assert tiled.verdict == "L1-bound (shared memory: 81 % of the L1 data pipe's peak)"
    assert tiled.fraction == pytest.approx(0.844, abs=0.001)


def test_the_verdict_and_the_ladders_limiter_agree_at_the_latency_line():
    """The course's `02 matmul` under `gpuprof ncu --` (H200): 21 % of its L1-pipe roof. Its advice was
    headed "for a latency-bound kernel" while the roofline line said "L1-bound"; both say latency now."""
    from gpuprof.analysis import ladder

    # memory-bound: the share of the binding roof is the level's traffic over its bandwidth (30e12)
    below = point(1e12, {"L1": 0.39 * 30e12, "L2": 0.1e12, "DRAM": 0.01e12})
    above = point(1e12, {"L1": 0.41 * 30e12, "L2": 0.1e12, "DRAM": 0.01e12})
    assert below.bound == above.bound == "L1"
    assert below.verdict.startswith("latency-bound") and above.verdict == "L1-bound"
    assert ladder.LATENCY_FRACTION == roofline.LATENCY_FRACTION
