"""softmax's host module: byte counts, the tolerance, the `sized` dispatch by row length, and the
kernels under other -D values. No GPU."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from gpuprof.families import softmax
from gpuprof.variants import catalog
from gpuprof.variants.catalog import Variant

FAMILY = catalog.load_family("softmax")


def test_bytes_are_one_read_and_one_write():
    size = {"rows": 8192, "cols": 50304}
    assert softmax.bytes_moved(size) == 2 * 4 * 8192 * 50304  # 3.3 GB: 1.1 ms at 3.0 TB/s
    assert softmax.flop(size) == 5 * 8192 * 50304


def v(name):
    return catalog.load_family("softmax").variant(name)


STUDENT = Variant(name="mine", technique="t", user=True)


def test_tolerance_has_a_floor_and_grows_with_cols():
    one = {"rows": 1, "cols": 1}
    assert softmax.tolerance(v("vectorized"), one) == softmax.tolerance(v("naive"), one) == 1e-5
    small, large = (softmax.tolerance(v("vectorized"), {"rows": 1, "cols": c}) for c in (2**16, 2**20))
    assert large == pytest.approx(4 * small)  # sqrt(cols) for partial sums and a tree
    small, large = (softmax.tolerance(v("naive"), {"rows": 1, "cols": c}) for c in (2**16, 2**20))
    assert large == pytest.approx(16 * small)  # cols for one serial sum per row
    assert softmax.tolerance(STUDENT, {"rows": 1, "cols": 2**20}) == large  # students: the serial bound


def test_tolerance_leaves_room_over_errors_measured_on_an_h100():
    measured = {("naive", 1000003): 7.8e-4, ("naive", 50304): 5.0e-5, ("online", 1000003): 7.6e-4,
                ("block_row", 1000003): 3.2e-6, ("vectorized", 50304): 3.2e-7, ("torch", 1000003): 9.7e-7}
    for (variant, cols), err in measured.items():
        assert softmax.tolerance(v(variant), {"rows": 3, "cols": cols}) > 3 * err


def test_one_element_missing_from_a_short_row_sum_fails():
    """127x129: a typical term is 1/cols of the row sum, so dropping it moves every output by ~1/cols."""
    cols = 129
    assert 1 / cols > 10 * softmax.tolerance(STUDENT, {"rows": 127, "cols": cols})


def fake_kernel(name):
    return SimpleNamespace(name=name)


def sized_choice(cols, defines=None):
    v = FAMILY.variant("sized")
    if defines:
        v = v.with_defines(defines)
    functions = {name: fake_kernel(name) for name in (v.kernel, *v.extra_kernels)}
    fn, block = softmax._sized_kernel(v, functions, cols)
    return fn.name, block


@pytest.mark.parametrize(("cols", "kernel", "threads"), [
    (1, "softmax_sized_128x2", 128),
    (129, "softmax_sized_128x2", 128),
    (1024, "softmax_sized_128x2", 128),
    (1025, "softmax_sized_256x2", 256),
    (4096, "softmax_sized_256x4", 256),
    (4097, "softmax_sized_512x4", 512),
    (16384, "softmax_sized_512x8", 512),
    (32768, "softmax_sized_1024x8", 1024),
    (50304, "softmax_sized", 512),
    (51200, "softmax_sized", 512),
    (1000003, "softmax_sized", 512),  # longer than any: the main kernel's streaming fallback
])
def test_sized_picks_the_smallest_instantiation_that_holds_the_row(cols, kernel, threads):
    assert sized_choice(cols) == (kernel, (threads, 1, 1))


def test_sized_main_kernel_capacity_follows_its_defines():
    assert sized_choice(20000, {"BLOCK": 1024, "VPT": 5}) == ("softmax_sized", (1024, 1, 1))  # 20480 < 32768


def test_every_sized_extra_kernel_name_gives_its_geometry():
    v = FAMILY.variant("sized")
    assert v.extra_kernels
    for name in v.extra_kernels:
        b, vpt = name.rsplit("_", 1)[1].split("x")
        assert int(b) % 32 == 0 and int(b) <= 1024 and 1 <= int(vpt) <= 32


ALTERNATIVES = [
    ("block_row", {"BLOCK": 64}), ("block_row", {"BLOCK": 1024}),
    ("warp_shuffle", {"BLOCK": 32}), ("warp_shuffle", {"BLOCK": 1024}),
    ("vectorized", {"BLOCK": 1024, "VPT": 13}), ("vectorized", {"BLOCK": 768, "VPT": 17}),
    ("vectorized", {"BLOCK": 256, "VPT": 4}), ("sized", {"BLOCK": 1024, "VPT": 13}),
]


@pytest.mark.nvcc
@pytest.mark.parametrize(("name", "defines"), ALTERNATIVES, ids=[f"{n}-{d}" for n, d in ALTERNATIVES])
def test_alternative_defines_compile_without_spills(build_clean, name, defines):
    usage = build_clean("softmax", name, defines)
    assert usage.registers * FAMILY.variant(name).with_defines(defines).block_dims()[0] <= 65536
