"""On a GPU (sm_90: the kernel uses Hopper's bulk copy): scan's pipelined_lookback rung (issue 28
item 3) checked against the float64 reference at the family's check sizes and 2^28, beside
decoupled_lookback and CUB, timed on refreshed inputs and checked again; the rates against the
others are printed for docs/PERFORMANCE.md, not asserted (no timing thresholds in tests). Then the
defines worth sweeping, check-only, and a planted lost tile, which the check must catch."""

from __future__ import annotations

import pytest

from gpuprof import results
from gpuprof.commands.run import RunRequest, run_family
from gpuprof.measure.timing import TimingPolicy
from tests.gpu.test_manifest_gpu import planted

pytestmark = pytest.mark.gpu

QUICK = TimingPolicy(mode="cold", min_samples=5, max_time_s=0.3)
BYTES = 8  # per element: x read once, y written once


@pytest.mark.parametrize("n", [2**28, 2**24 + 3])
def test_pipelined_is_ok_at_every_check_size_beside_decoupled_and_cub(n):
    outcome = run_family(RunRequest(family="scan", variants=["pipelined_lookback", "decoupled_lookback", "cub"],
                                    size={"n": n}, policy=QUICK))
    rows = {row.variant: row for row in outcome.rows}
    assert set(rows) == {"pipelined_lookback", "decoupled_lookback", "cub"}
    for row in rows.values():
        assert row.check.status == results.OK, (row.variant, row.check.reasons)
        assert row.timing is not None and row.timing.summary is not None, row.variant
    checked = [s["n"] for s in rows["pipelined_lookback"].check.sizes_checked]
    assert {1, 1000003, 4097, 1025, 1048579, n} <= set(checked)
    rate = {name: BYTES * n / row.timing.summary.median_s / 1e9 for name, row in rows.items()}
    print(f"scan n={n}: pipelined_lookback {rate['pipelined_lookback']:.0f} GB/s, decoupled_lookback "
          f"{rate['decoupled_lookback']:.0f} GB/s, cub {rate['cub']:.0f} GB/s "
          f"({rate['pipelined_lookback'] / rate['cub']:.3f}x cub)")


@pytest.mark.parametrize("defines", [
    {"STAGES": 1},                                   # one stage: the prefetched tile lands in the one just read
    {"STAGES": 1, "MIN_BLOCKS": 5},                  # 5 blocks of 24 KiB per SM
    {"STAGES": 1, "BLOCK": 128, "ITEMS": 48, "MIN_BLOCKS": 7},  # 7 blocks of 4 warps per SM
    {"STAGES": 3, "MIN_BLOCKS": 3},                  # two tiles in flight per block, 3 blocks per SM
    {"ITEMS": 32, "MIN_BLOCKS": 3},                  # 8192-element tiles
    {"ITEMS": 16, "MIN_BLOCKS": 6},                  # 4096-element tiles (more look-back steps)
    {"BLOCK": 128, "ITEMS": 48},                     # decoupled_lookback's tile shape
    {"BLOCK": 512, "ITEMS": 12, "MIN_BLOCKS": 2},
    {"BLOCK": 64, "ITEMS": 32},                      # one warp beside warp 0 sums and publishes alone
    {"STREAM_STORES": 1},                            # st.global.cs for y
])
def test_pipelined_is_ok_with_the_defines_worth_sweeping(defines):
    """Each define changes the stages, the tile or how many warps sum the prefetched tile; checked at
    the family's check sizes plus 2^22 + 5 (hundreds of tiles, a partial last one, several per block)."""
    outcome = run_family(RunRequest(family="scan", variants=["pipelined_lookback"], size={"n": 2**22 + 5},
                                    check_only=True, defines=defines))
    assert outcome.rows and all(r.check.status == results.OK for r in outcome.rows), \
        [r.check.reasons for r in outcome.rows]


PIPELINED_KEYS = ('block = ["BLOCK"]\ntile = ["BLOCK * ITEMS"]\ngrid = "per_sm:8"\n'
                  'dynamic_smem = "STAGES * BLOCK * ITEMS * 4"\n'
                  'defines = { BLOCK = 256, ITEMS = 24, STAGES = 2, MIN_BLOCKS = 4, STREAM_STORES = 0 }\n'
                  'plan = "lookback"\nhelpers = { reset = "scan_lost_tile_reset" }\n')


def test_a_lost_tile_of_the_pipelined_scan_fails_at_the_benchmark_size(tmp_path):
    """Tile tiles/3 publishes 0 instead of its aggregate, whether it is summed when it lands (most
    tiles) or when scanned (a block's first): every later prefix misses ~3072."""
    lose = "(tile == (n / TILE) / 3 ? 0.f : aggregate)"
    extra = planted(tmp_path, "scan", "pipelined_lookback", "lost_tile", [
        ("publish(tile, FLAG_AGGREGATE, aggregate);", f"publish(tile, FLAG_AGGREGATE, {lose});"),
        ("publish(tile, FLAG_INCLUSIVE, prefix + aggregate);", f"publish(tile, FLAG_INCLUSIVE, prefix + {lose});"),
        ("const float total = warp_sum(", "const float total = (t == (n / TILE) / 3 ? 0.f : 1.f) * warp_sum("),
    ], PIPELINED_KEYS)
    row, = run_family(RunRequest(family="scan", variants=["lost_tile"], size={"n": 2**28}, extra_variants=extra,
                                 check_only=True)).rows
    assert row.check.status == results.WRONG
    assert any(r.startswith(f"{2**28}:") for r in row.check.reasons), row.check.reasons
