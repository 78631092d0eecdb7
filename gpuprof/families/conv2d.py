"""conv2d: y = conv2d(x, w) in FP32, NCHW, stride 1, same zero padding, cross-correlation.

From one thread per output to shared-memory tiles, im2col + GEMM (hand-written and cuBLAS), an
implicit GEMM and Winograd F(2x2,3x3) (any odd filter as 3x3 chunks); FFT through cuFFT and cuDNN
as library versions. Output y[N][K][P][Q] with
P = H + 2*((R-1)//2) - R + 1 = H and Q = W for the odd R, S the family takes.

plan() launches every hand-written variant by the manifest's `plan` (PLANS below). The default,
"tiles" (smem_tiled and a student's --add), is one launch on the manifest's grid with images
folded into grid.z: (ceil(Q/tile_q), ceil(P/tile_p), ceil(K/tile_k) * N), n = blockIdx.z / ceil(K/tile_k).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from gpuprof.errors import EnvironmentProblem, UsageError
from gpuprof.families import _keys, _torch
from gpuprof.families._random import generator
from gpuprof.families._rounding import FP32, unit_roundoff
from gpuprof.gpu import cupy

RATE = "flop"
FORMULA = "TFLOP/s = 2·N·K·P·Q·C·R·S (direct convolution, halo taps included) / median time"
# `plan` in the manifest. "tiles" (default): the manifest's tiles, images folded into grid.z;
# "flat": one thread per output, THREADS per block; "gemm_tiles": BN output pixels x BM filters per
# block; "im2col_then_gemm": the helper `im2col` into a column workspace, then the GEMM kernel;
# "im2col_then_cublas": the kernel is the im2col pass, then cuBLAS (strided-batched SGEMM, TF32 off);
# "winograd_f2x2": the helper `filter` transforms w into a workspace, then the kernel (that workspace in
# w's place, the manifest's dynamic shared memory) covers BN 2x2 output tiles x BM filters per block.
PLANS = ("tiles", "flat", "gemm_tiles", "im2col_then_gemm", "im2col_then_cublas", "winograd_f2x2")
# `error_model`: "products" (default): each output a sum of C*R*S products in FP32; "transform": an
# FFT or Winograd algorithm, whose round-off is relative to the whole output (fft; cudnn, whose
# heuristic may pick either).
ERROR_MODELS = ("products", "transform")

INT32_MAX = 2**31 - 1  # the kernels index with 32-bit ints
GRID_YZ_MAX = 65535


@dataclass(frozen=True)
class Geometry:
    n: int
    c: int
    h: int
    w: int
    k: int
    r: int
    s: int

    @property
    def pad_h(self) -> int:
        return (self.r - 1) // 2

    @property
    def pad_w(self) -> int:
        return (self.s - 1) // 2

    @property
    def p(self) -> int:
        return self.h + 2 * self.pad_h - self.r + 1

    @property
    def q(self) -> int:
        return self.w + 2 * self.pad_w - self.s + 1

    @property
    def crs(self) -> int:  # GEMM depth: taps per output
        return self.c * self.r * self.s

    @property
    def npq(self) -> int:  # GEMM columns: output pixels
        return self.n * self.p * self.q

    def ints(self) -> tuple:
        return tuple(np.int32(v) for v in (self.n, self.c, self.h, self.w, self.k, self.r, self.s))


def geometry(size: dict[str, int]) -> Geometry:
    g = Geometry(*(int(size[d]) for d in ("n", "c", "h", "w", "k", "r", "s")))
    if g.r % 2 == 0 or g.s % 2 == 0:
        raise UsageError(f"conv2d takes odd filter sizes (same padding (R-1)/2); got r = {g.r}, s = {g.s}")
    for what, count in (("x", g.n * g.c * g.h * g.w), ("w", g.k * g.crs), ("y", g.n * g.k * g.p * g.q)):
        if count > INT32_MAX:
            raise UsageError(f"conv2d size gives {what} {count} elements, over the kernels' 32-bit index limit")
    return g


def flop(size: dict[str, int]) -> float:
    g = geometry(size)
    return 2.0 * g.n * g.k * g.p * g.q * g.crs  # a multiply and an add per (output, c, r, s), halo taps included


def bytes_moved(size: dict[str, int]) -> float:
    g = geometry(size)
    return 4.0 * (g.n * g.c * g.h * g.w + g.k * g.crs + g.n * g.k * g.p * g.q)  # x, w read once; y written once


def tolerance(variant: Any, size: dict[str, int]) -> float:
    """"products": every output is a dot product of C*R*S taps (inputs uniform in [-1, 1]), so the
    matmul model applies with K = C*R*S: 8 u*sqrt(CRS) for the FP32 accumulation's random walk
    (worst of millions of outputs ~2.4 u*sqrt(CRS)), 10 u_p for inputs rounded to the variant's
    precision, 4 u for the store (1.2e-5 at the 3x3x64 default). A missing tap at a tile edge is
    ~0.25 against rms sqrt(CRS)/3: 3e-2, 2500x that.
    "transform": FFT/Winograd round-off is relative to the whole spectrum, not to each output, and
    grows with log(H*W); measured 1.3e-6..1.6e-6 at the suite sizes on an H100 (cuFFT), so 1e-3
    keeps a wide margin for cuDNN's choices; a wrong tap (3e-2) still fails.
    """
    direct = products_error(variant, geometry(size))
    if _keys.error_model(variant, ERROR_MODELS) == "transform":
        return max(1e-3, 10 * direct)
    return direct


def products_error(variant: Any, g: Geometry) -> float:
    """The "products" bound of tolerance(): C*R*S FP32 products summed per output (the fused
    family's conv uses it too)."""
    u_in = max(unit_roundoff(variant.precision), FP32)
    return 8 * FP32 * math.sqrt(g.crs) + 10 * u_in + 4 * FP32


def make_inputs(size: dict[str, int], seed: int) -> dict[str, Any]:
    cp = cupy()
    g = geometry(size)
    rng = generator(seed)
    return {"x": rng.uniform(-1.0, 1.0, (g.n, g.c, g.h, g.w), dtype=cp.float32),
            "w": rng.uniform(-1.0, 1.0, (g.k, g.c, g.r, g.s), dtype=cp.float32)}


def make_output(size: dict[str, int]) -> Any:
    cp = cupy()
    g = geometry(size)
    return cp.full((g.n, g.k, g.p, g.q), cp.nan, dtype=cp.float32)


def kernel_args(inputs: dict[str, Any], out: Any, size: dict[str, int]) -> tuple:
    return (inputs["x"], inputs["w"], out, *geometry(size).ints())


def reference(inputs: dict[str, Any], size: dict[str, int]) -> Any:
    """float64 on the GPU: one (K x C) @ (C x N*P*Q) product per filter tap (r, s), summed."""
    cp = cupy()
    g = geometry(size)
    x64 = cp.pad(inputs["x"].astype(cp.float64), ((0, 0), (0, 0), (g.pad_h, g.pad_h), (g.pad_w, g.pad_w)))
    w64 = inputs["w"].astype(cp.float64)
    acc = cp.zeros((g.k, g.n, g.p, g.q), dtype=cp.float64)
    for r in range(g.r):
        for s in range(g.s):
            window = x64[:, :, r:r + g.p, s:s + g.q]  # x[n][c][p + r - pad][q + s - pad]
            acc += cp.tensordot(w64[:, :, r, s], window, axes=([1], [1]))  # -> [k][n][p][q]
    return cp.ascontiguousarray(acc.transpose(1, 0, 2, 3))


# ---------------------------------------------------------------- hand-written variants


def plan(variant: Any, functions: dict[str, Any], inputs: dict[str, Any], out: Any, size: dict[str, int], ctx: Any):
    """launch(stream) for one hand-written variant: its grid(s), and workspace allocated here."""
    g = geometry(size)
    d = variant.defines
    main = functions[variant.kernel]
    args = kernel_args(inputs, out, size)
    block = ctx.block
    name = variant.name  # for messages only
    chosen = _keys.plan(variant, PLANS)
    if chosen == "winograd_f2x2":  # its own grid and workspace
        return _winograd(variant, functions, inputs, out, g, block, ctx.shared_mem)

    grid: tuple[int, ...]
    if chosen == "flat":  # one thread per output
        grid = (_ceil(g.n * g.k * g.p * g.q, d["THREADS"]),)
    elif chosen in ("im2col_then_gemm", "gemm_tiles"):  # GEMM tiles: BN output pixels x BM filters
        grid = (_ceil(g.npq, d["BN"]), _ceil(g.k, d["BM"]))
    else:  # "tiles" (smem_tiled and students' variants): the manifest's tiles, images folded into grid.z
        grid = (ctx.grid[0], ctx.grid[1], ctx.grid[2] * g.n)
    if chosen != "im2col_then_cublas":  # its one kernel is the im2col pass, launched on its own grid below
        _check_grid(name, grid)

    if chosen == "im2col_then_gemm":
        col, im2col_grid, im2col_block = _im2col_workspace(g, d["IM2COL_THREADS"])
        im2col = _keys.helper(variant, functions, "im2col")
        im2col_args = (inputs["x"], col, *(np.int32(v) for v in (g.n, g.c, g.h, g.w, g.r, g.s)))
        gemm_args = (col, inputs["w"], out, *g.ints())  # the GEMM entry reads the column matrix as x

        def launch_im2col_then_gemm(stream: Any) -> None:
            im2col(im2col_grid, im2col_block, im2col_args, stream=stream)
            main(grid, block, gemm_args, stream=stream)

        return launch_im2col_then_gemm

    if chosen == "im2col_then_cublas":
        col, im2col_grid, im2col_block = _im2col_workspace(g, d["IM2COL_THREADS"])
        im2col_args = (inputs["x"], inputs["w"], col, *g.ints())  # the entry writes the column matrix as y
        t = _torch.torch()
        w_batched = _torch.as_tensor(inputs["w"]).reshape(g.k, g.crs).expand(g.n, g.k, g.crs)  # batch stride 0
        col_t = _torch.as_tensor(col)
        y_t = _torch.as_tensor(out).view(g.n, g.k, g.p * g.q)

        def launch_im2col_then_cublas(stream: Any) -> None:
            main(im2col_grid, im2col_block, im2col_args, stream=stream)
            _torch.set_tf32(False)
            with _torch.on_stream(stream):
                t.bmm(w_batched, col_t, out=y_t)

        return launch_im2col_then_cublas

    def launch(stream: Any) -> None:
        main(grid, block, args, stream=stream)

    return launch


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _check_grid(variant: str, grid: tuple[int, ...]) -> None:
    limits = (INT32_MAX, GRID_YZ_MAX, GRID_YZ_MAX)
    for axis, (extent, limit) in enumerate(zip(grid, limits)):
        if extent > limit:
            raise UsageError(f"conv2d/{variant}: grid.{'xyz'[axis]} = {extent} is over the CUDA limit {limit} "
                             "at this size; choose a smaller --size")


WINOGRAD_ELEMENTS = 16  # F(2x2, 3x3): a 4x4 transform-domain tile per 2x2 outputs


def winograd_extents(g: Geometry, bk: int, bm: int) -> tuple[int, int, int]:
    """(channels C' padded to bk, filters K padded to bm, 2x2 output tiles) of the winograd plan:
    an R x S filter is ceil(R/3) x ceil(S/3) zero-padded 3x3 chunks, each one more channel c'."""
    chunks = _ceil(g.r, 3) * _ceil(g.s, 3)
    return _ceil(g.c * chunks, bk) * bk, _ceil(g.k, bm) * bm, g.n * _ceil(g.p, 2) * _ceil(g.q, 2)


def winograd_filter_elements(g: Geometry, channels: int, filters: int, label: str) -> int:
    """Floats of the transformed filter U[16][channels][filters]; a UsageError naming `label` where it
    or the input's patch offsets pass the kernels' 32-bit indices."""
    elements = WINOGRAD_ELEMENTS * channels * filters
    # a 4x4 patch of the last 3x3 chunk may start past the last row: offsets up to (R+3)*W + S + 3 beyond x
    overhang = g.n * g.c * g.h * g.w + (g.r + 3) * g.w + g.s + 3
    if max(elements, overhang) > INT32_MAX:
        raise UsageError(f"{label}: the transformed filter ({elements} elements) or the input's "
                         "patch offsets are over the kernels' 32-bit index limit; choose a smaller --size")
    return elements


def _winograd(variant: Any, functions: dict[str, Any], inputs: dict[str, Any], out: Any, g: Geometry,
              block: tuple[int, int, int], shared_mem: int):
    """The filter transform, then the kernel writing y (winograd_launch)."""
    return winograd_launch(variant, functions, g, inputs["w"], block, shared_mem,
                           lambda u: (inputs["x"], u, out, *g.ints()), "conv2d")


def winograd_launch(variant: Any, functions: dict[str, Any], g: Geometry, w: Any, block: tuple[int, int, int],
                    shared_mem: int, main_args: Callable[[Any], tuple[Any, ...]], family: str):
    """A Winograd plan's launch (conv2d/winograd, fused/winograd): the helper `filter` writes
    U[16][C'][K'] from w (every element, padding zeros included, rewritten on every launch: nothing
    is kept from an earlier w), then the kernel with main_args(U) (it reads U in w's place) over
    ceil(K/BM) x ceil(tiles/BN) blocks, filter blocks fastest, on one grid axis."""
    cp = cupy()
    d = variant.defines
    channels, filters, tiles = winograd_extents(g, d["BK"], d["BM"])
    elements = winograd_filter_elements(g, channels, filters, f"{family}/{variant.name}")
    u = cp.empty(elements, dtype=cp.float32)
    grid = (_ceil(g.k, d["BM"]) * _ceil(tiles, d["BN"]),)
    _check_grid(variant.name, grid)
    threads = d["FILTER_THREADS"]
    filter_grid = (_ceil(channels * filters, threads),)
    transform = _keys.helper(variant, functions, "filter")
    main = functions[variant.kernel]
    filter_args = (w, u, *(np.int32(v) for v in (g.c, g.k, g.r, g.s)))
    args = main_args(u)

    def launch_winograd(stream: Any) -> None:
        transform(filter_grid, (threads, 1, 1), filter_args, stream=stream)
        main(grid, block, args, stream=stream, shared_mem=shared_mem)

    return launch_winograd


def _im2col_workspace(g: Geometry, threads: int) -> tuple[Any, tuple[int, int, int], tuple[int, int, int]]:
    """The column matrix col[n][c*r*s][p*q] and the im2col launch over it (y and z stride beyond 65535)."""
    cp = cupy()
    elements = g.n * g.crs * g.p * g.q
    if elements > INT32_MAX:
        raise UsageError(f"conv2d im2col: the column matrix would hold {elements} elements, over the kernels' "
                         "32-bit index limit; choose a smaller --size or use implicit_gemm")
    col = cp.empty((g.n, g.crs, g.p * g.q), dtype=cp.float32)
    grid = (_ceil(g.p * g.q, threads), min(g.c, GRID_YZ_MAX), min(g.n, GRID_YZ_MAX))  # a thread per (n, c, p, q)
    return col, grid, (threads, 1, 1)


# ---------------------------------------------------------------- library variants


def vendor_launch(call: str, inputs: dict[str, Any], out: Any, size: dict[str, int]):
    if call == "cudnn.convolution":
        return _cudnn(inputs, out, geometry(size))
    if call == "cufft.correlate":
        return _fft(inputs, out, geometry(size))
    raise KeyError(call)


def _cudnn(inputs: dict[str, Any], out: Any, g: Geometry):
    t = _torch.torch()
    if not t.backends.cudnn.is_available():
        raise EnvironmentProblem("this PyTorch build has no cuDNN; the conv2d 'cudnn' variant needs it")
    op = getattr(getattr(t.ops.aten, "cudnn_convolution", None), "out", None)
    if op is None:
        raise EnvironmentProblem("this PyTorch has no aten::cudnn_convolution.out; the 'cudnn' variant needs it")
    x, w, y = (_torch.as_tensor(a) for a in (inputs["x"], inputs["w"], out))
    padding, unit = [g.pad_h, g.pad_w], [1, 1]

    def launch(stream: Any) -> None:
        _torch.set_tf32(False)
        with _torch.on_stream(stream):
            # (input, weight, padding, stride, dilation, groups, benchmark, deterministic, allow_tf32, out)
            op(x, w, padding, unit, unit, 1, False, False, False, out=y)

    return launch


def _fft_size(n: int) -> int:
    """The smallest m >= n whose only prime factors are 2, 3, 5, 7 (cuFFT's fast sizes)."""
    m = max(n, 2)
    while True:
        rest = m
        for f in (2, 3, 5, 7):
            while rest % f == 0:
                rest //= f
        if rest == 1:
            return m
        m += 1


_MAC_SOURCE = r"""
// ys[n][k][f] = scale * sum_c xs[n][c][f] * conj(ws[k][c][f]): the spectrum of the correlation.
// Each thread: one frequency, NB images x KB filters of complex accumulators.
#define NB 4
#define KB 8
extern "C" __global__ void __launch_bounds__(128)
conv2d_fft_mac(const float2* __restrict__ xs, const float2* __restrict__ ws, float2* __restrict__ ys,
               int N, int C, int K, int F, float scale)
{
    const int f = blockIdx.x * blockDim.x + threadIdx.x;
    if (f >= F) return;
    const int k0 = blockIdx.y * KB, n0 = blockIdx.z * NB;
    float2 acc[NB][KB];
#pragma unroll
    for (int i = 0; i < NB; ++i)
#pragma unroll
        for (int j = 0; j < KB; ++j)
            acc[i][j] = make_float2(0.0f, 0.0f);
    for (int c = 0; c < C; ++c) {
        float2 xv[NB];
#pragma unroll
        for (int i = 0; i < NB; ++i)
            xv[i] = (n0 + i < N) ? xs[((n0 + i) * C + c) * F + f] : make_float2(0.0f, 0.0f);
#pragma unroll
        for (int j = 0; j < KB; ++j) {
            const float2 wv = (k0 + j < K) ? ws[((k0 + j) * C + c) * F + f] : make_float2(0.0f, 0.0f);
#pragma unroll
            for (int i = 0; i < NB; ++i) {      // (a + bi)(c - di) = (ac + bd) + (bc - ad)i
                acc[i][j].x += xv[i].x * wv.x + xv[i].y * wv.y;
                acc[i][j].y += xv[i].y * wv.x - xv[i].x * wv.y;
            }
        }
    }
#pragma unroll
    for (int i = 0; i < NB; ++i)
#pragma unroll
        for (int j = 0; j < KB; ++j)
            if (n0 + i < N && k0 + j < K)
                ys[((n0 + i) * K + k0 + j) * F + f] = make_float2(acc[i][j].x * scale, acc[i][j].y * scale);
}
"""
_MAC_THREADS, _MAC_NB, _MAC_KB = 128, 4, 8


@cache
def _mac_kernel() -> Any:
    return cupy().RawKernel(_MAC_SOURCE, "conv2d_fft_mac", options=("--std=c++17",))


def _fft(inputs: dict[str, Any], out: Any, g: Geometry):
    """Correlation by FFT: y = irfft2(rfft2(x padded) * conj(rfft2(w padded))) cropped.

    x sits at offset (pad_h, pad_w) inside an hf x wf zero frame with hf >= H + R - 1, so the
    circular correlation c[p][q] = sum_{r,s} xpad[p + r][q + s] w[r][s] never wraps for p < P,
    q < Q and equals y. Buffers, cuFFT plans and their work areas are made here, not per launch.
    """
    cp = cupy()
    from cupy.cuda import cufft
    from cupyx.scipy import fftpack

    hf, wf = _fft_size(g.h + g.r - 1), _fft_size(g.w + g.s - 1)
    wf2 = wf // 2 + 1
    for what, count in (("input spectra", g.n * g.c * hf * wf2), ("filter spectra", g.k * g.c * hf * wf2),
                        ("output spectra", g.n * g.k * hf * wf2)):
        if count > INT32_MAX:
            raise UsageError(f"conv2d fft: the {what} would hold {count} elements, over the 32-bit index limit")
    x_frame = cp.zeros((g.n, g.c, hf, wf), dtype=cp.float32)  # the zero halo is never written again
    w_frame = cp.zeros((g.k, g.c, hf, wf), dtype=cp.float32)
    x_spec = cp.empty((g.n, g.c, hf, wf2), dtype=cp.complex64)
    w_spec = cp.empty((g.k, g.c, hf, wf2), dtype=cp.complex64)
    y_spec = cp.empty((g.n, g.k, hf, wf2), dtype=cp.complex64)
    y_frame = cp.empty((g.n, g.k, hf, wf), dtype=cp.float32)
    plan_x = fftpack.get_fft_plan(x_frame, axes=(-2, -1), value_type="R2C")
    plan_w = fftpack.get_fft_plan(w_frame, axes=(-2, -1), value_type="R2C")
    plan_y = fftpack.get_fft_plan(y_spec, shape=(hf, wf), axes=(-2, -1), value_type="C2R")
    plan_x.check_output_array(x_frame, x_spec)
    plan_w.check_output_array(w_frame, w_spec)
    plan_y.check_output_array(y_spec, y_frame)
    x_in = x_frame[:, :, g.pad_h:g.pad_h + g.h, g.pad_w:g.pad_w + g.w]
    w_in = w_frame[:, :, :g.r, :g.s]
    y_crop = y_frame[:, :, :g.p, :g.q]
    mac = _mac_kernel()
    spectrum = hf * wf2
    mac_grid = (_ceil(spectrum, _MAC_THREADS), _ceil(g.k, _MAC_KB), _ceil(g.n, _MAC_NB))
    _check_grid("fft", mac_grid)
    mac_args = (x_spec, w_spec, y_spec, np.int32(g.n), np.int32(g.c), np.int32(g.k), np.int32(spectrum),
                np.float32(1.0 / (hf * wf)))  # cuFFT's inverse is unnormalised
    cp.cuda.Device().synchronize()  # the zero frames were written on the default stream
    x, w = inputs["x"], inputs["w"]

    def launch(stream: Any) -> None:
        with stream:
            cp.copyto(x_in, x)
            cp.copyto(w_in, w)
            plan_x.fft(x_frame, x_spec, cufft.CUFFT_FORWARD)
            plan_w.fft(w_frame, w_spec, cufft.CUFFT_FORWARD)
            mac(mac_grid, (_MAC_THREADS,), mac_args, stream=stream)
            plan_y.fft(y_spec, y_frame, cufft.CUFFT_INVERSE)
            cp.copyto(out, y_crop)

    return launch
