"""reduce: the sum of n FP32 values; Mark Harris's ladder, a float4 + atomic version, CUB and PyTorch."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gpuprof.errors import EnvironmentProblem
from gpuprof.families import _keys, _torch
from gpuprof.families._cub import cub_call
from gpuprof.families._random import generator
from gpuprof.families._rounding import FP32, unit_roundoff
from gpuprof.gpu import cupy

# The check also launches every variant on structured inputs (families/input_classes.py): a sum of a
# few whole numbers among zeros (needles) or of +a, -a, ... (alternating) is exact in any order, so a
# kernel that skips or samples its input is WRONG; a heavy tail leaves a sample's estimate far off.
INPUT_CLASSES = ("needles", "alternating", "heavy_tail")
EXACT_SUMS = True  # the output is a sum of the inputs: whole-number classes are judged to the exact bound
RATE = "bytes"
FORMULA = "GB/s = 4·n bytes (every element read once) / median time"

UNIT_ROUNDOFF = 2.0**-24  # FP32, round to nearest
# `plan` in the manifest: "passes" (default) re-launches the kernel on its partial sums until one
# value is left; "single" is one launch on the manifest's grid that writes out[0] itself (with
# `zero_output = true` when it atomically adds into it).
PLANS = ("passes", "single")
# `error_model`: the order the variant adds in, which its tolerance holds it to (see tolerance()).
# "serial" (default, the safest: any order, e.g. a student's one-thread loop); "blocked": chains of at
# most BLOCKED_CHAIN elements added in order, at most BLOCKED_CHAIN such partials added in order,
# and trees for the rest (every shipped variant, CUB and PyTorch).
ERROR_MODELS = ("serial", "blocked")
BLOCKED_CHAIN = 4096


def flop(size: dict[str, int]) -> float:
    return float(size["n"])  # n - 1 adds, rounded to n


def bytes_moved(size: dict[str, int]) -> float:
    return 4.0 * size["n"]  # read every element once, 4 bytes each; the one output float is noise


def bytes_read(size: dict[str, int]) -> float:
    return 4.0 * size["n"]  # all of bytes_moved: the input, every element once


def tolerance(variant: Any, size: dict[str, int]) -> float:
    """Relative error bound of the sum, from its error model (the inputs are positive, so the
    relative error is against a sum ~n/2, never against a near-zero total).

    Each rounding of an add is off by at most u (2^-24 in FP32) of the partial sum and the errors
    of different adds are independent, so they add like a random walk. The worst order the
    variants may use is one serial chain of n adds: its error is 0.25..0.5 u*sqrt(n) of the sum
    (simulated in tests/families/test_tolerances.py, 2^12..2^22); trees and blocked orders (chains of ~1000
    then a tree or a few hundred atomics) stay near u*log2(n), far below. The bound is
    1.25 u*sqrt(n), with a floor of 32 u for the few roundings of a tiny n.

    What it catches: at 2^28 it is 1.2e-3, so losing one of vectorized_atomic's 264 block sums
    (1/264 = 3.8e-3 of the total) fails with a 3x margin; one dropped or doubled element fails at
    every check size up to ~1e6 (at n = 4097 the bound is 4.8e-6, an element 2.4e-4).

    "blocked" (error_model in the manifest): no chain is longer than BLOCKED_CHAIN, so the walk is
    bounded by the chain, the chain of partials and the trees: 1.25 u (sqrt(chain) + sqrt(partials)
    + log2 n), 1.2e-5 at 2^28 (vectorized_atomic's order, 993-element chains and 264 atomics, is
    off by ~4.7 u = 2.8e-7 in the simulation): a hundred times tighter than "serial". On uniform
    inputs an estimate can still land inside it (a 94 % sample at 2^28 was off by 1.2e-5, at the
    bound): the needle inputs are what fail an estimate; the tighter bound leaves it less room.
    """
    u = max(unit_roundoff(variant.precision), FP32)  # the result is stored in FP32 whatever the arithmetic
    n = size["n"]
    if _keys.error_model(variant, ERROR_MODELS) == "blocked":
        chain = min(n, BLOCKED_CHAIN)
        partials = min(-(-n // BLOCKED_CHAIN), BLOCKED_CHAIN)
        return max(32 * u, 1.25 * u * (math.sqrt(chain) + math.sqrt(partials) + math.log2(max(n, 2))))
    return max(32 * u, 1.25 * u * math.sqrt(n))


def make_inputs(size: dict[str, int], seed: int) -> dict[str, Any]:
    cp = cupy()
    rng = generator(seed)
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

    plan = "single": one launch that writes out[0] itself (an atomic variant also declares
    zero_output, so the launch factory zeroes out[0] on the stream first, timed). "passes": each
    launch writes one partial sum per block to out[blockIdx.x] and is run again on the partials
    (in workspace buffers allocated here, outside the timing) until one is left.
    """
    cp = cupy()
    fn = functions[variant.kernel]
    n = size["n"]
    if _keys.plan(variant, PLANS) == "single":
        args = kernel_args(inputs, out, size)

        def launch_single(stream: Any) -> None:
            fn(ctx.grid, ctx.block, args, stream=stream)

        return launch_single

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


def vendor_launch(call: str, inputs: dict[str, Any], out: Any, size: dict[str, int]):
    if call == "cub.DeviceReduce.Sum":  # kernels/reduce/vendor/cub_reduce.cu
        return cub_call("reduce", "cub_reduce.cu", "gpuprof_cub_sum_f32", inputs["in"], out, int(size["n"]))
    if call == "cupy.cuda.cub.cub_reduction":
        return _cub_sum(inputs, out)
    if call == "torch.sum":
        return _torch_sum(inputs, out)
    raise KeyError(call)


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
