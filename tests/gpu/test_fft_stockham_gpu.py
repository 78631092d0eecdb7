"""On a GPU: fft's radix-8 Stockham variant (issue 28 item 3) checked against the float64
reference at the course suite's sizes (one pass at 2^10, two at 2^20 and 2^22, an odd batch at
2^17 = 512·256) beside fourstep and cuFFT; the cuFFT ratios are printed for docs/PERFORMANCE.md,
not asserted (no timing thresholds in tests). Then the defines worth sweeping, check-only."""

from __future__ import annotations

import pytest

from gpuprof import results
from gpuprof.commands.run import RunRequest, run_family
from gpuprof.measure.timing import TimingPolicy

pytestmark = pytest.mark.gpu

QUICK = TimingPolicy(mode="cold", min_samples=5, max_time_s=0.3)


@pytest.mark.parametrize("size", [
    {"n": 1024, "batch": 65536},
    {"n": 1 << 20, "batch": 16},
    {"n": 1 << 22, "batch": 4},
    {"n": 1 << 17, "batch": 9},
])
def test_stockham_is_ok_at_the_suite_sizes_beside_fourstep_and_cufft(size):
    outcome = run_family(RunRequest(family="fft", variants=["stockham", "fourstep", "cufft"], size=size,
                                    policy=QUICK))
    for row in outcome.rows:
        assert row.check.status == results.OK, (row.variant, row.check.reasons)
        assert row.timing is not None and row.timing.summary is not None, row.variant
    times = {row.variant: row.timing.summary.median_s for row in outcome.rows}
    print(f"fft {size}: stockham {times['stockham'] * 1e6:.1f} us ({times['cufft'] / times['stockham']:.3f}x cuFFT), "
          f"fourstep {times['fourstep'] * 1e6:.1f} us, cuFFT {times['cufft'] * 1e6:.1f} us")


@pytest.mark.parametrize("defines", [
    {"RADIX": 4, "THREADS": 256},           # radix-4 stages, 4 points a thread
    {"RADIX": 4, "THREADS": 256, "MINBLOCKS": 4},
    {"THREADS": 256, "MINBLOCKS": 4},       # two 1024-point signals a block
    {"THREADS": 512, "MINBLOCKS": 2},
    {"MINBLOCKS": 12},                      # 40 registers
    {"MAX_RADIX": 64},                      # three passes at 2^16 (32·32·64: s > 1 and m > 1 in the middle)
    {"MAX_RADIX": 2},                       # sixteen radix-2 passes (512 columns a block)
])
def test_stockham_is_ok_with_the_defines_worth_sweeping(defines):
    """Every define changes the blocks, the thread maps or the pass split; each is checked at the
    family's check sizes plus 2^16 x 3 (two passes, or more with a small MAX_RADIX)."""
    outcome = run_family(RunRequest(family="fft", variants=["stockham"], size={"n": 1 << 16, "batch": 3},
                                    check_only=True, defines=defines))
    assert outcome.rows and all(r.check.status == results.OK for r in outcome.rows), \
        [r.check.reasons for r in outcome.rows]
