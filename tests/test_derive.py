"""derive: rates from the median, % of ceiling, speedups as ratios of rates; only OK rows get any."""

from __future__ import annotations

import pytest

from gpuprof.analysis.ceilings import Ceilings
from gpuprof.analysis.derive import derive, rate_of
from gpuprof.analysis.stats import summarize
from gpuprof.families import matmul, vecadd
from gpuprof.results import CHECK_STATUSES, OK, SKIPPED, WRONG, CheckResult, Row, Timing

CEILINGS = Ceilings(bandwidth_bytes_s=3.35e12, fp32_flops=67e12, tf32_flops=495e12)
MATMUL = {"m": 4096, "n": 4096, "k": 4096}


def row(variant: str, median_s: float | None, *, family: str = "matmul", size: dict[str, int] | None = None,
        status: str = OK, vendor: bool = False, precision: str = "fp32") -> Row:
    """A row timed at `median_s` (three samples around it), with the family's real FLOP and byte counts."""
    spec = {"matmul": matmul, "vecadd": vecadd}[family]
    size = size or (MATMUL if family == "matmul" else {"n": 2**28})
    timing = None
    if median_s is not None:
        samples = [0.99 * median_s, median_s, 1.01 * median_s]
        timing = Timing(mode="cold", samples_s=samples, stop_reason="converged", summary=summarize(samples))
    return Row(family=family, variant=variant, size=size, vendor=vendor, check=CheckResult(status=status),
               timing=timing, flop=spec.flop(size), bytes=spec.bytes_moved(size), precision=precision)


def by_variant(derived):
    return {d.row.variant: d for d in derived}


# ---------------------------------------------------------------- only OK rows


@pytest.mark.parametrize("status", [s for s in CHECK_STATUSES if s != OK])
def test_a_row_that_did_not_pass_gets_no_rate_and_no_speedup_even_with_timing(status):
    rows = [row("naive", 10e-3), row("smem_tiled", 1e-3, status=status), row("cublas", 0.5e-3, vendor=True)]
    d = by_variant(derive(rows, "flop", "naive", "cublas", CEILINGS))
    bad = d["smem_tiled"]
    assert bad.row.timing is not None and bad.row.timing.summary is not None
    assert rate_of(bad.row, "flop") is None
    assert (bad.rate, bad.fraction_of_ceiling, bad.vs_baseline, bad.vs_vendor) == (None, None, None, None)
    assert d["naive"].rate is not None  # the others still get theirs


def test_a_wrong_baseline_gives_nobody_a_baseline_speedup():
    rows = [row("naive", 10e-3, status=WRONG), row("smem_tiled", 1e-3), row("cublas", 0.5e-3, vendor=True)]
    d = by_variant(derive(rows, "flop", "naive", "cublas", CEILINGS))
    assert all(x.vs_baseline is None for x in d.values())
    assert d["smem_tiled"].vs_vendor == pytest.approx(0.5)


def test_an_untimed_row_gets_nothing():
    rows = [row("naive", 10e-3), row("smem_tiled", None, status=SKIPPED)]
    d = by_variant(derive(rows, "flop", "naive", None, CEILINGS))
    assert d["smem_tiled"].rate is None and d["smem_tiled"].vs_baseline is None


# ---------------------------------------------------------------- rates and speedups


def test_rate_is_work_over_median():
    r = row("naive", 2e-3)
    assert rate_of(r, "flop") == pytest.approx(r.flop / r.timing.summary.median_s)
    assert rate_of(r, "bytes") == pytest.approx(r.bytes / r.timing.summary.median_s)


def test_equal_sizes_speedup_is_the_time_ratio():
    times = {"naive": 40e-3, "coalesced": 10e-3, "smem_tiled": 5e-3, "cublas": 1e-3}
    rows = [row(name, t, vendor=name == "cublas") for name, t in times.items()]
    d = by_variant(derive(rows, "flop", "naive", "cublas", CEILINGS))
    for name, t in times.items():
        assert d[name].vs_baseline == pytest.approx(times["naive"] / t)
        assert d[name].vs_vendor == pytest.approx(times["cublas"] / t)
    assert d["naive"].vs_baseline == pytest.approx(1.0)
    assert d["cublas"].vs_vendor == pytest.approx(1.0)


