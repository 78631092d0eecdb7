"""fft: batched 1D forward FFT of complex FP32 signals (n a power of two); hand Stockham radix-2
(naive -> shared memory), the four-step passes (one or two sweeps over DRAM) and the radix-8
Stockham passes in small blocks against cuFFT.
Reference: cuFFT in complex128 (float64) on the same input.

Rate convention: 5·n·log2(n)·batch FLOP per transform (the usual radix-2 count, the one FFTW and
cuFFT benchmarks use), whatever the algorithm really executes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuprof.errors import EnvironmentProblem, UsageError
from gpuprof.families import _keys
from gpuprof.families._random import generator
from gpuprof.gpu import cupy

RATE = "flop"
FORMULA = "TFLOP/s = 5·n·log2(n)·batch (the usual FFT convention, not executed FLOPs) / median time"
UNIT_ROUNDOFF = 2.0**-24  # FP32, round to nearest


def log2n(size: dict[str, int]) -> int:
    n = size["n"]
    if n < 2 or n & (n - 1):
        raise UsageError(f"fft needs n a power of two >= 2, not {n}; e.g. --size n=1048576,batch=16")
    return n.bit_length() - 1


def flop(size: dict[str, int]) -> float:
    return 5.0 * size["n"] * log2n(size) * size["batch"]


def bytes_moved(size: dict[str, int]) -> float:
    return 2.0 * 8 * size["n"] * size["batch"]  # read the signals once, write the spectra once


def tolerance(variant: Any, size: dict[str, int]) -> float:
    # Each radix-2 stage adds a few unit roundoffs (one complex add, one complex multiply by a
    # twiddle that sincospif gets to ~1 ulp); the error bound grows like u·log2(n) (Higham,
    # Accuracy and Stability, §24.1). 10·u·log2(n) covers it with margin (~1.2e-5 at 2^20),
    # while one wrong twiddle or a dropped butterfly gives an O(1) scaled error.
    return 10.0 * UNIT_ROUNDOFF * log2n(size)


def make_inputs(size: dict[str, int], seed: int) -> dict[str, Any]:
    cp = cupy()
    log2n(size)
    rng = generator(seed)
    shape = (size["batch"], size["n"])
    signal = rng.uniform(-1.0, 1.0, shape, dtype=cp.float32) + 1j * rng.uniform(-1.0, 1.0, shape, dtype=cp.float32)
    return {"in": signal.astype(cp.complex64)}


def make_output(size: dict[str, int]) -> Any:
    cp = cupy()
    return cp.full((size["batch"], size["n"]), complex(cp.nan, cp.nan), dtype=cp.complex64)


def kernel_args(inputs: dict[str, Any], out: Any, size: dict[str, int]) -> tuple:
    return (inputs["in"], out, np.int32(size["n"]), np.int32(size["batch"]), np.int32(1))


def reference(inputs: dict[str, Any], size: dict[str, int]) -> Any:
    cp = cupy()
    return cp.fft.fft(inputs["in"].astype(cp.complex128), axis=-1)


@dataclass(frozen=True)
class Launch:
    kernel: str  # "stage": one global radix-2 stage; "tile": the rest of each sub-FFT in shared memory
    s: int  # the stride the launch's sub-FFTs sit at (1, 2, 4, ... n/2)
    src: str  # "in", "out" or "work"
    dst: str


def schedule(n: int, tile: int | None) -> list[Launch]:
    """The launches of one transform. tile=None: log2(n) global stages. Else global stages until the
    sub-FFTs have at most `tile` points, then one shared-memory launch. Buffers ping-pong between
    out and work so that the first launch reads in (never written) and the last one writes out."""
    stages = n.bit_length() - 1
    globals_ = stages if tile is None else max(0, stages - (min(n, tile).bit_length() - 1))
    kinds = [("stage", 1 << j) for j in range(globals_)]
    if tile is not None:
        kinds.append(("tile", 1 << globals_))
    return [Launch(k, s, src, dst) for (k, s), (src, dst) in zip(kinds, ping_pong(len(kinds)))]


def ping_pong(count: int) -> list[tuple[str, str]]:
    """(src, dst) of `count` launches: the first reads in (never written), the last writes out, and
    the others alternate between out and work so that no launch reads the buffer it writes."""
    dsts = ["out" if (count - 1 - j) % 2 == 0 else "work" for j in range(count)]
    return list(zip(["in", *dsts[:-1]], dsts))


# The four-step variant (options.plan = "passes", kernels/fft/fourstep.cu): these mirror the .cu's
# POINTS and Layout<R>; the kernel traps if it gets less shared memory than its layout needs.
FOURSTEP_POINTS = 16  # points per thread, so a block holds 16·THREADS points (TILE)


@dataclass(frozen=True)
class Pass:
    radix: int  # R: the points of each column DFT this launch does
    s: int  # the product of the earlier passes' radices (1 for the first)
    src: str
    dst: str


def pass_radices(n: int, max_radix: int) -> list[int]:
    """n = R1·R2·... with every R <= max_radix, as few passes as possible and their sizes as even
    as possible (2^20 with 2048 -> 1024·1024; 2^17 -> 512·256): each pass is one DRAM sweep."""
    bits, most = n.bit_length() - 1, max_radix.bit_length() - 1
    count = max(1, -(-bits // most))
    base, extra = divmod(bits, count)
    return [1 << (base + 1)] * extra + [1 << base] * (count - extra)


def passes(n: int, max_radix: int) -> list[Pass]:
    radices = pass_radices(n, max_radix)
    strides = [1]
    for r in radices[:-1]:
        strides.append(strides[-1] * r)
    return [Pass(r, s, src, dst) for r, s, (src, dst) in zip(radices, strides, ping_pong(len(radices)))]


def fourstep_columns(radix: int, threads: int) -> int:
    return FOURSTEP_POINTS * threads // radix


def fourstep_smem_bytes(radix: int, threads: int) -> int:
    """Layout<R>::bytes: an R-entry twiddle table, then the block's columns, each R points with a
    gap every 16 and (R >= 32) max(1, 16/columns) slots more."""
    columns = fourstep_columns(radix, threads)
    stride = radix + radix // 16 + (max(1, 16 // columns) if radix >= 32 else 0)
    return 8 * (radix + columns * stride)


def plan(variant: Any, functions: dict[str, Any], inputs: dict[str, Any], out: Any, size: dict[str, int],
         ctx: Any):
    """All launches of one transform inside the one timed launch(stream); the workspace (one batch
    x n complex64 buffer) is allocated here, outside the timing. The manifest says how:
    options.plan = "stages" (default): `kernel` is one global radix-2 stage, launched log2(n) times;
    "tile": `kernel` finishes sub-FFTs of up to TILE points in shared memory, after
    extra_kernels[0] (a global stage) has split larger signals; "passes": one launch per radix of
    pass_radices(n, MAX_RADIX), the kernel for radix R being the manifest's helper rR; "radix_passes":
    the same passes with the radix-8 Stockham kernels' blocks (stockham_threads)."""
    cp = cupy()
    n, batch = size["n"], size["batch"]
    if variant.options.get("plan") == "passes":
        return _plan_passes(variant, functions, inputs, out, size, ctx)
    if variant.options.get("plan") == "radix_passes":
        return _plan_stockham(variant, functions, inputs, out, size, ctx)
    tiled = variant.options.get("plan", "stages") == "tile"
    stage_name = variant.extra_kernels[0] if tiled else variant.kernel
    tile = variant.defines["TILE"] if tiled else None
    launches = schedule(n, tile)
    buffers = {"in": inputs["in"], "out": out}
    if any("work" in (step.src, step.dst) for step in launches):
        buffers["work"] = cp.empty_like(out)
    threads = ctx.block[0]
    butterfly_blocks = -(-(n // 2) * batch // threads)
    calls = []
    for step in launches:
        args = (buffers[step.src], buffers[step.dst], np.int32(n), np.int32(batch), np.int32(step.s))
        if step.kernel == "stage":
            calls.append((functions[stage_name], (butterfly_blocks,), args))
        else:  # one block per sub-FFT: batch signals x s sub-FFTs each
            calls.append((functions[variant.kernel], (batch * step.s,), args))

    def launch(stream: Any) -> None:
        for fn, grid, args in calls:
            fn(grid, ctx.block, args, stream=stream)

    return launch


def _plan_passes(variant: Any, functions: dict[str, Any], inputs: dict[str, Any], out: Any, size: dict[str, int],
                 ctx: Any):
    """The four-step launches: pass i runs the radix-Ri kernel on C = 16·THREADS/Ri columns per
    block, with the dynamic shared memory its layout needs (over 48 KB: each kernel's limit is
    raised here, outside the timing)."""
    cp = cupy()
    n, batch = size["n"], size["batch"]
    threads = ctx.block[0]
    max_radix = variant.defines["MAX_RADIX"]
    if max_radix & (max_radix - 1) or not 2 <= max_radix <= min(2048, FOURSTEP_POINTS * threads):
        raise UsageError(f"fft {variant.name}: MAX_RADIX={max_radix} must be a power of two from 2 to "
                         f"min(2048, 16·THREADS = {FOURSTEP_POINTS * threads})")
    steps = passes(n, max_radix)
    buffers = {"in": inputs["in"], "out": out}
    if any("work" in (step.src, step.dst) for step in steps):
        buffers["work"] = cp.empty_like(out)
    calls = []
    for step in steps:
        fn = _keys.helper(variant, functions, f"r{step.radix}")
        smem = fourstep_smem_bytes(step.radix, threads)
        fn.max_dynamic_shared_size_bytes = smem
        blocks = -(-(n // step.radix) * batch // fourstep_columns(step.radix, threads))
        args = (buffers[step.src], buffers[step.dst], np.int32(n), np.int32(batch), np.int32(step.s))
        calls.append((fn, (blocks,), args, smem))

    def launch(stream: Any) -> None:
        for fn, grid, args, smem in calls:
            fn(grid, ctx.block, args, stream=stream, shared_mem=smem)

    return launch


# The radix-RADIX Stockham variant (options.plan = "radix_passes", kernels/fft/stockham.cu): each
# thread holds RADIX points, a block T·RADIX points = C columns of R. These mirror the .cu's
# bound_threads, column_stride and its trap on too little shared memory.
STOCKHAM_MAX_THREADS = 1024  # the .cu's MAX_THREADS
STOCKHAM_MIN_RUN = 4  # the .cu's MIN_RUN: columns side by side in a later pass's block, 4 x 8 B = 32 B


def stockham_threads(radix: int, points: int, threads: int, several_passes: bool) -> int:
    """Threads of one pass's block (the .cu's bound_threads): THREADS, or more when a block would
    hold less than one column of R points, or (n > MAX_RADIX) fewer than STOCKHAM_MIN_RUN columns,
    whose loads and stores would then not fill whole 32-byte sectors; at most 1024."""
    wanted = radix // points * (STOCKHAM_MIN_RUN if several_passes else 1)
    return max(threads, min(STOCKHAM_MAX_THREADS, wanted))


def stockham_columns(radix: int, points: int, block_threads: int) -> int:
    return block_threads * points // radix


def stockham_stride(radix: int, columns: int) -> int:
    """The .cu's column_stride<R>: one slot more between columns when a block holds several."""
    return radix + (1 if columns > 1 and radix >= 16 else 0)


def stockham_smem_bytes(radix: int, points: int, block_threads: int) -> int:
    """A single-stage pass (R <= RADIX) never touches shared memory."""
    if radix <= points:
        return 0
    columns = stockham_columns(radix, points, block_threads)
    return 8 * columns * stockham_stride(radix, columns)


def _plan_stockham(variant: Any, functions: dict[str, Any], inputs: dict[str, Any], out: Any, size: dict[str, int],
                   ctx: Any):
    """The Stockham launches: pass_radices(n, MAX_RADIX) like the four-step plan, the helper rR
    for a one-pass transform and wR for each pass of a longer one (their __launch_bounds__
    differ), each with its block (stockham_threads) and the dynamic shared memory its columns take
    (over 48 KB: the kernel's limit is raised here, outside the timing)."""
    cp = cupy()
    n, batch = size["n"], size["batch"]
    threads, points, max_radix = ctx.block[0], variant.defines["RADIX"], variant.defines["MAX_RADIX"]
    if max_radix & (max_radix - 1) or not 2 <= max_radix <= 2048:
        raise UsageError(f"fft {variant.name}: MAX_RADIX={max_radix} must be a power of two from 2 to 2048")
    steps = passes(n, max_radix)
    buffers = {"in": inputs["in"], "out": out}
    if any("work" in (step.src, step.dst) for step in steps):
        buffers["work"] = cp.empty_like(out)
    several = len(steps) > 1
    calls = []
    for step in steps:
        block_threads = stockham_threads(step.radix, points, threads, several)
        fn = _keys.helper(variant, functions, f"{'w' if several else 'r'}{step.radix}")
        smem = stockham_smem_bytes(step.radix, points, block_threads)
        fn.max_dynamic_shared_size_bytes = smem
        columns = stockham_columns(step.radix, points, block_threads)
        blocks = -(-(n // step.radix) * batch // columns)
        args = (buffers[step.src], buffers[step.dst], np.int32(n), np.int32(batch), np.int32(step.s))
        calls.append((fn, (blocks,), (block_threads, 1, 1), args, smem))

    def launch(stream: Any) -> None:
        for fn, grid, block, args, smem in calls:
            fn(grid, block, args, stream=stream, shared_mem=smem)

    return launch


def vendor_launch(call: str, inputs: dict[str, Any], out: Any, size: dict[str, int]):
    if call == "cufft.Plan1d.C2C":  # the manifest's `call` key
        return _cufft(inputs, out, size)
    raise KeyError(call)


def _cufft(inputs: dict[str, Any], out: Any, size: dict[str, int]):
    """A batched C2C plan made once here (outside the timing); each launch executes it on the
    stream, from in straight into out (out-of-place, no copy)."""
    try:
        from cupy.cuda import cufft
    except ImportError:
        raise EnvironmentProblem(
            "this CuPy build has no cuFFT (cupy.cuda.cufft); the 'cufft' variant needs it") from None
    plan = cufft.Plan1d(size["n"], cufft.CUFFT_C2C, size["batch"])
    x = inputs["in"]

    def launch(stream: Any) -> None:
        with stream:  # Plan1d.fft sets the plan's stream to CuPy's current stream
            plan.fft(x, out, cufft.CUFFT_FORWARD)

    return launch

