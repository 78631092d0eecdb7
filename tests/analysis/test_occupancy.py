"""Theoretical occupancy on sm_90 against cases worked by hand (docs/occupancy.md) and the ones
NVIDIA's CUDA C++ Best Practices Guide works through (its register example holds on every
architecture with 64 K registers and 64 warps per SM, sm_90 included)."""

from __future__ import annotations

import pytest

from gpuprof.analysis.occupancy import BLOCKS, REGISTERS, SHARED_MEMORY, WARPS, limits_for, theoretical_occupancy


@pytest.mark.parametrize(("threads", "registers", "smem", "blocks", "occupancy", "limiters"), [
    # Best Practices Guide, "Calculating Occupancy": 37 registers, 128-thread blocks -> 12 blocks, 75 %;
    # 320-thread blocks -> 4 blocks, 63 % (37*32 = 1184 -> 1280 per warp; 16384/1280 = 12 warps per
    # sub-partition, 48 per SM; a flat 65536/1280 = 51 warps would give 5 blocks of 320 instead).
    (128, 37, 0, 12, 0.75, (REGISTERS,)),
    (320, 37, 0, 4, 0.625, (REGISTERS,)),
    # 256 threads, 32 registers: 1024 per warp, 64 warps by registers = 64 by the warp limit: 8 blocks.
    (256, 32, 0, 8, 1.0, (REGISTERS, WARPS)),
    # 64 registers: 2048 per warp, 8 warps per sub-partition, 32 per SM: 4 blocks of 8 warps.
    (256, 64, 0, 4, 0.5, (REGISTERS,)),
    # 255 registers: 8160 -> 8192 per warp, 2 per sub-partition, 8 per SM: one block of 8 warps.
    (256, 255, 0, 1, 0.125, (REGISTERS,)),
    # 128 threads, few registers: 64 warps / 4 = 16 blocks.
    (128, 16, 0, 16, 1.0, (WARPS,)),
    # one warp a block: 64 by warps, but at most 32 blocks: half the warps.
    (32, 16, 0, 32, 0.5, (BLOCKS,)),
    # 48 KB static + 1 KB reserved = 50176 B a block: 233472 // 50176 = 4 blocks of 8 warps.
    (256, 32, 48 * 1024, 4, 0.5, (SHARED_MEMORY,)),
    # the reserved KB counts: 16 KB a block fits 13 times (233472 // 17408), not 14.
    (64, 16, 16 * 1024, 13, 13 * 2 / 64, (SHARED_MEMORY,)),
    # the largest a block may have: 227 KB + 1 KB = the whole 228 KB, one block.
    (1024, 32, 227 * 1024, 1, 0.5, (SHARED_MEMORY,)),
    # 1024 threads at 64 registers: 32 warps a block but 32 warps allowed by registers: one block.
    (1024, 64, 0, 1, 0.5, (REGISTERS,)),
    # odd block sizes round up to whole warps: 100 threads = 4 warps.
    (100, 16, 0, 16, 1.0, (WARPS,)),
])
def test_hand_worked_cases(threads, registers, smem, blocks, occupancy, limiters):
    got = theoretical_occupancy(threads, registers, smem)
    assert (got.blocks_per_sm, got.limiters) == (blocks, limiters)
    assert got.occupancy == pytest.approx(occupancy)
    assert got.warps_per_sm == blocks * -(-threads // 32)


def test_smem_allocation_rounds_to_128_bytes():
    # 7 KB + 1 KB reserved = 8192 B -> 28 blocks; one byte more rounds to 8320 B -> 28 still; 9 KB -> 22
    assert theoretical_occupancy(32, 16, 7 * 1024).blocks_per_sm == 28
    assert theoretical_occupancy(32, 16, 7 * 1024 + 1).blocks_per_sm == 233472 // 8320
    assert theoretical_occupancy(32, 16, 9 * 1024).blocks_per_sm == 22


def test_what_cannot_launch_has_no_blocks_and_says_why():
    too_much = theoretical_occupancy(256, 32, 227 * 1024 + 1)
    assert (too_much.blocks_per_sm, too_much.limiters) == (0, (SHARED_MEMORY,))
    assert "allows 232448 B" in too_much.note
    assert theoretical_occupancy(256, 256, 0).blocks_per_sm == 0
    # 1024 threads at 128 registers: 4096 per warp, 16 warps per SM < 32 a block
    none = theoretical_occupancy(1024, 128, 0)
    assert (none.blocks_per_sm, none.limiter) == (0, REGISTERS)
    assert "needs more registers" in none.note


@pytest.mark.parametrize("threads", [0, 1025])
def test_block_size_outside_the_limits_is_refused(threads):
    with pytest.raises(ValueError, match="threads per block"):
        theoretical_occupancy(threads, 32, 0)


def test_known_architectures():
    assert limits_for("sm_90") is limits_for("sm_90a")
    assert limits_for("sm_80") is None
