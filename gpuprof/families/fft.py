"""fft: batched 1D forward FFT of complex FP32 signals (n a power of two); hand Stockham radix-2
(naive -> shared memory) against cuFFT. Reference: cuFFT in complex128 (float64) on the same input.

Rate convention: 5·n·log2(n)·batch FLOP per transform (the usual radix-2 count, the one FFTW and
cuFFT benchmarks use), whatever the algorithm really executes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuprof.errors import EnvironmentProblem, UsageError
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


def tolerance(variant: str, size: dict[str, int]) -> float:
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
    count = len(kinds)
    dsts = ["out" if (count - 1 - j) % 2 == 0 else "work" for j in range(count)]
    srcs = ["in", *dsts[:-1]]
    return [Launch(k, s, src, dst) for (k, s), src, dst in zip(kinds, srcs, dsts)]


def plan(variant: Any, functions: dict[str, Any], inputs: dict[str, Any], out: Any, size: dict[str, int],
         ctx: Any):
    """All launches of one transform inside the one timed launch(stream); the workspace (one batch
    x n complex64 buffer) is allocated here, outside the timing. The manifest says how:
    options.plan = "stages" (default): `kernel` is one global radix-2 stage, launched log2(n) times;
    "tile": `kernel` finishes sub-FFTs of up to TILE points in shared memory, after
    extra_kernels[0] (a global stage) has split larger signals."""
    cp = cupy()
    n, batch = size["n"], size["batch"]
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
        raise EnvironmentProblem("this CuPy build has no cuFFT (cupy.cuda.cufft); the 'cufft' variant needs it") from None
    plan = cufft.Plan1d(size["n"], cufft.CUFFT_C2C, size["batch"])
    x = inputs["in"]

    def launch(stream: Any) -> None:
        with stream:  # Plan1d.fft sets the plan's stream to CuPy's current stream
            plan.fft(x, out, cufft.CUFFT_FORWARD)

    return launch

