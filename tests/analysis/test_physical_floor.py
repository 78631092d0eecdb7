"""The physical floor: a median faster than the datasheet allows is IMPOSSIBLE; honest rows above
100 % of their ceiling are flagged with the reason, never silently."""

from __future__ import annotations

import json

import pytest

from gpuprof import results
from gpuprof.analysis import ceilings, derive
from gpuprof.analysis.derive import (
    FLOOR_MARGIN,
    L2_PARTIAL,
    L2_RESIDENT,
    NOMINAL_FLOPS,
    WITHIN_MARGIN,
    impossible_reason,
    judge,
    physical_floor,
)
from gpuprof.analysis.stats import summarize
from gpuprof.commands.show import precisions_from_catalogue
from gpuprof.families import conv2d, matmul, vecadd
from gpuprof.results import IMPOSSIBLE, OK, WRONG, CheckResult, Row, Timing

H100 = ceilings.from_model("NVIDIA H100 80GB HBM3", 132, 1980, l2_bytes=50 * 2**20)
MATMUL_4096 = {"m": 4096, "n": 4096, "k": 4096}
CONV_15x15 = {"n": 8, "c": 32, "h": 64, "w": 64, "k": 32, "r": 15, "s": 15}


def timed(family, variant: str, size: dict[str, int], median_s: float, *, mode: str = "cold",
          precision: str = "fp32", flop_count: str = "executed", status: str = OK) -> Row:
    samples = [0.999 * median_s, median_s, 1.001 * median_s]
    return Row(family=family.__name__.rsplit(".", 1)[-1], variant=variant, size=size, vendor=False,
               check=CheckResult(status=status, max_rel_error=0.0, tolerance=1e-4),
               timing=Timing(mode=mode, samples_s=samples, stop_reason="converged", summary=summarize(samples)),
               flop=family.flop(size), bytes=family.bytes_moved(size), precision=precision, flop_count=flop_count)


def at_rate(family, variant, size, rate, **kw) -> Row:
    work = family.flop(size) if family.RATE == "flop" else family.bytes_moved(size)
    return timed(family, variant, size, work / rate, **kw)


# ---------------------------------------------------------------- TF32 judged as TF32


def test_cublas_tf32_at_398_tflops_is_80_percent_of_the_tf32_peak():
    row = judge(at_rate(matmul, "cublas_tf32", MATMUL_4096, 398.3e12, precision="tf32"), H100, "flop")
    assert row.check.status == OK
    assert row.derived.pct_of_ceiling == pytest.approx(100 * 398.3 / 494.7, abs=0.05)  # 80.5 %
    assert row.derived.ceiling_name == "TF32 tensor, dense"
    assert row.derived.over_ceiling is None


def test_the_same_time_declared_fp32_is_impossible():
    row = judge(at_rate(matmul, "mine", MATMUL_4096, 398.3e12), H100, "flop")  # 6x the FP32 pipe
    assert row.check.status == IMPOSSIBLE
    assert "physical floor" in row.check.reasons[-1] and "FP32 (non-tensor)" in row.check.reasons[-1]
    assert row.derived.rate is None  # no rate, so no speedup either


def test_the_margin_decides_near_the_peak():
    inside = judge(at_rate(matmul, "cublas", MATMUL_4096, 66.9e12 * 1.03), H100, "flop")
    assert inside.check.status == OK and inside.derived.over_ceiling == WITHIN_MARGIN
    outside = judge(at_rate(matmul, "cublas", MATMUL_4096, 66.9e12 / (1 - FLOOR_MARGIN) * 1.01), H100, "flop")
    assert outside.check.status == IMPOSSIBLE
    honest = judge(at_rate(matmul, "cublas", MATMUL_4096, 51.7e12), H100, "flop")
    assert honest.check.status == OK and honest.derived.pct_of_ceiling == pytest.approx(77.3, abs=0.05)


# ---------------------------------------------------------------- bytes and L2


def test_work_off_the_timed_stream_is_impossible():
    # vecadd 2^28 "timed" at event overhead: ~1 PB/s (numbers audit C3).
    row = judge(timed(vecadd, "mine", {"n": 2**28}, 2.5e-6), H100, "bytes")
    assert row.check.status == IMPOSSIBLE
    assert "DRAM" in row.check.reasons[-1]