def test_a_capped_row_at_a_smaller_size_compares_by_rate_not_time():
    big, small = {"n": 2**28}, {"n": 2**16}
    rows = [row("one_thread", 3.6e-3, family="vecadd", size=small), row("grid", 0.25e-3, family="vecadd", size=big)]
    d = by_variant(derive(rows, "bytes", "grid", None, CEILINGS))
    slow, base = d["one_thread"], d["grid"]
    expected = (vecadd.bytes_moved(small) / 3.6e-3) / (vecadd.bytes_moved(big) / 0.25e-3)
    assert slow.vs_baseline == pytest.approx(expected)
    assert slow.vs_baseline == pytest.approx(slow.rate / base.rate)
    assert slow.vs_baseline != pytest.approx(0.25e-3 / 3.6e-3)  # a bare time ratio would flatter it


def test_speedup_is_independent_of_size_for_equal_rates():
    rows = [row("grid", 1e-3, family="vecadd", size={"n": 2**20}),
            row("vectorized", 4e-3, family="vecadd", size={"n": 2**22})]
    d = by_variant(derive(rows, "bytes", "grid", None, None))
    assert d["vectorized"].vs_baseline == pytest.approx(1.0)


# ---------------------------------------------------------------- % of ceiling


def test_bytes_family_uses_bandwidth():
    d = derive([row("grid", 1e-3, family="vecadd")], "bytes", "grid", None, CEILINGS)[0]
    assert d.rate_kind == "bytes"
    assert d.fraction_of_ceiling == pytest.approx(d.rate / CEILINGS.bandwidth_bytes_s)


def test_flop_family_uses_fp32():
    d = derive([row("smem_tiled", 10e-3)], "flop", "smem_tiled", None, CEILINGS)[0]
    assert d.fraction_of_ceiling == pytest.approx(d.rate / CEILINGS.fp32_flops)


def test_a_tf32_variant_uses_the_tf32_ceiling_when_known():
    rows = [row("cublas", 2e-3, vendor=True), row("cublas_tf32", 0.5e-3, vendor=True, precision="tf32")]
    d = by_variant(derive(rows, "flop", "cublas", "cublas", CEILINGS))
    assert d["cublas_tf32"].fraction_of_ceiling == pytest.approx(d["cublas_tf32"].rate / CEILINGS.tf32_flops)
    assert d["cublas"].fraction_of_ceiling == pytest.approx(d["cublas"].rate / CEILINGS.fp32_flops)


def test_the_ceiling_follows_the_precision_not_the_name():
    """A student's FP32 kernel named mine_tf32 is judged against the FP32 peak (issue 11)."""
    d = derive([row("mine_tf32", 0.5e-3)], "flop", None, None, CEILINGS)[0]
    assert d.fraction_of_ceiling == pytest.approx(d.rate / CEILINGS.fp32_flops)


def test_a_tf32_variant_falls_back_to_fp32_without_a_tf32_ceiling():
    limits = Ceilings(bandwidth_bytes_s=3.35e12, fp32_flops=67e12)
    d = derive([row("cublas_tf32", 0.5e-3, vendor=True, precision="tf32")], "flop", None, None, limits)[0]
    assert d.fraction_of_ceiling == pytest.approx(d.rate / limits.fp32_flops)


def test_unknown_ceilings_give_no_fraction():
    assert derive([row("naive", 1e-3)], "flop", "naive", None, None)[0].fraction_of_ceiling is None
    no_fp32 = Ceilings(bandwidth_bytes_s=3.35e12, fp32_flops=None)
    assert derive([row("naive", 1e-3)], "flop", "naive", None, no_fp32)[0].fraction_of_ceiling is None


# ---------------------------------------------------------------- missing references


@pytest.mark.parametrize(("baseline", "vendor"), [(None, None), ("absent", "also_absent"), ("naive", None)])
def test_missing_baseline_or_vendor_rows_give_none(baseline, vendor):
    rows = [row("naive", 10e-3), row("smem_tiled", 1e-3)]
    d = by_variant(derive(rows, "flop", baseline, vendor, CEILINGS))
    for x in d.values():
        assert x.rate is not None
        assert x.vs_vendor is None
        assert (x.vs_baseline is None) == (baseline != "naive")


def test_rows_keep_their_order():
    names = ["smem_tiled", "naive", "cublas"]
    derived = derive([row(n, 1e-3) for n in names], "flop", "naive", "cublas", CEILINGS)
    assert [d.row.variant for d in derived] == names
