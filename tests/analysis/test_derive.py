"""derive: rates from the median, % of ceiling, speedups as ratios of rates; only OK rows get any.
The figures are stored on each row (results.Derived)."""

from __future__ import annotations

import pytest

from gpuprof.analysis.ceilings import Ceilings
from gpuprof.analysis.derive import derive, judge, rate_of, speedups
from gpuprof.analysis.stats import summarize
from gpuprof.families import matmul, vecadd
from gpuprof.results import CHECK_STATUSES, OK, SKIPPED, WRONG, CheckResult, Row, Timing

CEILINGS = Ceilings(bandwidth_bytes_s=3.35e12, flops={"fp32": 67e12, "tf32": 495e12})
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


def by_variant(rows: list[Row], *args):
    """derive(rows, *args), then each row's stored figures by its variant."""
    derive(rows, *args)
    return {r.variant: r.derived for r in rows}


# ---------------------------------------------------------------- only OK rows


@pytest.mark.parametrize("status", [s for s in CHECK_STATUSES if s != OK])
def test_a_row_that_did_not_pass_gets_no_rate_and_no_speedup_even_with_timing(status):
    rows = [row("naive", 10e-3), row("smem_tiled", 1e-3, status=status), row("cublas", 0.5e-3, vendor=True)]
    d = by_variant(rows, "flop", "naive", "cublas", CEILINGS)
    bad = d["smem_tiled"]
    assert rows[1].timing is not None and rows[1].timing.summary is not None
    assert rate_of(rows[1], "flop") is None
    assert (bad.rate, bad.pct_of_ceiling, bad.vs_baseline, bad.vs_vendor) == (None, None, None, None)
    assert d["naive"].rate is not None  # the others still get theirs


def test_a_wrong_baseline_gives_nobody_a_baseline_speedup():
    rows = [row("naive", 10e-3, status=WRONG), row("smem_tiled", 1e-3), row("cublas", 0.5e-3, vendor=True)]
    d = by_variant(rows, "flop", "naive", "cublas", CEILINGS)
    assert all(x.vs_baseline is None for x in d.values())
    assert d["smem_tiled"].vs_vendor == pytest.approx(0.5)


def test_an_untimed_row_gets_nothing():
    rows = [row("naive", 10e-3), row("smem_tiled", None, status=SKIPPED)]
    d = by_variant(rows, "flop", "naive", None, CEILINGS)
    assert d["smem_tiled"].rate is None and d["smem_tiled"].vs_baseline is None


# ---------------------------------------------------------------- rates and speedups


def test_rate_is_work_over_median():
    r = row("naive", 2e-3)
    assert rate_of(r, "flop") == pytest.approx(r.flop / r.timing.summary.median_s)
    assert rate_of(r, "bytes") == pytest.approx(r.bytes / r.timing.summary.median_s)


def test_equal_sizes_speedup_is_the_time_ratio():
    times = {"naive": 40e-3, "coalesced": 10e-3, "smem_tiled": 5e-3, "cublas": 1e-3}
    rows = [row(name, t, vendor=name == "cublas") for name, t in times.items()]
    d = by_variant(rows, "flop", "naive", "cublas", CEILINGS)
    for name, t in times.items():
        assert d[name].vs_baseline == pytest.approx(times["naive"] / t)
        assert d[name].vs_vendor == pytest.approx(times["cublas"] / t)
    assert d["naive"].vs_baseline == pytest.approx(1.0)
    assert d["cublas"].vs_vendor == pytest.approx(1.0)


def test_a_capped_row_at_a_smaller_size_compares_by_rate_not_time():
    big, small = {"n": 2**28}, {"n": 2**16}
    rows = [row("one_thread", 3.6e-3, family="vecadd", size=small), row("grid", 0.25e-3, family="vecadd", size=big)]
    d = by_variant(rows, "bytes", "grid", None, CEILINGS)
    slow, base = d["one_thread"], d["grid"]
    expected = (vecadd.bytes_moved(small) / 3.6e-3) / (vecadd.bytes_moved(big) / 0.25e-3)
    assert slow.vs_baseline == pytest.approx(expected)
    assert slow.vs_baseline == pytest.approx(slow.rate / base.rate)
    assert slow.vs_baseline != pytest.approx(0.25e-3 / 3.6e-3)  # a bare time ratio would flatter it


