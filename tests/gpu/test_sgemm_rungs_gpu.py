"""On a GPU: matmul's multistage, swizzled (issue 15 item 6) and interleaved (issue 28 item 3) rungs
through run_family: exact at the awkward check sizes (run_family checks every size in family.toml's
check_sizes, then the run size) and timed at 4096³ with a FLOP rate; a deep-pipeline sweep case
(over 48 KB), the 2-block 128-thread case and interleaved's sweep points run too (K % BK != 0 and
N % 4 != 0 at the odd sizes exercise its remainder-first tile and its 4-byte B copies)."""

from __future__ import annotations

import pytest

from gpuprof import families, results
from gpuprof.analysis.derive import derive
from gpuprof.commands.run import RunRequest, run_family
from gpuprof.measure.timing import TimingPolicy
from gpuprof.variants import catalog

pytestmark = pytest.mark.gpu

QUICK = TimingPolicy(mode="cold", min_samples=5, max_time_s=0.3)
RUNGS = ["warptile", "multistage", "swizzled", "interleaved", "cublas"]
CUBE = {"m": 4096, "n": 4096, "k": 4096}


def assert_ok_and_timed(outcome: results.Results) -> None:
    for row in outcome.rows:
        assert row.check.status == results.OK, (row.variant, row.check.reasons)
        assert row.timing is not None and row.timing.summary is not None, row.variant


@pytest.mark.parametrize("size", [CUBE, {"m": 127, "n": 129, "k": 65}, {"m": 1000, "n": 1001, "k": 999}])
def test_new_rungs_are_exact_and_timed(size):
    outcome = run_family(RunRequest(family="matmul", variants=RUNGS, size=size, policy=QUICK))
    assert [r.variant for r in outcome.rows] == RUNGS
    assert_ok_and_timed(outcome)
    fam = catalog.load_family("matmul")
    rows = derive(outcome.rows, families.host(fam).RATE, fam.baseline, fam.vendor_reference, None)
    assert all(d.rate and d.rate > 0 for d in rows)


@pytest.mark.parametrize("defines", [
    {"BK": 16, "STAGES": 4},                                             # 99 KB of shared memory
    {"NUM_THREADS": 128, "BM": 128, "BN": 128, "BK": 16, "STAGES": 4},  # 65 KB, two blocks per SM
    {"BM": 256, "BN": 128, "WM": 128, "WN": 32, "BK": 8, "STAGES": 3},
    {"GROUP_M": 1},
])
def test_sweep_cases_are_exact(defines):
    outcome = run_family(RunRequest(family="matmul", variants=["swizzled"], size=CUBE, policy=QUICK,
                                    defines=defines))
    assert_ok_and_timed(outcome)


@pytest.mark.parametrize("defines", [
    {"STAGES": 3}, {"STAGES": 4}, {"STAGES": 6},
    {"INTERLEAVE": 1},                                                   # plain 4 x 8 lane grid
    {"LANES_M": 8, "INTERLEAVE": 2},                                     # 8 x 4 lanes: 8 x 16 per thread
    {"BM": 256, "BN": 128, "WM": 64, "WN": 64},                          # CUTLASS's 256x128 shape
    {"NUM_THREADS": 128, "BM": 128, "BN": 128, "STAGES": 4, "MINBLOCKS": 2},
])
@pytest.mark.parametrize("size", [CUBE, {"m": 1000, "n": 1001, "k": 999}])
def test_interleaved_sweep_points_are_exact(defines, size):
    outcome = run_family(RunRequest(family="matmul", variants=["interleaved"], size=size, policy=QUICK,
                                    defines=defines))
    assert_ok_and_timed(outcome)
