"""conv2d host module, the parts that need no GPU: FLOP and byte counts, geometry, tolerances."""

from __future__ import annotations

import itertools
import math
from types import SimpleNamespace

import pytest

from gpuprof.errors import UsageError
from gpuprof.families import conv2d
from gpuprof.variants import catalog

DEFAULT = {"n": 32, "c": 64, "h": 56, "w": 56, "k": 64, "r": 3, "s": 3}


def brute_force_taps(size: dict[str, int]) -> int:
    """Multiply-adds by counting every (n, k, p, q, c, r, s) of the loop nest, halo taps included."""
    g = conv2d.geometry(size)
    return sum(1 for _ in itertools.product(range(g.n), range(g.k), range(g.p), range(g.q),
                                            range(g.c), range(g.r), range(g.s)))


@pytest.mark.parametrize("size", catalog.load_family("conv2d").check_sizes[:3], ids=str)
def test_flop_is_two_per_tap_of_the_loop_nest(size):
    assert conv2d.flop(size) == 2 * brute_force_taps(size)


def test_default_size_counts_by_hand():
    # 32 images x 64 filters x 56 x 56 outputs x 64 x 3 x 3 taps, 2 FLOP each
    assert conv2d.flop(DEFAULT) == 2 * 32 * 64 * 56 * 56 * 64 * 9 == 7_398_752_256
    # x and y are 32 x 64 x 56 x 56 floats each, w is 64 x 64 x 3 x 3
    assert conv2d.bytes_moved(DEFAULT) == 4 * (2 * 32 * 64 * 56 * 56 + 64 * 64 * 9) == 51_527_680


def test_same_padding_keeps_the_image_size():
    for r in (1, 3, 5, 15, 17):
        g = conv2d.geometry({**DEFAULT, "r": r, "s": r})
        assert (g.p, g.q) == (56, 56) and g.pad_h == (r - 1) // 2
    g = conv2d.geometry({"n": 2, "c": 3, "h": 12, "w": 11, "k": 9, "r": 17, "s": 19})  # filter larger than the image
    assert (g.p, g.q, g.pad_h, g.pad_w, g.crs, g.npq) == (12, 11, 8, 9, 3 * 17 * 19, 2 * 12 * 11)


@pytest.mark.parametrize(("r", "s"), [(2, 3), (3, 4), (2, 2)])
def test_even_filters_are_refused(r, s):
    with pytest.raises(UsageError, match="odd"):
        conv2d.geometry({**DEFAULT, "r": r, "s": s})


def test_sizes_over_the_32_bit_index_limit_are_refused():
    with pytest.raises(UsageError, match="32-bit"):
        conv2d.geometry({**DEFAULT, "n": 2**20})


def variant(name):
    return catalog.load_family("conv2d").variant(name)


def test_tolerance_is_fp32_sized_and_grows_with_the_sum_length():
    small = conv2d.tolerance(variant("implicit_gemm"), DEFAULT)
    assert 1e-5 <= small <= 2e-5  # 8 u sqrt(576) + 14 u
    huge = conv2d.tolerance(variant("implicit_gemm"), {"n": 1, "c": 65536, "h": 1, "w": 1, "k": 1, "r": 15, "s": 15})
    assert huge == pytest.approx(8 * 2**-24 * math.sqrt(65536 * 225) + 14 * 2**-24)  # 8 u sqrt(CRS) + 14 u
    assert conv2d.tolerance(variant("direct"), DEFAULT) == small


def test_transform_tolerance_is_looser_but_still_catches_a_wrong_tap():
    tol = conv2d.tolerance(variant("fft"), DEFAULT)
    assert conv2d.tolerance(variant("cudnn"), DEFAULT) == tol  # cuDNN may pick Winograd or FFT
    assert conv2d.tolerance(variant("direct"), DEFAULT) < tol <= 1e-3
    wrong_tap = 0.25 / (math.sqrt(64 * 9) / 3)  # |x w| ~ 0.25 against rms sqrt(CRS)/3
    assert wrong_tap > 10 * tol


@pytest.mark.parametrize(("n", "expected"),
                         [(1, 2), (2, 2), (11, 12), (13, 14), (58, 60), (78, 80), (29, 30), (97, 98)])
def test_fft_sizes_have_only_small_prime_factors(n, expected):
    assert conv2d._fft_size(n) == expected


def test_every_suite_size_fits_the_grid_limits():
    fam = catalog.load_family("conv2d")
    for size in (fam.default_size, *fam.check_sizes):
        g = conv2d.geometry(size)
        assert g.k <= 65535 and g.n <= 65535


# ---------------------------------------------------------------- winograd: the plan, not the kernel (GPU tests run it)


