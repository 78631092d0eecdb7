"""reduce: the sum of n FP32 values; Mark Harris's ladder, a float4 + atomic version, CUB and PyTorch."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gpuprof.errors import EnvironmentProblem
from gpuprof.families import _torch
from gpuprof.gpu import cupy

RATE = "bytes"
FORMULA = "GB/s = 4·n bytes (every element read once) / median time"

UNIT_ROUNDOFF = 2.0**-24  # FP32, round to nearest


def flop(size: dict[str, int]) -> float:
    return float(size["n"])  # n - 1 adds, rounded to n


def bytes_moved(size: dict[str, int]) -> float:
    return 4.0 * size["n"]  # read every element once, 4 bytes each; the one output float is noise


def tolerance(variant: str, size: dict[str, int]) -> float:
    # FP32 rounding errors of a summation behave like a random walk: a chain of k dependent adds
    # of positive terms is off by ~u*sqrt(k) relative to the sum (u = 2^-24), and no chain here
    # is longer than n (a grid-stride thread runs ~1000, the atomics a few hundred, trees log2(n)).
    # 4*u*sqrt(n) covers them with margin; at n = 4097 it is 1.5e-5, so one dropped or doubled
    # element (~2.4e-4 of the sum) still fails. The inputs are positive (make_inputs), so the
    # relative error the check computes is against a sum ~n/2, never against a near-zero total.
    return max(1e-6, 4.0 * UNIT_ROUNDOFF * math.sqrt(size["n"]))


def make_inputs(size: dict[str, int], seed: int) -> dict[str, Any]:
    cp = cupy()
    rng = cp.random.default_rng(seed)
    # Uniform in [0, 1), not [-1, 1): a sum of signed terms is ~0 +- sqrt(n), and the check's
    # relative error |out - ref| / |ref| would then measure rounding against a near-zero result.
    return {"in": rng.uniform(0.0, 1.0, size["n"], dtype=cp.float32)}


def make_output(size: dict[str, int]) -> Any:
    cp = cupy()
    return cp.full(1, cp.nan, dtype=cp.float32)


def kernel_args(inputs: dict[str, Any], out: Any, size: dict[str, int]) -> tuple:
    return (inputs["in"], out, np.int32(size["n"]))


def reference(inputs: dict[str, Any], size: dict[str, int]) -> Any:
    cp = cupy()
    return cp.sum(inputs["in"].astype(cp.float64)).reshape(1)


def schedule(n: int, per_block: int, grid_stride_blocks: int | None = None) -> list[tuple[int, int]]:
    """(blocks, elements) of each launch, until one block writes the single value.

    Tiled kernels (one block per `per_block` elements) go again on the previous launch's partial
    sums. Grid-stride kernels (grid_stride_blocks = the manifest's grid) need at most two
    launches: the grid, then one block that loops over the grid's partials.
    """
    passes: list[tuple[int, int]] = []
    while True:
        blocks = -(-n // per_block)
        if grid_stride_blocks is not None:
            blocks = min(blocks, grid_stride_blocks if not passes else 1)
        passes.append((blocks, n))
        if blocks == 1:
            return passes
        n = blocks


def plan(variant: Any, functions: dict[str, Any], inputs: dict[str, Any], out: Any, size: dict[str, int],
         ctx: Any):
    """The launches of one hand-written variant, all inside the one timed launch(stream).

    A name with "atomic": zero out[0] (memset on the stream), one launch that atomically adds into
    it. Otherwise each launch writes one partial sum per block to out[blockIdx.x] and is run again
    on the partials (in workspace buffers allocated here, outside the timing) until one is left.
    """
    cp = cupy()
    fn = functions[variant.kernel]
    n = size["n"]
    if "atomic" in variant.name:
        args = kernel_args(inputs, out, size)

        def launch_atomic(stream: Any) -> None:
            cp.cuda.runtime.memsetAsync(out.data.ptr, 0, out.nbytes, stream.ptr)  # timed, on purpose
            fn(ctx.grid, ctx.block, args, stream=stream)

        return launch_atomic

    if variant.grid == "tiles":
        passes = schedule(n, variant.tile_dims()[0])
    else:  # "one" or "per_sm:K": a grid-stride kernel, any grid covers any n
        passes = schedule(n, 2 * ctx.block[0], grid_stride_blocks=ctx.grid[0])
    # Launch k reads what launch k-1 wrote; the last one writes out[0].
    buffers = [cp.empty(blocks, dtype=cp.float32) for blocks, _ in passes[:-1]] + [out]
    sources = [inputs["in"], *buffers[:-1]]
    launches = [((blocks,), (src, dst, np.int32(count)))
                for (blocks, count), src, dst in zip(passes, sources, buffers)]

    def launch_passes(stream: Any) -> None:
        for grid, args in launches:
            fn(grid, ctx.block, args, stream=stream)

    return launch_passes


def vendor_launch(name: str, inputs: dict[str, Any], out: Any, size: dict[str, int]):
    if name == "cub":
        return _cub_sum(inputs, out)
    if name == "torch":
        return _torch_sum(inputs, out)
    raise KeyError(name)


def _cub_sum(inputs: dict[str, Any], out: Any):
    """cub::DeviceReduce::Sum, called explicitly (cupy.sum takes this path too when CuPy's CUB
    accelerator is on, the default: CUPY_ACCELERATORS=cub)."""
    try:
        from cupy.cuda import cub
    except ImportError:
        cub = None
    if cub is None or not getattr(cub, "available", False):
        raise EnvironmentProblem("this CuPy build has no CUB (cupy.cuda.cub); the 'cub' variant needs it")
    x, scalar = inputs["in"], out.reshape(())  # a 0-d view of out: CUB's full reduction writes a scalar

    def launch(stream: Any) -> None:
        with stream:  # CuPy launches on its current stream
            # DeviceReduce into a CuPy temporary, then a 1-element copy into out (cupy/cuda/cub.pyx).
            if cub.cub_reduction(x, cub.CUPY_CUB_SUM, None, None, scalar, False) is None:
                raise EnvironmentProblem("CuPy declined the CUB reduction for this input")

    return launch


def _torch_sum(inputs: dict[str, Any], out: Any):
    x, y = _torch.as_tensor(inputs["in"]), _torch.as_tensor(out)
    t = _torch.torch()
    y0 = y.view(())  # torch.sum over everything gives a 0-d tensor

    def launch(stream: Any) -> None:
        with _torch.on_stream(stream):
            t.sum(x, dim=0, out=y0)

    return launch
