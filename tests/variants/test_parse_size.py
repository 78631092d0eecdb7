"""sizes.parse_size, sizes.clip and sizes.grid_for ('tiles', 'one', and 'per_sm' on a stand-in device)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from gpuprof.errors import InputError, UsageError
from gpuprof.variants import catalog, sizes

INT32_MAX = 2**31 - 1


def family(name: str) -> catalog.Family:
    return catalog.load_family(name)


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("matmul", "4096", {"m": 4096, "n": 4096, "k": 4096}),
        ("matmul", "127x129x65", {"m": 127, "n": 129, "k": 65}),
        ("matmul", "127X129X65", {"m": 127, "n": 129, "k": 65}),
        ("matmul", "m=1,n=2,k=3", {"m": 1, "n": 2, "k": 3}),
        ("matmul", "k=3, m=1, n=2", {"m": 1, "n": 2, "k": 3}),
        ("matmul", "2^10", {"m": 1024, "n": 1024, "k": 1024}),
        ("vecadd", "2^28", {"n": 2**28}),
        ("vecadd", "1e6", {"n": 10**6}),
        ("vecadd", "1.5e3", {"n": 1500}),
        ("vecadd", "n=7", {"n": 7}),
        ("vecadd", str(INT32_MAX), {"n": INT32_MAX}),
    ],
)
def test_parse_size_accepts(name, text, expected):
    size = sizes.parse_size(family(name), text)
    assert size == expected
    assert list(size) == list(family(name).dims)  # always in the family's dimension order
    assert all(type(v) is int for v in size.values())


@pytest.mark.parametrize("name", ["matmul", "vecadd"])
def test_parse_size_none_is_the_default_size_and_a_copy(name):
    fam = family(name)
    size = sizes.parse_size(fam, None)
    assert size == fam.default_size
    assert size is not fam.default_size  # callers may change it without touching the catalogue


@pytest.mark.parametrize(
    ("name", "text", "words"),
    [
        ("vecadd", "0", ["positive"]),
        ("vecadd", "-3", ["positive"]),
        ("vecadd", "abc", ["--size for vecadd is N"]),
        ("vecadd", "", ["--size"]),
        ("vecadd", "1e-3", ["--size"]),
        ("vecadd", "2.5", ["--size"]),
        ("vecadd", "2^40", ["32-bit"]),
        ("vecadd", str(INT32_MAX + 1), ["32-bit"]),
        ("vecadd", "4096x4096", ["--size for vecadd is N"]),
        ("matmul", "4096x4096", ["MxNxK"]),
        ("matmul", "1x2x3x4", ["MxNxK"]),
        ("matmul", "4096x", ["MxNxK"]),
        ("matmul", "m=1,n=2", ["MxNxK"]),  # k missing
        ("matmul", "m=1,n=2,k=3,q=4", ["MxNxK"]),  # a dimension matmul does not have
        ("matmul", "m=1,n=2,k=3,", ["MxNxK"]),
        ("matmul", "m=1,n=0,k=3", ["positive"]),
    ],
)
def test_parse_size_rejects_with_usage_error(name, text, words):
    with pytest.raises(UsageError) as info:
        sizes.parse_size(family(name), text)
    message = info.value.message
    assert info.value.exit_code == 2
    assert f"bad size '{text}'" in message
    assert "\n" not in message
    for word in words:
        assert word in message


def test_parse_size_rejects_an_overflowing_exponent():
    with pytest.raises(UsageError):
        sizes.parse_size(family("vecadd"), "1e400")


@pytest.mark.parametrize(
    ("size", "cap", "expected"),
    [
        ({"n": 2**28}, {"n": 65536}, {"n": 65536}),
        ({"n": 1000}, {"n": 65536}, {"n": 1000}),
        ({"m": 4096, "n": 4096, "k": 4096}, {"m": 1024}, {"m": 1024, "n": 4096, "k": 4096}),
        ({"n": 2**28}, None, {"n": 2**28}),
        ({"n": 2**28}, {}, {"n": 2**28}),
    ],
)
def test_clip_caps_each_dimension_and_keeps_the_rest(size, cap, expected):
    before = dict(size)
    clipped = sizes.clip(size, cap)
    assert clipped == expected
    assert list(clipped) == list(size)
    assert size == before  # the input is not modified


def test_clip_with_the_shipped_caps_never_grows_a_size():
    for fam in catalog.load_all():
        for v in fam.variants:
            clipped = sizes.clip(fam.default_size, v.max_size)
            assert all(clipped[d] <= fam.default_size[d] for d in fam.dims)
            if v.max_size:
                assert all(clipped[d] <= v.max_size[d] for d in v.max_size)


def test_grid_for_tiles_covers_every_element_with_the_fewest_blocks():
    fam = family("matmul")
    for v in fam.variants:
        if v.vendor or v.grid != "tiles":
            continue
        tile = v.tile_dims()
        for size in (fam.default_size, *fam.check_sizes):
            grid = sizes.grid_for(fam, v, size)
            assert len(grid) == len(fam.grid_dims)
            for blocks, dim, t in zip(grid, fam.grid_dims, tile):
                assert blocks * t >= size[dim] > (blocks - 1) * t


def test_grid_for_tiles_follows_grid_dims_order():
    fam = family("matmul")  # grid_dims = [n, m]: grid.x tiles the columns of C
    v = fam.variant("blocktile_2d")
    bn, bm = v.tile_dims()
    grid = sizes.grid_for(fam, v, {"m": 10 * bm, "n": 3 * bn, "k": 8})
    assert grid == (3, 10)


def test_grid_for_tiles_follows_define_overrides():
    fam = family("matmul")
    v = fam.variant("blocktile_2d")
    size = {"m": 4096, "n": 4096, "k": 4096}
    half = v.with_defines({"BM": v.defines["BM"] // 2})
    assert sizes.grid_for(fam, half, size)[1] == 2 * sizes.grid_for(fam, v, size)[1]


def test_grid_for_vecadd_grid_is_one_thread_per_element():
    fam = family("vecadd")
    v = fam.variant("grid")
    (threads,) = v.tile_dims()
    for n in (1, 4097, 1000003, 2**28):
        assert sizes.grid_for(fam, v, {"n": n}) == (math.ceil(n / threads),)


@pytest.mark.parametrize("variant", ["one_thread", "one_block"])
def test_grid_for_one_is_a_single_block(variant):
    fam = family("vecadd")
    v = fam.variant(variant)
    assert v.grid == "one"
    assert sizes.grid_for(fam, v, fam.default_size) == (1,)


class _Device:
    sm_count = 132  # an H100 SXM5


def test_grid_for_per_sm_evaluates_a_define_so_d_sweeps_the_grid(monkeypatch):
    monkeypatch.setattr(sizes, "device_info", lambda: _Device())
    fam = family("reduce")
    v = fam.variant("vectorized_atomic")
    assert v.grid == "per_sm:BLOCKS_PER_SM"
    assert sizes.grid_for(fam, v, fam.default_size) == (132 * v.defines["BLOCKS_PER_SM"],)
    (three,) = fam.apply_defines([v], {"BLOCKS_PER_SM": 3})
    assert sizes.grid_for(fam, three, fam.default_size) == (396,)


def test_grid_for_per_sm_still_takes_an_integer(monkeypatch):
    monkeypatch.setattr(sizes, "device_info", lambda: _Device())
    fam = family("reduce")
    v = fam.variant("many_per_thread")
    assert v.grid == "per_sm:8" and sizes.grid_for(fam, v, fam.default_size) == (1056,)


@pytest.mark.parametrize("per_sm", ["0", "1025", "UNDEFINED_NAME", "", "1.5"])
def test_a_bad_per_sm_is_one_line_naming_the_forms(per_sm):
    fam = family("reduce")
    v = replace(fam.variant("vectorized_atomic"), grid=f"per_sm:{per_sm}")
    with pytest.raises(InputError, match=r"grid must be 'tiles', 'one', 'per_sm:K' \(K from 1 to 1024"):
        catalog.check_geometry("family.toml", fam, v)


def test_d_that_makes_per_sm_zero_is_a_usage_error():
    fam = family("reduce")
    with pytest.raises(UsageError, match=r"-D BLOCKS_PER_SM=0 gives an invalid launch"):
        fam.apply_defines([fam.variant("last_block")], {"BLOCKS_PER_SM": 0})