class _Recorder:
    """A compiled kernel's stand-in: logs each launch's grid, block, arguments and shared memory."""

    def __init__(self, name, log):
        self.name, self.log = name, log

    def __call__(self, grid, block, args, stream=None, shared_mem=0):
        self.log.append((self.name, grid, block, args, shared_mem))


def winograd_launches(monkeypatch, size):
    import numpy as np

    monkeypatch.setattr(conv2d, "cupy", lambda: np)
    v = variant("winograd")
    log: list = []
    functions = {k: _Recorder(k, log) for k in (v.kernel, *v.extra_kernels)}
    rng = np.random.default_rng(0)
    g = conv2d.geometry(size)
    inputs = {"x": rng.uniform(-1, 1, (g.n, g.c, g.h, g.w)).astype(np.float32),
              "w": rng.uniform(-1, 1, (g.k, g.c, g.r, g.s)).astype(np.float32)}
    out = np.full((g.n, g.k, g.p, g.q), np.nan, dtype=np.float32)
    ctx = SimpleNamespace(grid=(1, 1, 1), block=v.block_dims(), shared_mem=v.dynamic_smem_bytes())
    conv2d.plan(v, functions, inputs, out, size, ctx)(None)
    return v, inputs, out, log


@pytest.mark.parametrize(("size", "channels", "tiles"), [
    ({"n": 1, "c": 3, "h": 7, "w": 9, "k": 5, "r": 3, "s": 3}, 3, 1 * 4 * 5),         # one 3x3 chunk per channel
    ({"n": 2, "c": 5, "h": 13, "w": 11, "k": 7, "r": 5, "s": 5}, 5 * 4, 2 * 7 * 6),   # 5x5: 2x2 chunks
    ({"n": 1, "c": 1, "h": 1, "w": 1, "k": 1, "r": 1, "s": 1}, 1, 1),                 # 1x1: one padded chunk
    ({"n": 2, "c": 3, "h": 12, "w": 11, "k": 9, "r": 17, "s": 19}, 3 * 6 * 7, 2 * 6 * 6),
])
def test_winograd_cuts_any_odd_filter_into_3x3_chunks(size, channels, tiles):
    g = conv2d.geometry(size)
    padded, filters, counted = conv2d.winograd_extents(g, 8, 32)
    assert (padded, filters, counted) == (-(-channels // 8) * 8, -(-g.k // 32) * 32, tiles)


@pytest.mark.parametrize("size", catalog.load_family("conv2d").check_sizes, ids=str)
def test_winograd_plan_transforms_the_filter_every_launch_then_covers_every_tile(monkeypatch, size):
    v, inputs, out, log = winograd_launches(monkeypatch, size)
    (transform, f_grid, f_block, f_args, f_smem), (main, grid, block, args, smem) = log
    g = conv2d.geometry(size)
    d = v.defines
    channels, filters, tiles = conv2d.winograd_extents(g, d["BK"], d["BM"])
    assert (transform, main) == (v.helper("filter"), v.kernel)
    workspace = f_args[1]
    assert f_args[0] is inputs["w"] and workspace.size == 16 * channels * filters
    assert f_grid[0] * f_block[0] >= channels * filters and f_smem == 0   # one thread per (c', k)
    assert args[0] is inputs["x"] and args[1] is workspace and args[2] is out  # U in w's place
    assert grid == (-(-g.k // d["BM"]) * -(-tiles // d["BN"]),) and block == v.block_dims()
    assert smem == v.dynamic_smem_bytes() == 2 * 16 * d["BK"] * (d["BM"] + d["BN"]) * 4


def test_winograd_counts_direct_flops_and_keeps_the_products_tolerance():
    v = variant("winograd")
    assert v.flop_count == "nominal"   # the family's formula: 2.25x more FLOPs than it does at 3x3
    assert conv2d.tolerance(v, DEFAULT) == conv2d.tolerance(variant("implicit_gemm"), DEFAULT)


def test_winograd_refuses_a_transformed_filter_over_the_index_limit():
    v = variant("winograd")
    ctx = SimpleNamespace(grid=(1, 1, 1), block=v.block_dims(), shared_mem=v.dynamic_smem_bytes())
    # U would hold 16 * 2^28 floats: refused before any buffer is made (none is passed)
    size = {"n": 1, "c": 2**14, "h": 1, "w": 1, "k": 2**14, "r": 1, "s": 1}
    with pytest.raises(UsageError, match="32-bit"):
        conv2d.plan(v, dict.fromkeys((v.kernel, *v.extra_kernels)), {"x": None, "w": None}, None, size, ctx)