def test_a_cold_large_working_set_must_cross_dram():
    n = {"n": 2**28}
    floor = physical_floor(timed(vecadd, "grid", n, 1e-3), H100)
    assert floor.seconds == pytest.approx((vecadd.bytes_moved(n) - 50 * 2**20) / 3.35e12)
    assert judge(at_rate(vecadd, "grid", n, 3.6e12), H100, "bytes").check.status == IMPOSSIBLE
    fast = judge(at_rate(vecadd, "grid", n, 3.45e12), H100, "bytes")  # 103 %: the last outputs sit in L2
    assert fast.check.status == OK and fast.derived.over_ceiling == L2_PARTIAL


def test_hot_and_graph_modes_allow_l2_resident_data_and_say_so():
    small = {"n": 2**20}  # 12.6 MB: fits in L2; PERFORMANCE.md's 3495 GB/s in graph mode
    row = judge(at_rate(vecadd, "grid", small, 3495e9, mode="graph"), H100, "bytes")
    assert row.check.status == OK
    assert row.derived.pct_of_ceiling > 100 and row.derived.over_ceiling == L2_RESIDENT
    assert "DRAM" not in physical_floor(row, H100).why  # no bytes floor when the working set fits in L2
    big_hot = at_rate(vecadd, "grid", {"n": 2**28}, 3.3e12, mode="hot")
    assert physical_floor(big_hot, H100).seconds == pytest.approx(
        (vecadd.bytes_moved({"n": 2**28}) - 2 * 50 * 2**20) / 3.35e12)


# ---------------------------------------------------------------- nominal FLOPs


def test_an_fft_counted_as_direct_convolution_is_flagged_not_impossible():
    row = judge(at_rate(conv2d, "fft", CONV_15x15, 75.89e12, flop_count="nominal"), H100, "flop")
    assert row.check.status == OK
    assert row.derived.pct_of_ceiling == pytest.approx(100 * 75.89 / 66.9, abs=0.05)
    assert row.derived.over_ceiling == NOMINAL_FLOPS
    executed = judge(at_rate(conv2d, "mine", CONV_15x15, 75.89e12), H100, "flop")
    assert executed.check.status == IMPOSSIBLE  # a direct convolution cannot do that


# ---------------------------------------------------------------- what is left alone


def test_rows_that_did_not_pass_or_were_not_timed_are_left_alone():
    wrong = judge(timed(vecadd, "mine", {"n": 2**28}, 2.5e-6, status=WRONG), H100, "bytes")
    assert wrong.check.status == WRONG and wrong.check.reasons == []
    untimed = Row(family="vecadd", variant="x", size={"n": 2**28}, vendor=False, check=CheckResult(status=OK),
                  flop=vecadd.flop({"n": 2**28}), bytes=vecadd.bytes_moved({"n": 2**28}))
    assert judge(untimed, H100, "bytes").check.status == OK
    assert impossible_reason(timed(vecadd, "mine", {"n": 2**28}, 2.5e-6), None) is None  # no ceilings, no verdict


@pytest.mark.parametrize("name", ["smoke_a.json", "smoke_b.json", "smoke_slow.json"])
def test_every_recorded_h100_row_is_possible_and_at_most_100_percent(fixtures_dir, name):
    loaded = results.load(fixtures_dir / "results" / name)
    precisions_from_catalogue(loaded.rows)  # files of a gpuprof before the per-row precision key
    limits = ceilings.from_environment(loaded.environment)
    for row in loaded.rows:
        kind = {"matmul": "flop", "vecadd": "bytes"}[row.family]
        judged = judge(row, limits, kind)
        assert judged.check.status == OK, judged.check.reasons
        assert 0 < judged.derived.pct_of_ceiling <= 100, row.id


def test_derived_fields_round_trip_through_the_results_json(tmp_path):
    row = judge(at_rate(matmul, "cublas_tf32", MATMUL_4096, 398.3e12, precision="tf32"), H100, "flop")
    path = results.save(results.Results(environment={}, rows=[row]), tmp_path / "r.json")
    raw = json.loads(path.read_text())["rows"][0]
    assert raw["precision"] == "tf32"
    assert set(raw["derived"]) >= {"rate", "pct_of_ceiling", "ceiling_name", "ceiling_source"}
    back = results.load(path).rows[0]
    assert back.precision == "tf32" and back.derived == row.derived
    # The table and the JSON come from one definition: deriving the loaded row again changes nothing.
    assert derive.derive([back], "flop", None, None, H100) == [row.derived]
