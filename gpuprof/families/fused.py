"""fused: y = maxpool2x2(relu(batchnorm2d(conv2d(x, w)))) in FP32, NCHW: the course's fusion chapter.

conv2d as the conv2d family (stride 1, same zero padding, odd R and S, no bias: batchnorm's mean
takes it away), batchnorm in training mode (each channel's mean and biased variance over the N·P·Q
conv outputs of the batch, eps = EPS, affine gamma[K], beta[K], no running statistics), relu, and
max pooling 2x2 with stride 2 that drops a ragged odd last row or column (as F.max_pool2d).

Batchnorm needs its channel's statistics over the whole conv output before any output can be
normalised: a grid-wide dependency. The hand-written `fused` variant therefore runs two kernels
(the conv with a statistics-and-pooling epilogue, then an elementwise bn + relu pass over half the
conv output); a single kernel would need a grid-wide barrier (a cooperative launch, one wave of
blocks holding every tile across it) or to compute the conv twice. kernels/fused/fused.cu says how.

plan() launches the hand-written variants by the manifest's `plan` (PLANS below).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuprof.errors import EnvironmentProblem, UsageError
from gpuprof.families import _keys, _torch, conv2d
from gpuprof.families._random import generator
from gpuprof.families._rounding import FP32
from gpuprof.gpu import cupy

# Structured inputs the check adds (families/input_classes.py) to the data (x, or w where it is the
# larger): spikes, alternating and constant rows, each inside the error model's gains (DEVIATION_MAX,
# channel means within ~5 std, OUTPUT_RMS_MIN: tests/families/test_family_fused.py measures them per
# class), so batchnorm statistics taken from a sample are WRONG there. Not heavy tails: they take
# max|v|/std past DEVIATION_MAX, beyond what the model bounds.
INPUT_CLASSES = ("spikes", "alternating", "constants")
RATE = "flop"
FORMULA = ("TFLOP/s = 2·N·K·H·W·C·R·S (the conv, halo taps included) / median time; "
           "GB/s in the JSON: 4·(x + w + gamma + beta + pooled y) bytes")
EPS = 1e-5  # batchnorm's eps, PyTorch's default
# `plan` in the manifest. "one" (default, a student's --add): one launch of the kernel with the
# family's signature, grid.x = ceil(K / tile); "chain": the conv kernel into a workspace z, then the
# helpers `stats` (a block per channel), `bn_relu` (in place on z) and `pool`; "conv_stats_then_apply":
# the statistics zeroed, the conv kernel (its y: a workspace) with its statistics and (max, min) epilogue,
# then the helper `apply`; "winograd_stats_then_apply": the same, with the helper `filter` transforming
# w into a workspace first (conv2d's winograd_f2x2: the kernel reads it in w's place, BN 2x2 tiles =
# pooling windows x BM filters per block, the manifest's dynamic shared memory).
PLANS = ("one", "chain", "conv_stats_then_apply", "winograd_stats_then_apply")
# `error_model`: "products" (default): the conv is a sum of C·R·S FP32 products per output, as in
# conv2d; "transform": the conv may be Winograd or FFT (cuDNN's heuristic, under eager and compiled).
ERROR_MODELS = ("products", "transform")

INT32_MAX = 2**31 - 1  # the kernels index with 32-bit ints
GRID_YZ_MAX = 65535
# The error model's gains (tolerance()), bounds that tests/families/test_family_fused.py measures on the inputs:
GAMMA_MAX = 2.0  # |gamma| <= 2 (make_inputs)
DEVIATION_MAX = 16.0  # max |v| / std(v) over a channel's conv outputs v (x in [0, 1): channel means up to ~5 std)
OUTPUT_RMS_MIN = 0.25  # rms of the pooled output, the check's floor for its scale


@dataclass(frozen=True)
class Geometry(conv2d.Geometry):
    """conv2d's geometry (the conv is the same), plus the pooled output and batchnorm's counts."""

    @property
    def po(self) -> int:  # pooled output height: complete 2x2 windows only
        return self.p // 2

    @property
    def qo(self) -> int:
        return self.q // 2

    @property
    def count(self) -> int:  # conv outputs per channel: batchnorm's statistics are over these
        return self.npq

    @property
    def window_columns(self) -> int:
        """GEMM columns of the fused conv: 4 per 2x2 window of a ceil(P/2) x ceil(Q/2) grid per image."""
        return self.n * ((self.p + 1) // 2) * ((self.q + 1) // 2) * 4


def geometry(size: dict[str, int]) -> Geometry:
    g = Geometry(*(int(size[d]) for d in ("n", "c", "h", "w", "k", "r", "s")))
    if g.r % 2 == 0 or g.s % 2 == 0:
        raise UsageError(f"fused takes odd filter sizes (same padding (R-1)/2); got r = {g.r}, s = {g.s}")
    if g.h < 2 or g.w < 2:
        raise UsageError(f"fused pools 2x2: the image must be at least 2x2; got h = {g.h}, w = {g.w}")
    if g.count < 2:
        raise UsageError("fused needs at least 2 conv outputs per channel for batch statistics")
    for what, count in (("x", g.n * g.c * g.h * g.w), ("w", g.k * g.crs), ("conv output", g.n * g.k * g.p * g.q),
                        ("fused conv columns", g.window_columns * max(g.k, 1))):
        if count > INT32_MAX:
            raise UsageError(f"fused size gives {what} {count} elements, over the kernels' 32-bit index limit")
    return g


def flop(size: dict[str, int]) -> float:
    g = geometry(size)
    return 2.0 * g.n * g.k * g.p * g.q * g.crs  # the conv's multiply-adds; bn, relu, pool add ~10 per output


def bytes_moved(size: dict[str, int]) -> float:
    """The unavoidable traffic: x, w, gamma and beta read once, the pooled y written once."""
    g = geometry(size)
    return 4.0 * (g.n * g.c * g.h * g.w + g.k * g.crs + 2 * g.k + g.n * g.k * g.po * g.qo)


def conv_error(variant: Any, g: Geometry) -> float:
    """The conv's error relative to max(|v|, rms(v)), conv2d's model: "products" 8 u sqrt(CRS) for
    the FP32 sum's random walk, 10 u_p for the inputs at the variant's precision, 4 u for the
    store; "transform" (cuDNN may choose Winograd or FFT: round-off relative to the whole output)
    10x that, at least 1e-4 (cuFFT measured 1.6e-6 at conv2d's suite sizes)."""
    direct = conv2d.products_error(variant, g)
    if _keys.error_model(variant, ERROR_MODELS) == "transform":
        return max(1e-4, 10 * direct)
    return direct


def tolerance(variant: Any, size: dict[str, int]) -> float:
    """y = relu(gamma·(v - mean)/sqrt(var + eps) + beta), maximised over a window: relu and max add
    no error, so y's error is |gamma| times the error of the normalised v̂ = (v - mean)/std.

    - The conv's error δv ≤ conv_error·max(|v|, rms v) (conv2d's model), and max|v|/std ≤
      DEVIATION_MAX on these inputs (x uniform in [0, 1) gives channel means up to ~5 std, as after
      a relu): δv̂ ≤ DEVIATION_MAX·conv_error.
    - The statistics: FP32 partial sums of ≤ 64 outputs (fused) or single values (unfused), added
      in FP64; var = E[v²] - mean² loses E[v²]/var ≤ 1 + 5² of relative accuracy, so var is good to
      ~26·8 u and v̂ = (v - mean)/std to |v̂|·(that)/2 ≤ DEVIATION_MAX·104 u; the mean's error is below it.
    - The affine map a·v + b in FP32 (b = beta - mean·a): a few u of |a·mean| ≤ GAMMA_MAX·5 over the
      output, inside the 104 u term's slack.
    Scaled by the check's max(|y|, rms y), rms y ≥ OUTPUT_RMS_MIN: tolerance = GAMMA_MAX ·
    DEVIATION_MAX · (conv_error + 104 u) / OUTPUT_RMS_MIN = 128·(...): 2.3e-3 at the default,
    1.7e-2 for the vendor rows (transform). A missing channel's statistics (v̂ = v/sqrt(eps))
    or an unnormalised channel is off by O(1..100), a missing tap by ≥ 0.06·|gamma| at C·R·S = 576
    (|x w| ~ 0.25 against std sqrt(CRS)/6), a wrong window or sign choice by O(1).
    """
    g = geometry(size)
    return GAMMA_MAX * DEVIATION_MAX * (conv_error(variant, g) + 104 * FP32) / OUTPUT_RMS_MIN


def make_inputs(size: dict[str, int], seed: int) -> dict[str, Any]:
    return _make_inputs(cupy(), size, seed, generator(seed))


def _make_inputs(xp: Any, size: dict[str, int], seed: int, rng: Any = None) -> dict[str, Any]:
    """x in [0, 1) (as after a relu and a pool: channel means far from 0 test the variance),
    w in [-1, 1), gamma in [-2, 2) (negative gammas take the window's min), beta in [-1, 1)."""
    g = geometry(size)
    rng = rng if rng is not None else xp.random.default_rng(seed)

    def uniform(low: float, high: float, shape: tuple[int, ...]) -> Any:
        return rng.uniform(low, high, shape).astype(xp.float32)  # numpy's uniform takes no dtype

    return {"x": uniform(0.0, 1.0, (g.n, g.c, g.h, g.w)), "w": uniform(-1.0, 1.0, (g.k, g.c, g.r, g.s)),
            "gamma": uniform(-GAMMA_MAX, GAMMA_MAX, (g.k,)), "beta": uniform(-1.0, 1.0, (g.k,))}


def make_output(size: dict[str, int]) -> Any:
    cp = cupy()
    g = geometry(size)
    return cp.full((g.n, g.k, g.po, g.qo), cp.nan, dtype=cp.float32)


def kernel_args(inputs: dict[str, Any], out: Any, size: dict[str, int]) -> tuple:
    return (inputs["x"], inputs["w"], inputs["gamma"], inputs["beta"], out, *geometry(size).ints())


def reference(inputs: dict[str, Any], size: dict[str, int]) -> Any:
    return block_reference(cupy(), inputs, size)


def conv_reference(xp: Any, inputs: dict[str, Any], g: Geometry) -> Any:
    """The conv in float64, z[n][k][p][q]: one (K x C) @ (C x N·P·Q) product per tap (r, s), summed."""
    x64 = xp.pad(inputs["x"].astype(xp.float64), ((0, 0), (0, 0), (g.pad_h, g.pad_h), (g.pad_w, g.pad_w)))
    w64 = inputs["w"].astype(xp.float64)
    acc = xp.zeros((g.k, g.n, g.p, g.q), dtype=xp.float64)
    for r in range(g.r):
        for s in range(g.s):
            acc += xp.tensordot(w64[:, :, r, s], x64[:, :, r:r + g.p, s:s + g.q], axes=([1], [1]))
    return xp.ascontiguousarray(acc.transpose(1, 0, 2, 3))


def bn_relu_pool(xp: Any, z: Any, gamma: Any, beta: Any, g: Geometry) -> Any:
    """Batchnorm (batch statistics, biased variance), relu and 2x2 max pooling of z, in z's dtype."""
    mean = z.mean(axis=(0, 2, 3), keepdims=True)
    var = ((z - mean) ** 2).mean(axis=(0, 2, 3), keepdims=True)
    a = gamma.astype(z.dtype).reshape(1, -1, 1, 1)
    b = beta.astype(z.dtype).reshape(1, -1, 1, 1)
    act = xp.maximum(a * (z - mean) / xp.sqrt(var + EPS) + b, 0)
    cropped = act[:, :, :2 * g.po, :2 * g.qo]
    return cropped.reshape(g.n, g.k, g.po, 2, g.qo, 2).max(axis=(3, 5))


def block_reference(xp: Any, inputs: dict[str, Any], size: dict[str, int]) -> Any:
    """The whole block in float64 (numpy or CuPy, whichever `xp` is)."""
    g = geometry(size)
    return bn_relu_pool(xp, conv_reference(xp, inputs, g), inputs["gamma"], inputs["beta"], g)


# ---------------------------------------------------------------- hand-written variants


def plan(variant: Any, functions: dict[str, Any], inputs: dict[str, Any], out: Any, size: dict[str, int], ctx: Any):
    """launch(stream) for one hand-written variant: its kernels in order, workspace allocated here."""
    cp = cupy()
    g = geometry(size)
    d = variant.defines
    main = functions[variant.kernel]
    chosen = _keys.plan(variant, PLANS)
    block = ctx.block
    x, w, gamma, beta = inputs["x"], inputs["w"], inputs["gamma"], inputs["beta"]
    eps = np.float32(EPS)

    if chosen == "one":  # a student's single kernel on the manifest's grid (channels over grid.x)
        args = kernel_args(inputs, out, size)
        grid = ctx.grid

        def launch_one(stream: Any) -> None:
            main(grid, block, args, stream=stream)

        return launch_one

    ew = d["EW_THREADS"]
    if chosen == "chain":
        stats, bn_relu, pool = (_keys.helper(variant, functions, role) for role in ("stats", "bn_relu", "pool"))
        z = cp.empty((g.n, g.k, g.p, g.q), dtype=cp.float32)
        ss = cp.empty((g.k, 2), dtype=cp.float32)  # batchnorm's (a, b) per channel
        conv_grid = (_ceil(g.count, d["BN"]), _ceil(g.k, d["BM"]))
        _check_grid(variant.name, conv_grid)
        elements, pooled = g.n * g.k * g.p * g.q, g.n * g.k * g.po * g.qo
        pq = np.int32(g.p * g.q)
        conv_args = (x, w, gamma, beta, z, *g.ints())  # the conv kernel's y is z
        stats_args = (z, gamma, beta, ss, np.int32(g.n), np.int32(g.k), pq, eps)
        bn_relu_args = (z, ss, np.int32(g.n), np.int32(g.k), pq)
        pool_args = (z, out, np.int32(g.n * g.k), np.int32(g.p), np.int32(g.q))
        stats_block = (d["STATS_THREADS"], 1, 1)

        def launch_chain(stream: Any) -> None:
            main(conv_grid, block, conv_args, stream=stream)
            stats((g.k,), stats_block, stats_args, stream=stream)
            bn_relu((_ceil(elements, ew),), (ew, 1, 1), bn_relu_args, stream=stream)
            pool((_ceil(pooled, ew),), (ew, 1, 1), pool_args, stream=stream)

        return launch_chain

    # "conv_stats_then_apply", "winograd_stats_then_apply"
    apply = _keys.helper(variant, functions, "apply")
    # One workspace, as the conv kernel's y: 2K doubles of channel sums (sum, sum of squares), then
    # (max, min) per complete window [N][K][P/2][Q/2][2]; the sums' 16·K bytes keep the float2s 8-byte aligned.
    pooled = g.n * g.k * g.po * g.qo
    workspace = cp.empty(4 * g.k + 2 * pooled, dtype=cp.float32)
    sums, minmax = workspace[:4 * g.k], workspace[4 * g.k:]
    if chosen == "winograd_stats_then_apply":
        conv = _winograd_conv(variant, functions, inputs, workspace, g, block, ctx.shared_mem)
    else:
        conv_grid = (_ceil(g.window_columns, d["BN"]), _ceil(g.k, d["BM"]))
        _check_grid(variant.name, conv_grid)
        conv_args = (x, w, gamma, beta, workspace, *g.ints())

        def conv(stream: Any) -> None:
            main(conv_grid, block, conv_args, stream=stream)

    apply_args = (minmax, sums, gamma, beta, out, np.int32(g.n), np.int32(g.k), np.int32(g.po * g.qo),
                  np.int32(g.count), eps)
    memset = cp.cuda.runtime.memsetAsync

    def launch_fused(stream: Any) -> None:
        memset(sums.data.ptr, 0, sums.nbytes, stream.ptr)  # the conv kernel adds into the sums
        conv(stream)
        apply((_ceil(pooled, ew),), (ew, 1, 1), apply_args, stream=stream)

    return launch_fused


def _winograd_conv(variant: Any, functions: dict[str, Any], inputs: dict[str, Any], workspace: Any, g: Geometry,
                   block: tuple[int, int, int], shared_mem: int):
    """conv(stream) of plan "winograd_stats_then_apply": the helper `filter` writes U[16][C'][K'] (every
    element, padding zeros included, on every launch: nothing is kept from an earlier w), then the
    kernel, U in w's place and the workspace as y, over ceil(K/BM) x ceil(windows/BN) blocks, filter
    blocks fastest, on one grid axis. Every 2x2 window of the ceil(P/2) x ceil(Q/2) grid is one tile."""
    return conv2d.winograd_launch(variant, functions, g, inputs["w"], block, shared_mem,
                                  lambda u: (inputs["x"], u, inputs["gamma"], inputs["beta"], workspace, *g.ints()),
                                  "fused")


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _check_grid(variant: str, grid: tuple[int, ...]) -> None:
    for axis, (extent, limit) in enumerate(zip(grid, (INT32_MAX, GRID_YZ_MAX, GRID_YZ_MAX))):
        if extent > limit:
            raise UsageError(f"fused/{variant}: grid.{'xyz'[axis]} = {extent} is over the CUDA limit {limit} "
                             "at this size; choose a smaller --size")


# ---------------------------------------------------------------- library variants


def vendor_launch(call: str, inputs: dict[str, Any], out: Any, size: dict[str, int]):
    if call == "torch.eager":
        return _eager(inputs, out, geometry(size))
    if call == "torch.compile":
        return _compiled(inputs, out, geometry(size))
    raise KeyError(call)


def _block_function(t: Any, g: Geometry):
    """The block as PyTorch code, written into y: conv (cuDNN), batch_norm(training), relu, max pool.
    max_pool2d_with_indices is what F.max_pool2d runs on CUDA; its out= overload writes y itself."""
    functional = t.nn.functional
    padding = (g.pad_h, g.pad_w)

    def block(x: Any, w: Any, gamma: Any, beta: Any, y: Any, indices: Any) -> None:
        z = functional.conv2d(x, w, padding=padding)
        z = functional.batch_norm(z, None, None, gamma, beta, training=True, eps=EPS)
        t.ops.aten.max_pool2d_with_indices.out(functional.relu(z), [2, 2], [2, 2], [0, 0], [1, 1], False,
                                               out=y, indices=indices)

    return block


def _tensors(inputs: dict[str, Any], out: Any) -> tuple:
    return tuple(_torch.as_tensor(a) for a in (inputs["x"], inputs["w"], inputs["gamma"], inputs["beta"], out))


def _eager(inputs: dict[str, Any], out: Any, g: Geometry):
    t = _torch.torch()
    x, w, gamma, beta, y = _tensors(inputs, out)
    indices = t.empty(y.shape, dtype=t.int64, device=y.device)
    block = _block_function(t, g)

    def launch(stream: Any) -> None:
        _torch.set_tf32(False)
        with _torch.on_stream(stream):
            block(x, w, gamma, beta, y, indices)

    return launch


def _compiled(inputs: dict[str, Any], out: Any, g: Geometry):
    """torch.compile of the same block (static shapes: each size gets its own kernels). Compiled
    here, once, into a scratch output, so a compiler failure becomes this row's SKIPPED reason
    (EnvironmentProblem) instead of a crash, and compile time stays out of the timing."""
    t = _torch.torch()
    x, w, gamma, beta, y = _tensors(inputs, out)
    functional = t.nn.functional
    padding = (g.pad_h, g.pad_w)

    def block(x: Any, w: Any, gamma: Any, beta: Any) -> Any:
        z = functional.conv2d(x, w, padding=padding)
        z = functional.batch_norm(z, None, None, gamma, beta, training=True, eps=EPS)
        return functional.max_pool2d(functional.relu(z), 2, 2)

    def block_into(x: Any, w: Any, gamma: Any, beta: Any, y: Any) -> None:
        y.copy_(block(x, w, gamma, beta))  # Inductor writes the pooled result into y

    if not hasattr(t, "compile"):
        raise EnvironmentProblem(
            f"this PyTorch ({t.__version__}) has no torch.compile; the 'compiled' variant needs >= 2.0")
    _torch.set_tf32(False)
    try:
        compiled = t.compile(block_into, dynamic=False)
        compiled(x, w, gamma, beta, t.empty_like(y))
        t.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001 - Dynamo/Inductor/Triton raise many types; all mean "cannot compile here"
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise EnvironmentProblem(f"torch.compile failed on this machine ({type(exc).__name__}: {first})") from None

    def launch(stream: Any) -> None:
        _torch.set_tf32(False)
        with _torch.on_stream(stream):
            compiled(x, w, gamma, beta, y)

    return launch
