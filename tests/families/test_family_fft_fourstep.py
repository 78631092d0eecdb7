"""fft's four-step variant (kernels/fft/fourstep.cu) on the CPU: the pass split, the launch plan
(kernels, grids, shared memory) and a numpy emulation of the kernel's exact index mapping (load
decode, padded shared-memory layout, radix-16 register stages with their compile-time twiddles and
bit reversal, store decode, inter-pass twiddle) against numpy.fft, including partial blocks, blocks
spanning several signals and three-pass splits. No GPU."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from gpuprof.errors import UsageError
from gpuprof.families import fft
from gpuprof.variants import catalog

FAMILY = catalog.load_family("fft")
FOURSTEP = FAMILY.variant("fourstep")


# ------------------------------------------------------------------ emulation of fourstep.cu


def padded(r):
    return r + (r >> 4)


def padded_step(base, step: int, j):
    """The .cu's padded_step<STEP>: a constant stride when STEP is a multiple of 16."""
    return padded(base) + j * (step + step // 16) if step % 16 == 0 else padded(base + step * j)


def cos16(k: int) -> float:
    """The .cu's cos16 table walk (cos(2πk/16) from 5 literals and two symmetries)."""
    a = 16 - (k & 15) if (k & 15) > 8 else (k & 15)
    b = 8 - a if a > 4 else a
    v = [1.0, 0.92387953251128674, 0.70710678118654752, 0.38268343236508977, 0.0][b]
    return -v if a > 4 else v


def bitrev(k: int, n: int) -> int:
    r, top = 0, n // 2
    while top >= 1:
        r |= (k & 1) * top
        top, k = top // 2, k >> 1
    return r


def register_dft(a: np.ndarray) -> np.ndarray:
    """dft<N>: radix-2 DIF levels over the last axis with cos16 twiddles, then bitrev."""
    a = a.copy()
    n = a.shape[-1]
    half = n // 2
    while half >= 1:
        for g in range(0, n, 2 * half):
            for i in range(half):
                u, v = a[..., g + i].copy(), a[..., g + i + half].copy()
                a[..., g + i] = u + v
                k = i * (16 // (2 * half))
                a[..., g + i + half] = (u - v) * complex(cos16(k), -cos16(k - 4))
        half //= 2
    return a[..., [bitrev(k, n) for k in range(n)]]


def emulate_pass(x: np.ndarray, radix: int, s: int, threads: int, dtype=np.complex128) -> np.ndarray:
    """One launch of fft_fourstep_r<radix>: every block at once, every thread's points at once."""
    batch, n = x.shape
    points = fft.FOURSTEP_POINTS * threads
    C = fft.fourstep_columns(radix, threads)
    stride = radix + radix // 16 + ((16 // C if C < 16 else 1) if radix >= 32 else 0)
    assert fft.fourstep_smem_bytes(radix, threads) == 8 * (radix + C * stride)
    H, R = n // radix, radix
    m = H // s
    columns = H * batch
    blocks = -(-columns // C)
    g0 = (np.arange(blocks) * C)[:, None]
    src = x.reshape(-1)
    out = np.full(batch * n, np.nan + 1j * np.nan, dtype=dtype)
    written = np.zeros(batch * n, dtype=int)
    tw = np.exp(-2j * np.pi * np.arange(R) / R).astype(dtype)
    data = np.full((blocks, C * stride), np.nan + 1j * np.nan, dtype=dtype)

    e = np.arange(points)
    cw = min(C, H)
    c = (e // cw) // R * cw + e % cw
    r = (e // cw) % R
    slots = c * stride + padded(r)
    assert len(set(slots.tolist())) == points  # e -> (c, r) is one-to-one
    g = g0 + c
    valid = g < columns
    addr = (g // H) * n + g % H + H * r
    data[:, slots] = np.where(valid, src[np.where(valid, addr, 0)], 0)

    st = 1
    while st < R:
        rho = min(16, R // st)
        span = R // rho
        beta = np.arange(points // rho)  # tid + THREADS·v over all threads and v < 16/RHO
        c, b = beta // span, beta % span
        reads = c[:, None] * stride + padded_step(b[:, None], span, np.arange(rho))
        assert (reads == c[:, None] * stride + padded(b[:, None] + np.arange(rho) * span)).all()
        a = register_dft(data[:, reads])
        qq, pp = b % st, b // st
        j = np.arange(rho)
        if st * rho != R:
            a = a * tw[(pp[:, None] * j * st)]
        at = (padded(16 * pp[:, None]) + j if (st == 1 and rho == 16)
              else padded_step(qq[:, None] + st * rho * pp[:, None], st, j))
        writes = c[:, None] * stride + at
        assert (writes == c[:, None] * stride + padded(qq[:, None] + st * j + st * rho * pp[:, None])).all()
        assert len(set(writes.reshape(-1).tolist())) == points  # no two butterflies write one slot
        data[:, writes] = a
        st *= rho

    qw = min(C, s)
    c = (e // qw) // R * qw + e % qw
    k = (e // qw) % R
    g = g0 + c
    valid = g < columns
    h = g % H
    q, p = h % s, h // s
    y = data[:, c * stride + padded(k)]
    if m > 1:
        y = y * np.exp(-1j * np.pi * (2 * p * k) / (n // s))
    addr = (g // H) * n + q + s * k + s * R * p
    out[addr[valid]] = y[valid]
    np.add.at(written, addr[valid], 1)
    assert (written == 1).all()  # every output point written exactly once
    return out.reshape(batch, n)


def emulate(x: np.ndarray, max_radix: int, threads: int, dtype=np.complex128) -> np.ndarray:
    x = x.astype(dtype)
    buffers = {"in": x.copy()}
    for step in fft.passes(x.shape[-1], max_radix):
        buffers[step.dst] = emulate_pass(buffers[step.src], step.radix, step.s, threads, dtype)
    np.testing.assert_array_equal(buffers["in"], x)
    return buffers["out"]


def signals(batch: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(n * 31 + batch)
    return rng.uniform(-1, 1, (batch, n)) + 1j * rng.uniform(-1, 1, (batch, n))


@pytest.mark.parametrize(("n", "batch", "max_radix", "threads"), [
    (2, 3, 2048, 512),          # one 2-point pass, a block of 4096 columns holding 3
    (16, 5, 2048, 512),
    (1024, 7, 2048, 512),       # one pass, 8 signals a block, the last block partial
    (2048, 1, 2048, 512),       # radix 2048: 16·16·8 stages
    (4096, 5, 2048, 512),       # two passes of 64
    (8192, 2, 2048, 512),       # 128·64
    (2**14, 1, 2048, 512),
    (2**10, 3, 16, 32),         # three passes (16·8·8, the middle one with s > 1 and m > 1)
    (2**12, 2, 8, 32),          # four passes
    (512, 3, 64, 4),            # tiny blocks: 64 points, one column of 64 per block
    (2**13, 1, 2048, 512),
])
def test_emulated_kernel_matches_numpy_fft(n, batch, max_radix, threads):
    x = signals(batch, n)
    np.testing.assert_allclose(emulate(x, max_radix, threads), np.fft.fft(x, axis=-1), rtol=0, atol=1e-9 * n)


def test_emulated_float32_error_is_within_the_family_tolerance():
    """The same arithmetic in complex64 (twiddle table and literals rounded to float32, as on the
    GPU) at 2^14 = 128·128, scaled like the checker (by the reference's RMS)."""
    n = 2**14
    x = signals(2, n).astype(np.complex64)
    got = emulate(x, 2048, 512, np.complex64)
    ref = np.fft.fft(x.astype(np.complex128), axis=-1)
    err = np.abs(got - ref).max() / np.sqrt(np.mean(np.abs(ref) ** 2))
    assert err < fft.tolerance("fourstep", {"n": n, "batch": 2}) / 3, err


@pytest.mark.parametrize("n", [2**k for k in range(1, 23)])
def test_pass_split_is_short_and_even(n):
    radices = fft.pass_radices(n, 2048)
    assert math.prod(radices) == n and all(r <= 2048 for r in radices)
    assert len(radices) == (1 if n <= 2048 else 2)  # 2^22 = 2048², so at most two DRAM sweeps
    assert max(radices) <= 2 * min(radices)
    assert fft.pass_radices(2**20, 2048) == [1024, 1024]


def test_shared_memory_of_every_radix_fits_two_blocks_per_sm():
    for k in range(1, 12):
        assert 48 * 1024 < fft.fourstep_smem_bytes(2**k, 512) <= 227 * 1024 // 2


# ------------------------------------------------------------------ the launch plan


class FakeKernel:
    def __init__(self, name, calls):
        self.name, self.calls = name, calls
        self.max_dynamic_shared_size_bytes = 0

    def __call__(self, grid, block, args, stream=None, shared_mem=0):
        assert shared_mem <= self.max_dynamic_shared_size_bytes  # the limit is raised before the launch
        self.calls.append((self.name, grid, block, int(args[-1]), shared_mem, args[0], args[1]))


def test_plan_launches_one_kernel_per_pass_with_its_shared_memory(monkeypatch):
    calls: list = []
    functions = {k: FakeKernel(k, calls) for k in (FOURSTEP.kernel, *FOURSTEP.extra_kernels)}
    monkeypatch.setattr(fft, "cupy", lambda: SimpleNamespace(empty_like=lambda a: "WORK"))
    size = {"n": 2**20, "batch": 16}
    launch = fft.plan(FOURSTEP, functions, {"in": "IN"}, "OUT", size, SimpleNamespace(block=(512, 1, 1), grid=(16,)))
    assert calls == []  # nothing runs until the timed launch
    launch("stream")
    smem = fft.fourstep_smem_bytes(1024, 512)
    blocks = 1024 * 16 // 8  # 2^20/1024 columns per signal, 8 columns per block
    assert calls == [("fft_fourstep", (blocks,), (512, 1, 1), 1, smem, "IN", "WORK"),
                     ("fft_fourstep", (blocks,), (512, 1, 1), 1024, smem, "WORK", "OUT")]
    calls.clear()
    fft.plan(FOURSTEP, functions, {"in": "IN"}, "OUT", {"n": 2, "batch": 3},
             SimpleNamespace(block=(512, 1, 1), grid=(3,)))("stream")
    assert calls == [("fft_fourstep_r2", (1,), (512, 1, 1), 1, fft.fourstep_smem_bytes(2, 512), "IN", "OUT")]


@pytest.mark.parametrize(("defines", "threads"), [({"MAX_RADIX": 2048}, 64), ({"MAX_RADIX": 4096}, 512),
                                                  ({"MAX_RADIX": 96}, 512)])
def test_a_max_radix_the_kernels_cannot_hold_is_a_usage_error(monkeypatch, defines, threads):
    monkeypatch.setattr(fft, "cupy", lambda: SimpleNamespace(empty_like=lambda a: "WORK"))
    variant = FOURSTEP.with_defines({**defines, "THREADS": threads})
    with pytest.raises(UsageError, match="MAX_RADIX"):
        fft.plan(variant, {}, {"in": "IN"}, "OUT", {"n": 2**20, "batch": 1},
                 SimpleNamespace(block=(threads, 1, 1), grid=(1,)))


def test_every_radix_the_plan_can_pick_has_a_helper_kernel():
    radices = {r for k in range(1, 23) for r in fft.pass_radices(2**k, FOURSTEP.defines["MAX_RADIX"])}
    assert {f"r{r}" for r in radices} <= set(FOURSTEP.helpers)
    text = FOURSTEP.file.read_text()
    for role, kernel in FOURSTEP.helpers.items():
        radix = int(role[1:])
        if kernel == FOURSTEP.kernel:  # written out: the catalogue finds the main kernel's declaration
            assert f"fourstep_entry<{radix}>" in text
        else:
            assert kernel == f"fft_fourstep_{role}" and f"FOURSTEP_KERNEL({radix})" in text
    assert "#define POINTS 16" in text and fft.FOURSTEP_POINTS == 16


def test_manifest_declares_the_passes_plan_and_the_course_alias():
    assert FOURSTEP.options == {"plan": "passes"}
    assert FAMILY.variant("batched").name == "fourstep"
    assert FOURSTEP.defines["MAX_RADIX"] <= fft.FOURSTEP_POINTS * FOURSTEP.block_dims()[0]


# ------------------------------------------------------------------ shared-memory bank conflicts


def wavefronts(slots: np.ndarray) -> float:
    """Shared-memory wavefronts of one warp's 8-byte accesses, per half-warp (1.0: conflict-free):
    the most distinct 4-byte words any of the 32 banks must serve."""
    total = 0
    for half in (slots[:16], slots[16:]):
        words = np.unique(half)[:, None] * 2 + np.arange(2)
        banks = np.bincount((words.reshape(-1) % 32), minlength=32)
        total += banks.max()
    return total / 2


def phase_slots(radix: int, s: int, n: int, threads: int):
    """Every phase's float2 slot per thread (load, each stage's reads and writes, store), as the
    kernel computes them; yields (phase, slots of threads 0..THREADS-1) per instruction."""
    C = fft.fourstep_columns(radix, threads)
    stride = (fft.fourstep_smem_bytes(radix, threads) // 8 - radix) // C
    H, R = n // radix, radix
    e = np.arange(fft.FOURSTEP_POINTS * threads)
    cw = min(C, H)
    load = (e // cw) // R * cw + e % cw, (e // cw) % R
    yield from (("load", s_) for s_ in np.split(load[0] * stride + padded(load[1]), fft.FOURSTEP_POINTS))
    st = 1
    while st < R:
        rho = min(16, R // st)
        span = R // rho
        beta = np.arange(fft.FOURSTEP_POINTS * threads // rho)
        c, b = beta // span, beta % span
        for j in range(rho):
            reads = c * stride + padded(b + j * span)
            writes = c * stride + padded(b % st + st * j + st * rho * (b // st))
            yield from ((f"stage {st} read", x) for x in np.split(reads, len(beta) // threads))
            yield from ((f"stage {st} write", x) for x in np.split(writes, len(beta) // threads))
        st *= rho
    qw = min(C, s)
    c, k = (e // qw) // R * qw + e % qw, (e // qw) % R
    yield from (("store", s_) for s_ in np.split(c * stride + padded(k), fft.FOURSTEP_POINTS))


@pytest.mark.parametrize(("n", "radix", "s"), [
    (2**20, 1024, 1), (2**20, 1024, 1024),  # the default size's two passes
    (2**22, 2048, 1), (2**22, 2048, 2048),
    (2**17, 512, 1), (2**17, 256, 512),
    (1024, 1024, 1),                        # one pass, 8 signals a block
])
def test_the_benchmark_passes_are_free_of_bank_conflicts(n, radix, s):
    threads = FOURSTEP.block_dims()[0]
    worst = {}
    for phase, slots in phase_slots(radix, s, n, threads):
        worst[phase] = max(worst.get(phase, 0), max(wavefronts(w) for w in np.split(slots, threads // 32)))
    assert all(v == 1 for v in worst.values()), worst
