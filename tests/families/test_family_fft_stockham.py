"""fft's radix-8 Stockham variant (kernels/fft/stockham.cu) on the CPU: the launch plan (kernels,
blocks, grids, shared memory) and a numpy emulation of the kernel's exact index mapping (thread
map with its column runs, first-stage loads from global memory, swizzled shared-memory slots,
radix-8/4/2 register DFTs, twiddle powers, last-stage stores with the inter-pass twiddle) against
numpy.fft at every check size, for both RADIX values and several block sizes; the float32 error
against the family's tolerance; shared-memory bank conflicts of the 1024-point passes. No GPU."""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pytest

from gpuprof.errors import UsageError
from gpuprof.families import fft
from gpuprof.variants import catalog

FAMILY = catalog.load_family("fft")
STOCKHAM = FAMILY.variant("stockham")


# ------------------------------------------------------------------ emulation of stockham.cu


def slot(r, radix: int):
    """The .cu's slot(): XOR of each aligned run of 16 points' low bits."""
    run = np.asarray(r) >> 4
    x = (run & 7) ^ ((run & 4) << 1)
    if radix == 4:
        x = x ^ ((run & 3) << 2)
    return np.asarray(r) ^ x


def cos8(k: int) -> float:
    a = k & 7
    return {0: 1.0, 1: 0.70710678118654752, 7: 0.70710678118654752, 2: 0.0, 6: 0.0,
            3: -0.70710678118654752, 5: -0.70710678118654752, 4: -1.0}[a]


def bitrev(k: int, n: int) -> int:
    r, top = 0, n // 2
    while top >= 1:
        r |= (k & 1) * top
        top, k = top // 2, k >> 1
    return r


