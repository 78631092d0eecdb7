"""On a GPU: the DRAM-stream changes of issue 28 item 3 are correct before anyone times them.
transpose's pipelined rung, reduce's last_block rung, and the cache-hint / in-flight defines of
vectorized_atomic and full_grid_float4, each checked against the float64 reference at the family's
check sizes and the benchmark size, under every define value the sweep will time. Then a timed
run of the new rungs beside their vendor rows (many launches, then the re-check after timing:
last_block's ticket counter must come back to 0 after every launch); the ratios are printed for
docs/PERFORMANCE.md, never asserted."""

from __future__ import annotations

import pytest

from gpuprof import results
from gpuprof.commands.run import RunRequest, run_family
from gpuprof.measure.timing import TimingPolicy

pytestmark = pytest.mark.gpu

QUICK = TimingPolicy(mode="cold", min_samples=5, max_time_s=0.3)

SWEEP = [
    ("transpose", "pipelined", {}),
    ("transpose", "pipelined", {"TILES": 2}),
    ("transpose", "pipelined", {"SWIZZLE": 0}),             # the plain layout: bank conflicts, same answer
    ("transpose", "pipelined", {"MIN_BLOCKS": 0}),
    ("transpose", "pipelined", {"TILES": 3}),              # 8192 / 192 is not whole: the last block breaks early
    ("transpose", "pipelined", {"TILES": 4, "BUFFERS": 1}),
    ("transpose", "pipelined", {"TILES": 8, "MIN_BLOCKS": 0, "LOAD_HINT": 1, "STORE_HINT": 1}),
    ("transpose", "pipelined", {"BLOCK_ROWS": 8}),
    ("transpose", "pipelined", {"TILE": 32, "BLOCK_ROWS": 8, "TILES": 4}),
    ("reduce", "last_block", {}),
    ("reduce", "last_block", {"LOAD_HINT": 0}),
    ("reduce", "last_block", {"LOAD_HINT": 3, "BLOCKS_PER_SM": 4, "BLOCK": 512}),
    ("reduce", "last_block", {"BLOCK": 256, "UNROLL": 8, "BLOCKS_PER_SM": 8}),
    *[("reduce", "vectorized_atomic", {"LOAD_HINT": h}) for h in (1, 2, 3)],
    ("reduce", "vectorized_atomic", {"BLOCKS_PER_SM": 1}),
    *[("vecadd", "full_grid_float4", {"LOAD_HINT": h}) for h in (1, 2, 3)],
    *[("vecadd", "full_grid_float4", {"STORE_HINT": h}) for h in (1, 2)],
    ("vecadd", "full_grid_float4", {"IN_FLIGHT": 0}),
    ("vecadd", "full_grid_float4", {"IN_FLIGHT": 1}),
    ("vecadd", "full_grid_float4", {"IN_FLIGHT": 1, "BLOCK": 128, "UNROLL": 2}),
    ("vecadd", "full_grid_float4", {"IN_FLIGHT": 1, "LOAD_HINT": 1, "STORE_HINT": 1}),
]


@pytest.mark.parametrize(("family", "variant", "defines"), SWEEP,
                         ids=[f"{f}-{v}-{d}" for f, v, d in SWEEP])
def test_each_define_of_the_sweep_is_exact_or_within_tolerance(family, variant, defines):
    outcome = run_family(RunRequest(family=family, variants=[variant], check_only=True, defines=defines))
    (row,) = outcome.rows
    assert row.check.status == results.OK, row.check.reasons


@pytest.mark.parametrize(("family", "variants", "vendor"), [
    ("transpose", ["vectorized", "pipelined", "copy"], "copy"),
    ("reduce", ["vectorized_atomic", "last_block", "cub"], "cub"),
])
def test_the_new_rungs_stay_ok_through_timing_beside_the_vendor(family, variants, vendor):
    outcome = run_family(RunRequest(family=family, variants=variants, policy=QUICK))
    for row in outcome.rows:
        assert row.check.status == results.OK, (row.variant, row.check.reasons)
        assert row.timing is not None and row.timing.summary is not None, row.variant
    times = {row.variant: row.timing.summary.median_s for row in outcome.rows}
    print(family, ", ".join(f"{v} {t * 1e6:.1f} us ({times[vendor] / t:.3f}x {vendor})" for v, t in times.items()))
