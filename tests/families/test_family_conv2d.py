"""conv2d host module, the parts that need no GPU: FLOP and byte counts, geometry, tolerances."""

from __future__ import annotations

import itertools
import math

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