def register_dft(a: np.ndarray) -> np.ndarray:
    """dft<N>: radix-2 DIF levels over the last axis with the cos8 literals, then bitrev."""
    a = a.copy()
    n = a.shape[-1]
    half = n // 2
    while half >= 1:
        for g in range(0, n, 2 * half):
            for i in range(half):
                u, v = a[..., g + i].copy(), a[..., g + i + half].copy()
                a[..., g + i] = u + v
                k = i * (8 // (2 * half))
                d = u - v
                if k == 0:
                    a[..., g + i + half] = d
                elif k == 2:
                    a[..., g + i + half] = d.imag - 1j * d.real
                else:
                    a[..., g + i + half] = d * np.array(complex(cos8(k), -cos8(k - 2)), dtype=a.dtype)
        half //= 2
    return a[..., [bitrev(k, n) for k in range(n)]]


def decode(beta, lgw: int, span: int):
    hi = beta >> lgw
    return ((hi // span) << lgw) | (beta & ((1 << lgw) - 1)), hi % span


def twiddle(num, lg: int, dtype):
    """sincospif of the exact argument, rounded to the working precision."""
    return np.exp(-2j * np.pi * np.asarray(num, dtype=np.float64) / 2.0**lg).astype(dtype)


def emulate_pass(x: np.ndarray, radix: int, s: int, threads: int, points: int, several: bool,
                 dtype=np.complex128) -> np.ndarray:
    """One launch of fft_stockham_r<radix>: every block and every thread's butterflies at once."""
    batch, n = x.shape
    R = radix
    T = fft.stockham_threads(R, points, threads, several)
    C = fft.stockham_columns(R, points, T)
    stride = fft.stockham_stride(R, C)
    assert C >= 1 and (not several or C >= fft.STOCKHAM_MIN_RUN)
    H = n // R
    lgH, lgS, lgC, lgN = H.bit_length() - 1, s.bit_length() - 1, C.bit_length() - 1, n.bit_length() - 1
    m = H // s
    columns = H * batch
    blocks = -(-columns // C)
    g0 = (np.arange(blocks) * C)[:, None, None]
    src = x.reshape(-1)
    out = np.full(batch * n, np.nan + 1j * np.nan, dtype=dtype)
    written = np.zeros(batch * n, dtype=int)
    smem_slots = max(1, fft.stockham_smem_bytes(R, points, T) // 8)
    data = np.full((blocks, smem_slots), np.nan + 1j * np.nan, dtype=dtype)
    lg_win, lg_wout = min(lgC, lgH), min(lgC, lgS)

    st = 1
    while True:
        rho = min(points, R // st)
        per, span = points // rho, R // rho
        first, last = st == 1, st * rho == R
        lgw = lg_win if first else lg_wout if last else 0
        beta = np.arange(T * per)  # threadIdx.x + blockDim.x·v over all threads and v < PER
        c, b = decode(beta, lgw, span)
        assert len(set(zip(c.tolist(), b.tolist()))) == C * span  # every butterfly once
        c, b, j = c[None, :, None], b[None, :, None], np.arange(rho)[None, None, :]
        if first:
            g = g0 + c
            valid = g < columns
            addr = (g >> lgH << lgN) + (g & (H - 1)) + ((b + j * span) << lgH)
            a = np.where(valid, src[np.where(valid, addr, 0)], 0).astype(dtype)
        else:
            a = data[np.arange(blocks)[:, None, None], c * stride + slot(b + j * span, points)]
        a = register_dft(a)
        if not last:
            qq, pp = b & (st - 1), b // st
            lg = (R // st).bit_length() - 1
            w = [None, twiddle(pp[..., 0], lg, dtype)]
            for k in range(2, rho):
                w.append(w[k // 2] * w[k - k // 2])
            for k in range(1, rho):
                a[..., k] = a[..., k] * w[k]
            at = c * stride + slot(qq + st * j + st * rho * pp, points)
            assert len(set(at.reshape(-1).tolist())) == C * R  # no two butterflies write one slot
            assert at.max() < smem_slots
            data[np.arange(blocks)[:, None, None], np.broadcast_to(at, a.shape)] = a
            st *= rho
            continue
        g = np.broadcast_to(g0 + c, a.shape)
        h = g & (H - 1)
        q, p = h & (s - 1), h >> lgS
        k = np.broadcast_to(b + st * j, a.shape)
        y = a * twiddle(p * k, lgN - lgS, dtype) if m > 1 else a
        addr = (g >> lgH << lgN) + q + (p << (lgS + R.bit_length() - 1)) + (k << lgS)
        valid = g < columns
        out[addr[valid]] = y[valid]
        np.add.at(written, addr[valid], 1)
        assert (written == 1).all()  # every output point written exactly once
        return out.reshape(batch, n)


def emulate(x: np.ndarray, threads: int, points: int, max_radix: int = 2048, dtype=np.complex128) -> np.ndarray:
    x = x.astype(dtype)
    buffers = {"in": x.copy()}
    steps = fft.passes(x.shape[-1], max_radix)
    for step in steps:
        buffers[step.dst] = emulate_pass(buffers[step.src], step.radix, step.s, threads, points, len(steps) > 1,
                                         dtype)
    np.testing.assert_array_equal(buffers["in"], x)
    return buffers["out"]


def signals(batch: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(n * 37 + batch)
    return rng.uniform(-1, 1, (batch, n)) + 1j * rng.uniform(-1, 1, (batch, n))


CASES = [(size["n"], size["batch"]) for size in FAMILY.check_sizes if size["n"] <= 2**17] + [
    (4, 3), (8, 2), (16, 5), (32, 1), (64, 3), (256, 9), (512, 3), (8192, 2)]


@pytest.mark.parametrize(("n", "batch"), CASES)
@pytest.mark.parametrize(("threads", "points"), [(128, 8), (128, 4), (32, 8), (512, 8)])
def test_emulated_kernel_matches_numpy_fft(n, batch, threads, points):
    x = signals(batch, n)
    np.testing.assert_allclose(emulate(x, threads, points), np.fft.fft(x, axis=-1), rtol=0, atol=1e-9 * n)


@pytest.mark.parametrize(("n", "max_radix"), [(2**10, 16), (2**12, 8), (2**9, 4), (2**11, 2)])
def test_emulated_kernel_with_three_or_more_passes(n, max_radix):
    """Small MAX_RADIX: middle passes with s > 1 and m > 1, blocks widened to 4 columns."""
    x = signals(3, n)
    np.testing.assert_allclose(emulate(x, 32, 8, max_radix), np.fft.fft(x, axis=-1), rtol=0, atol=1e-9 * n)


@pytest.mark.parametrize("points", [8, 4])
def test_emulated_float32_error_is_within_the_family_tolerance(points):
    """The same arithmetic in complex64 (twiddle powers multiplied in float32, as on the GPU) at
    2^10 and 2^14 = 128·128, scaled like the checker (by the reference's RMS)."""
    for n in (2**10, 2**14):
        x = signals(4, n).astype(np.complex64)
        got = emulate(x, 128, points, dtype=np.complex64)
        ref = np.fft.fft(x.astype(np.complex128), axis=-1)
        err = np.abs(got - ref).max() / np.sqrt(np.mean(np.abs(ref) ** 2))
        assert err < fft.tolerance(STOCKHAM, {"n": n, "batch": 4}) / 3, (n, err)


# ------------------------------------------------------------------ shared-memory bank conflicts


def wavefronts(slots: np.ndarray) -> float:
    """Shared-memory wavefronts of one warp's 8-byte accesses, per half-warp (1.0: conflict-free)."""
    total = 0
    for half in (slots[:16], slots[16:]):
        words = np.unique(half)[:, None] * 2 + np.arange(2)
        total += np.bincount(words.reshape(-1) % 32, minlength=32).max()
    return total / 2


def shared_accesses(radix: int, threads: int, points: int):
    """(stage, slots of one warp) for every shared-memory instruction of a one-pass launch."""
    T = fft.stockham_threads(radix, points, threads, False)
    C = fft.stockham_columns(radix, points, T)
    stride = fft.stockham_stride(radix, C)
    st = 1
    while st < radix:
        rho = min(points, radix // st)
        per, span = points // rho, radix // rho
        c, b = decode(np.arange(T * per), 0, span)
        for j in range(rho):
            reads = c * stride + slot(b + j * span, points)
            writes = c * stride + slot(b % st + st * j + st * rho * (b // st), points)
            if st > 1:
                yield from ((f"stage {st} read", w) for w in np.split(reads, T * per // 32))
            if st * rho < radix:
                yield from ((f"stage {st} write", w) for w in np.split(writes, T * per // 32))
        st *= rho


@pytest.mark.parametrize("radix", [256, 512, 1024, 2048])
@pytest.mark.parametrize(("threads", "points"), [(128, 8), (256, 8), (128, 4)])
def test_one_pass_exchanges_are_free_of_bank_conflicts(radix, threads, points):
    worst: dict[str, float] = {}
    for stage, slots in shared_accesses(radix, threads, points):
        worst[stage] = max(worst.get(stage, 0), wavefronts(slots))
    assert worst and all(v == 1 for v in worst.values()), worst


# ------------------------------------------------------------------ the launch plan


class FakeKernel:
    def __init__(self, name, calls):
        self.name, self.calls = name, calls
        self.max_dynamic_shared_size_bytes = 0

    def __call__(self, grid, block, args, stream=None, shared_mem=0):
        assert shared_mem <= self.max_dynamic_shared_size_bytes  # the limit is raised before the launch
        self.calls.append((self.name, grid, block, int(args[-1]), shared_mem, args[0], args[1]))


def plan_calls(monkeypatch, variant, size):
    calls: list = []
    functions = {k: FakeKernel(k, calls) for k in {variant.kernel, *variant.helpers.values()}}
    monkeypatch.setattr(fft, "cupy", lambda: SimpleNamespace(empty_like=lambda a: "WORK"))
    threads = variant.block_dims()[0]
    launch = fft.plan(variant, functions, {"in": "IN"}, "OUT", size,
                      SimpleNamespace(block=(threads, 1, 1), grid=(size["batch"],)))
    assert calls == []  # nothing runs until the timed launch
    launch("stream")
    return calls


def test_plan_at_1024_points_is_one_signal_per_128_thread_block(monkeypatch):
    calls = plan_calls(monkeypatch, STOCKHAM, {"n": 1024, "batch": 65536})
    assert calls == [("fft_stockham", (65536,), (128, 1, 1), 1, 8 * 1024, "IN", "OUT")]


def test_plan_widens_the_blocks_of_later_passes_to_four_columns(monkeypatch):
    calls = plan_calls(monkeypatch, STOCKHAM, {"n": 2**20, "batch": 16})
    smem = 8 * 4 * 1025  # 4 columns of 1024 points, one slot apart
    blocks = 1024 * 16 // 4
    assert calls == [("fft_stockham_w1024", (blocks,), (512, 1, 1), 1, smem, "IN", "WORK"),
                     ("fft_stockham_w1024", (blocks,), (512, 1, 1), 1024, smem, "WORK", "OUT")]
    calls = plan_calls(monkeypatch, STOCKHAM, {"n": 2**22, "batch": 1})
    assert [c[:5] for c in calls] == [("fft_stockham_w2048", (2048 // 4,), (1024, 1, 1), s, 8 * 4 * 2049)
                                      for s in (1, 2048)]
    radix4 = STOCKHAM.with_defines({"RADIX": 4, "THREADS": 256})  # 2048/4 x 4 columns: capped at 1024 threads
    calls = plan_calls(monkeypatch, radix4, {"n": 2**22, "batch": 1})
    assert [c[:5] for c in calls] == [("fft_stockham_w2048", (2048 // 2,), (1024, 1, 1), s, 8 * 2 * 2049)
                                      for s in (1, 2048)]


def test_plan_of_tiny_signals_needs_no_shared_memory(monkeypatch):
    calls = plan_calls(monkeypatch, STOCKHAM, {"n": 2, "batch": 3})
    assert calls == [("fft_stockham_r2", (1,), (128, 1, 1), 1, 0, "IN", "OUT")]  # 512 columns a block


def test_plan_of_2048_points_widens_the_block_to_one_column(monkeypatch):
    calls = plan_calls(monkeypatch, STOCKHAM, {"n": 2048, "batch": 1})
    assert calls == [("fft_stockham_r2048", (1,), (256, 1, 1), 1, 8 * 2048, "IN", "OUT")]


@pytest.mark.parametrize("max_radix", [4096, 96, 1])
def test_a_max_radix_without_kernels_is_a_usage_error(monkeypatch, max_radix):
    with pytest.raises(UsageError, match="MAX_RADIX"):
        plan_calls(monkeypatch, STOCKHAM.with_defines({"MAX_RADIX": max_radix}), {"n": 2**20, "batch": 1})


@pytest.mark.parametrize("max_radix", [2048, 256, 2])
def test_every_radix_the_plan_can_pick_has_a_helper_kernel(max_radix):
    splits = [fft.pass_radices(2**k, max_radix) for k in range(1, 23)]
    roles = {f"{'w' if len(split) > 1 else 'r'}{r}" for split in splits for r in split}
    assert roles <= set(STOCKHAM.helpers)
    text = STOCKHAM.file.read_text()
    for role, kernel in STOCKHAM.helpers.items():
        radix = int(role[1:])
        if kernel == STOCKHAM.kernel:  # written out: the catalogue finds the main kernel's declaration
            assert role == "r1024" and "stockham_pass<1024>" in text
        else:
            macro = "ONE_PASS" if role[0] == "r" else "LATER_PASS"
            assert kernel == f"fft_stockham_{role}" and f"\n{macro}({radix})\n" in text


def test_manifest_and_kernel_agree_on_the_host_constants():
    assert STOCKHAM.options == {"plan": "radix_passes"}
    assert STOCKHAM.expected_limiter == "dram"
    text = STOCKHAM.file.read_text()
    assert re.search(rf"#define MAX_THREADS {fft.STOCKHAM_MAX_THREADS}\b", text)
    assert re.search(rf"#define MIN_RUN {fft.STOCKHAM_MIN_RUN}\b", text)
    assert "return R + (columns > 1 && R >= 16 ? 1u : 0u);" in text  # fft.stockham_stride
    for k in range(1, 12):  # every pass of the shipped defines fits an SM's shared memory
        several = 2**k > STOCKHAM.defines["MAX_RADIX"] // 2
        threads = fft.stockham_threads(2**k, STOCKHAM.defines["RADIX"], 128, several)
        assert fft.stockham_smem_bytes(2**k, STOCKHAM.defines["RADIX"], threads) <= 227 * 1024
