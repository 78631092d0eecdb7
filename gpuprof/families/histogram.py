"""histogram: 256 bins of n 8-bit values; global atomics -> shared privatisation -> warp
aggregation -> per-warp bins, against CUB's DeviceHistogram. The check is exact (integer counts).

Sizes have two dims: n values, and `spread`, the number of bins the values fall in (uniform over
bins 0..spread-1): 256 is uniform, 1 puts every value in one bin (the worst contention). Values
above 256 count as 256.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpuprof.errors import EnvironmentProblem
from gpuprof.families._cub import cub_call
from gpuprof.families._random import generator
from gpuprof.gpu import cupy

RATE = "bytes"
FORMULA = "GB/s = n bytes (every 8-bit value read once; the 256 counters are noise) / median time"
BINS = 256
POISON = np.uint64(0xFFFF_FFFF_FFFF_FFFF)  # integer counts cannot be NaN: all ones is never a count


def bins_hit(size: dict[str, int]) -> int:
    return max(1, min(BINS, size["spread"]))


def flop(size: dict[str, int]) -> float:
    return float(size["n"])  # one (integer) increment per value


def bytes_moved(size: dict[str, int]) -> float:
    return float(size["n"])  # GB/s of input read: one byte per value; the 2 KB of bins are noise


def tolerance(variant: Any, size: dict[str, int]) -> float:
    return 0.0  # counts are integers (exact in float64 below 2^53): every bin must match exactly


def make_inputs(size: dict[str, int], seed: int) -> dict[str, Any]:
    cp = cupy()
    rng = generator(seed)
    values = rng.integers(0, bins_hit(size), size["n"], dtype=cp.int32)
    if bins_hit(size) == 1:
        # One bin, but not always bin 0: a kernel that drops values into bin 0 must not pass.
        values = values + int(np.random.default_rng(seed).integers(0, BINS))
    return {"in": values.astype(cp.uint8)}


def make_output(size: dict[str, int]) -> Any:
    cp = cupy()
    return cp.full(BINS, POISON, dtype=cp.uint64)


def kernel_args(inputs: dict[str, Any], out: Any, size: dict[str, int]) -> tuple:
    return (inputs["in"], out, np.int32(size["n"]))


def reference(inputs: dict[str, Any], size: dict[str, int]) -> Any:
    cp = cupy()
    return cp.bincount(inputs["in"].astype(cp.int32), minlength=BINS).astype(cp.float64)


def plan(variant: Any, functions: dict[str, Any], inputs: dict[str, Any], out: Any, size: dict[str, int],
         ctx: Any):
    """Every hand-written variant adds into the bins: zero them (a 2 KB memset on the stream, inside
    the timed launch, as CUB zeroes its output inside its call), then one launch."""
    cp = cupy()
    fn = functions[variant.kernel]
    args = kernel_args(inputs, out, size)

    def launch(stream: Any) -> None:
        cp.cuda.runtime.memsetAsync(out.data.ptr, 0, out.nbytes, stream.ptr)
        fn(ctx.grid, ctx.block, args, stream=stream)

    return launch


def vendor_launch(call: str, inputs: dict[str, Any], out: Any, size: dict[str, int]):
    if call == "cub.DeviceHistogram.HistogramEven":  # the manifest's `call` key
        return _cub_histogram_u8(inputs, out, size)
    if call == "cupy.cuda.cub.device_histogram":
        return _cupy_cub_histogram(inputs, out)
    raise KeyError(call)


def _cub_histogram_u8(inputs: dict[str, Any], out: Any, size: dict[str, int]):
    """cub::DeviceHistogram::HistogramEven as a CUDA programmer calls it on bytes: uint8 samples,
    integer levels 0..256, 32-bit counters (kernels/histogram/vendor/cub_histogram.cu, built by
    nvcc on first use: families/_cub.py). CUB zeroes the counters itself; the 256 counts are then
    widened into the family's 64-bit bins on the same stream (one 256-element kernel, timed with it)."""
    cp = cupy()
    counts32 = cp.zeros(BINS, dtype=cp.uint32)
    histogram = cub_call("histogram", "cub_histogram.cu", "gpuprof_cub_histogram_even_u8", inputs["in"], counts32,
                         int(size["n"]))

    def launch(stream: Any) -> None:
        histogram(stream)
        with stream:
            out[...] = counts32  # uint32 -> uint64, on the timed stream

    return launch


def _cupy_cub_histogram(inputs: dict[str, Any], out: Any):
    """cub::DeviceHistogram::HistogramEven with 257 levels over [0, 256): CuPy's binding
    cupy.cuda.cub.device_histogram(x, y, 257) (the path cupy.bincount takes with CUB on), called
    directly because cupy.bincount syncs on max(x) first. CUB zeroes y itself (its init kernel)
    and counts in long long, so it writes our 64-bit bins in place, no copy. Its workspace comes
    from CuPy's memory pool (cached after the first call). Kept as its own row: the same CUB
    algorithm with 64-bit counters runs several times slower than with 32-bit ones."""
    try:
        from cupy.cuda import cub
    except ImportError:
        cub = None
    if cub is None or not getattr(cub, "available", False) or not hasattr(cub, "device_histogram"):
        raise EnvironmentProblem("this CuPy build has no CUB histogram (cupy.cuda.cub); the 'cub_cupy' variant "
                                 "needs it")
    cp = cupy()
    x, counts = inputs["in"], out.view(cp.int64)

    def launch(stream: Any) -> None:
        with stream:  # CuPy launches on its current stream
            cub.device_histogram(x, counts, BINS + 1)

    return launch
