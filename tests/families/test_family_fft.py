"""fft's host module: FLOP convention, tolerance, the launch schedule (ping-pong, tile split) and a
numpy emulation of the kernels' exact index and twiddle formulas against numpy.fft. No GPU."""

from __future__ import annotations

import itertools
import math
from types import SimpleNamespace

import numpy as np
import pytest

from gpuprof.errors import UsageError
from gpuprof.families import fft
from gpuprof.variants import catalog


def test_flop_convention_is_5_n_log2n_per_signal():
    assert fft.flop({"n": 2**20, "batch": 16}) == 5 * 2**20 * 20 * 16
    assert fft.bytes_moved({"n": 2**20, "batch": 16}) == 2 * 8 * 2**20 * 16


@pytest.mark.parametrize("n", [0, 3, 1000, 2**20 + 1])
def test_n_must_be_a_power_of_two(n):
    with pytest.raises(UsageError, match="power of two"):
        fft.flop({"n": n, "batch": 1})


def test_tolerance_grows_with_log2n_and_still_catches_an_o1_error():
    assert fft.tolerance("x", {"n": 2**20, "batch": 1}) == pytest.approx(
        2 * fft.tolerance("x", {"n": 2**10, "batch": 1}))
    assert fft.tolerance("x", {"n": 2**22, "batch": 1}) < 1e-4


def stage(x: np.ndarray, s: int) -> np.ndarray:
    """fft_naive / fft_smem_stage, one thread at a time, with the kernels' index formulas."""
    n = x.shape[-1]
    half = n // 2
    y = np.full_like(x, np.nan)
    for k in range(half):
        q, p = k & (s - 1), k // s
        a, b = x[..., k], x[..., k + half]
        w = np.exp(-1j * np.pi * (2 * p * s) / n)
        y[..., q + 2 * s * p] = a + b
        y[..., q + 2 * s * p + s] = (a - b) * w
    return y


def tile(x: np.ndarray, s: int) -> np.ndarray:
    """fft_smem: block (signal, q) transforms x[q + s·j] with local Stockham stages, writes out[q + s·k]."""
    n = x.shape[-1]
    length = n // s
    y = np.full_like(x, np.nan)
    for q in range(s):
        buf = x[..., q::s].copy()
        stride = 1
        while stride < length:
            half = length // 2
            nxt = np.empty_like(buf)
            for k in range(half):
                qq, p = k & (stride - 1), k // stride
                a, b = buf[..., k], buf[..., k + half]
                nxt[..., qq + 2 * stride * p] = a + b
                nxt[..., qq + 2 * stride * p + stride] = (a - b) * np.exp(-1j * np.pi * (2 * p * stride) / length)
            buf, stride = nxt, stride * 2
        y[..., q::s] = buf
    return y


def emulate(x: np.ndarray, tile_points: int | None) -> np.ndarray:
    buffers = {"in": x.copy(), "out": np.full_like(x, np.nan), "work": np.full_like(x, np.nan)}
    for step in fft.schedule(x.shape[-1], tile_points):
        buffers[step.dst] = (stage if step.kernel == "stage" else tile)(buffers[step.src], step.s)
    np.testing.assert_array_equal(buffers["in"], x)  # the input is never written
    return buffers["out"]


@pytest.mark.parametrize("n", [2, 4, 8, 64, 256])
@pytest.mark.parametrize("tile_points", [None, 2, 8, 2048])
def test_emulated_kernels_match_numpy_fft(n, tile_points):
    rng = np.random.default_rng(n)
    x = rng.uniform(-1, 1, (3, n)) + 1j * rng.uniform(-1, 1, (3, n))
    np.testing.assert_allclose(emulate(x, tile_points), np.fft.fft(x, axis=-1), rtol=0, atol=1e-9 * n)


@pytest.mark.parametrize("n", [2, 4, 1024, 2048, 4096, 2**20, 2**22])
@pytest.mark.parametrize("tile_points", [None, 2048])
def test_schedule_reads_in_first_writes_out_last_and_never_in_place(n, tile_points):
    steps = fft.schedule(n, tile_points)
    assert steps[0].src == "in" and steps[-1].dst == "out"
    assert all(a.dst == b.src for a, b in itertools.pairwise(steps))
    assert all(s.src != s.dst and s.dst != "in" for s in steps)
    stages = int(math.log2(n))
    if tile_points is None:
        assert [s.s for s in steps] == [2**j for j in range(stages)]
    else:
        assert steps[-1].kernel == "tile" and n // steps[-1].s <= tile_points
        assert sum(s.kernel == "stage" for s in steps) == max(0, stages - 11)


class FakeKernel:
    def __init__(self, name, calls):
        self.name, self.calls = name, calls

    def __call__(self, grid, block, args, stream=None):
        self.calls.append((self.name, grid, block, args[-1]))


def test_plan_launches_the_manifest_kernels_with_their_grids(monkeypatch):
    fam = catalog.load_family("fft")
    smem = fam.variant("smem")
    calls: list = []
    functions = {k: FakeKernel(k, calls) for k in (smem.kernel, *smem.extra_kernels)}
    fake_cp = SimpleNamespace(empty_like=lambda a: f"work-like-{a}")
    monkeypatch.setattr(fft, "cupy", lambda: fake_cp)
    size = {"n": 8192, "batch": 3}
    launch = fft.plan(smem, functions, {"in": "IN"}, "OUT", size, SimpleNamespace(block=(512, 1, 1), grid=(3,)))
    launch("stream")
    assert calls == [("fft_smem_stage", (8192 // 2 * 3 // 512,), (512, 1, 1), np.int32(1)),
                     ("fft_smem_stage", (8192 // 2 * 3 // 512,), (512, 1, 1), np.int32(2)),
                     ("fft_smem", (3 * 4,), (512, 1, 1), np.int32(4))]
    calls.clear()
    naive = fam.variant("naive")
    launch = fft.plan(naive, {naive.kernel: FakeKernel(naive.kernel, calls)}, {"in": "IN"}, "OUT",
                      {"n": 16, "batch": 1}, SimpleNamespace(block=(256, 1, 1), grid=(1,)))
    launch("stream")
    assert [c[3] for c in calls] == [1, 2, 4, 8] and all(c[1] == (1,) for c in calls)


def test_manifest_plan_options():
    fam = catalog.load_family("fft")
    assert fam.variant("smem").options == {"plan": "tile"}
    assert fam.variant("naive").options == {}
    for size in (fam.default_size, *fam.check_sizes):
        fft.log2n(size)  # every shipped size is a power of two
    assert 8 * fam.default_size["n"] * fam.default_size["batch"] > 50e6  # beyond the H100's L2
