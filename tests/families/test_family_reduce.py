"""reduce's host module: byte counts, the n-dependent tolerance, the multi-pass schedule, and the
kernels under other -D values. No GPU."""

from __future__ import annotations

import itertools
import math

import pytest

from gpuprof.families import reduce
from gpuprof.variants import catalog
from gpuprof.variants.catalog import Variant


def test_bytes_are_one_read_of_the_input():
    assert reduce.bytes_moved({"n": 2**28}) == 4 * 2**28  # 1 GiB
    assert reduce.flop({"n": 2**28}) == 2**28


STUDENT = Variant(name="mine", technique="t", user=True)


def test_tolerance_grows_like_sqrt_n_from_a_floor():
    assert reduce.tolerance(catalog.load_family("reduce").variant("cub"), {"n": 1}) == 32 * 2**-24
    small, large = reduce.tolerance(STUDENT, {"n": 2**20}), reduce.tolerance(STUDENT, {"n": 2**28})
    assert large == pytest.approx(small * 16)  # sqrt(2^8)
    assert large == pytest.approx(1.25 * 2**-24 * 2**14)


def test_one_dropped_element_fails_at_a_small_check_size():
    """Inputs are uniform in [0, 1): one element is ~1/n of the sum ~n/2, relative 2/n."""
    n = 4097
    assert 0.5 / (n * 0.5) > 10 * reduce.tolerance(STUDENT, {"n": n})


@pytest.mark.parametrize("n", [1, 2, 7, 511, 512, 513, 4097, 1000003, 2**20 + 1, 2**28])
@pytest.mark.parametrize("per_block", [256, 512])
def test_tiled_schedule_covers_every_element_and_ends_in_one_block(n, per_block):
    passes = reduce.schedule(n, per_block)
    assert passes[0][1] == n and passes[-1][0] == 1
    for (blocks, _), (_, next_count) in itertools.pairwise(passes):
        assert next_count == blocks  # each pass sums the previous one's partials
    for blocks, count in passes:
        assert blocks == math.ceil(count / per_block)
    assert len(passes) <= 1 + math.ceil(math.log(max(n, 2), per_block))


@pytest.mark.parametrize("n", [1, 7, 512, 513, 1000003, 2**28])
def test_grid_stride_schedule_is_at_most_two_launches(n):
    passes = reduce.schedule(n, 512, grid_stride_blocks=1056)
    assert passes[-1][0] == 1 and len(passes) <= 2
    assert passes[0] == (min(1056, math.ceil(n / 512)), n)
    if len(passes) == 2:
        assert passes[1] == (1, passes[0][0])


ALTERNATIVES = [
    *[(v, {"BLOCK": b}) for v in ("interleaved_divergent", "interleaved", "sequential", "first_add")
      for b in (64, 1024)],
    *[(v, {"BLOCK": b}) for v in ("unroll_last_warp", "complete_unroll", "many_per_thread")
      for b in (64, 128, 512, 1024)],
    ("warp_shuffle", {"BLOCK": 32}),
    ("warp_shuffle", {"BLOCK": 1024}),
    ("vectorized_atomic", {"BLOCK": 256, "UNROLL": 1}),
    ("vectorized_atomic", {"BLOCK": 512, "UNROLL": 4}),
    ("vectorized_atomic", {"BLOCK": 1024, "UNROLL": 8}),
    *[("vectorized_atomic", {"LOAD_HINT": h}) for h in (1, 2, 3)],
    ("vectorized_atomic", {"BLOCK": 512, "BLOCKS_PER_SM": 4, "LOAD_HINT": 1}),
    *[("last_block", {"LOAD_HINT": h}) for h in (0, 1, 2, 3)],
    ("last_block", {"BLOCK": 256, "UNROLL": 8, "BLOCKS_PER_SM": 8}),
    ("last_block", {"BLOCK": 32, "UNROLL": 1, "BLOCKS_PER_SM": 1}),
]


@pytest.mark.nvcc
@pytest.mark.parametrize(("name", "defines"), ALTERNATIVES, ids=[f"{n}-{d}" for n, d in ALTERNATIVES])
def test_other_block_sizes_compile_without_spills(build_clean, name, defines):
    build_clean("reduce", name, defines)