def test_speedup_is_independent_of_size_for_equal_rates():
    rows = [row("grid", 1e-3, family="vecadd", size={"n": 2**20}),
            row("vectorized", 4e-3, family="vecadd", size={"n": 2**22})]
    d = by_variant(rows, "bytes", "grid", None, None)
    assert d["vectorized"].vs_baseline == pytest.approx(1.0)


# ---------------------------------------------------------------- % of ceiling


def test_bytes_family_uses_bandwidth():
    d = derive([row("grid", 1e-3, family="vecadd")], "bytes", "grid", None, CEILINGS)[0]
    assert d.rate_kind == "bytes"
    assert d.pct_of_ceiling == pytest.approx(100 * d.rate / CEILINGS.bandwidth_bytes_s)


def test_flop_family_uses_fp32():
    d = derive([row("smem_tiled", 10e-3)], "flop", "smem_tiled", None, CEILINGS)[0]
    assert d.pct_of_ceiling == pytest.approx(100 * d.rate / CEILINGS.flops["fp32"])


def test_a_tf32_variant_uses_the_tf32_ceiling():
    rows = [row("cublas", 2e-3, vendor=True), row("cublas_tf32", 0.5e-3, vendor=True, precision="tf32")]
    d = by_variant(rows, "flop", "cublas", "cublas", CEILINGS)
    assert d["cublas_tf32"].pct_of_ceiling == pytest.approx(100 * d["cublas_tf32"].rate / CEILINGS.flops["tf32"])
    assert d["cublas_tf32"].ceiling_name == "TF32 tensor, dense"
    assert d["cublas"].pct_of_ceiling == pytest.approx(100 * d["cublas"].rate / CEILINGS.flops["fp32"])


def test_the_ceiling_follows_the_precision_not_the_name():
    d = derive([row("mine_tf32", 0.5e-3)], "flop", None, None, CEILINGS)[0]  # declared fp32 (the default)
    assert d.ceiling_name == "FP32 (non-tensor)"


def test_a_precision_without_a_ceiling_gets_no_fraction_never_the_fp32_one():
    limits = Ceilings(bandwidth_bytes_s=3.35e12, flops={"fp32": 67e12})
    d = derive([row("cublas_tf32", 0.5e-3, vendor=True, precision="tf32")], "flop", None, None, limits)[0]
    assert d.rate is not None and d.pct_of_ceiling is None and d.ceiling_name is None


def test_unknown_ceilings_give_no_fraction():
    assert derive([row("naive", 1e-3)], "flop", "naive", None, None)[0].pct_of_ceiling is None
    no_fp32 = Ceilings(bandwidth_bytes_s=3.35e12, flops={})
    assert derive([row("naive", 1e-3)], "flop", "naive", None, no_fp32)[0].pct_of_ceiling is None


# ---------------------------------------------------------------- missing references


@pytest.mark.parametrize(("baseline", "vendor"), [(None, None), ("absent", "also_absent"), ("naive", None)])
def test_missing_baseline_or_vendor_rows_give_none(baseline, vendor):
    rows = [row("naive", 10e-3), row("smem_tiled", 1e-3)]
    d = by_variant(rows, "flop", baseline, vendor, CEILINGS)
    for x in d.values():
        assert x.rate is not None
        assert x.vs_vendor is None
        assert (x.vs_baseline is None) == (baseline != "naive")


def test_rows_keep_their_order_and_their_figures_are_stored_on_them():
    names = ["smem_tiled", "naive", "cublas"]
    rows = [row(n, 1e-3) for n in names]
    derived = derive(rows, "flop", "naive", "cublas", CEILINGS)
    assert [r.variant for r in rows] == names
    assert derived == [r.derived for r in rows]


# ---------------------------------------------------------------- speedups of a table, from the stored rates


def test_speedups_come_from_the_stored_rates_of_the_tables_rows():
    rows = [row("naive", 100e-3), row("smem_tiled", 10e-3), row("cublas", 5e-3, vendor=True)]
    for r in rows:
        judge(r, CEILINGS, "flop")
    assert all(r.check.status == OK for r in rows)
    assert all(r.derived.vs_baseline is None for r in rows)  # a row alone knows no table
    figures = speedups(rows, "naive", "cublas")
    assert figures == [r.derived for r in rows]
    assert [r.derived.vs_baseline for r in rows] == pytest.approx([1.0, 10.0, 20.0])
    assert [r.derived.vs_vendor for r in rows] == pytest.approx([0.05, 0.5, 1.0])
    unjudged = row("coalesced", 20e-3)
    speedups([*rows, unjudged], "naive", "cublas")
    assert unjudged.derived is None  # no stored rate, no figures made up for it
