"""scan: inclusive prefix sum of n FP32 values; block scans made global, then a single-pass scan."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gpuprof.families import _keys, _torch
from gpuprof.families._cub import cub_call
from gpuprof.families._random import generator
from gpuprof.families._rounding import FP32, unit_roundoff
from gpuprof.gpu import cupy

# The check also launches every variant on needle inputs (families/input_classes.py): a sum or prefix
# sum of a few whole numbers among zeros is exact, so a kernel that skips or samples its input is WRONG.
INPUT_CLASSES = ("needles",)
EXACT_SUMS = True  # every output is a sum of inputs: needles are judged to the exact bound
RATE = "bytes"
FORMULA = "GB/s = 8·n bytes (x read once, y written once) / median time"

EPS32 = 2.0**-24  # FP32 unit roundoff
# `plan` in the manifest: "single" (default) is one launch of the kernel on the manifest's grid;
# "propagate" scans each tile, then the tile totals (helpers: totals, add), recursively;
# "lookback" zeroes the look-back state (helper: reset), then runs the single-pass kernel.
PLANS = ("single", "propagate", "lookback")
# `error_model`: "tiled" (default): a prefix chains tiles of thousands of elements (every shipped
# scan; see tolerance()); "serial": a student's scan that chains up to n adds in one thread.
ERROR_MODELS = ("tiled", "serial")
ERROR_SCALE = "element"  # each output against its own prefix: no rms floor that hides a wrong early tile
HELPER_THREADS = 256  # block size of the small helper kernels (_totals, _add, _reset): any size works


def flop(size: dict[str, int]) -> float:
    return float(size["n"])  # one add per element (the work-efficient count)


def bytes_moved(size: dict[str, int]) -> float:
    return 2.0 * 4 * size["n"]  # x read once, y written once, 4 bytes each


def bytes_read(size: dict[str, int]) -> float:
    return 4.0 * size["n"]  # x; the other half of bytes_moved is y, written


def tolerance(variant: Any, size: dict[str, int]) -> float:
    """Per-element bound: |y_i - ref_i| / ref_i (ERROR_SCALE = "element"; inputs in [0, 1), so
    prefix i is ~i/2 and never cancels).

    y_i is its tile's offset plus a local scan. The local part: ITEMS serial adds per thread and a
    tree of log2(BLOCK) levels over the thread totals, each rounding once: a few u, up to ~40 u at
    the worst of millions of elements. The offset chains the tile totals before it:
    scan-then-propagate scans them as a tree again (a few u more); the single pass (decoupled
    look-back, CUB) adds them one after another, n/T serial adds of ~T/2, a random walk of
    0.3..0.6 u*sqrt(n/T) (4.1e-6 at 2^28 with T = 6144 in tests/families/test_tolerances.py; the H100
    measured 3.7e-6 for cub). "tiled" bounds both with 260 u (1.55e-5) up to 2^28, growing like
    sqrt(n) beyond.

    What it catches at 2^28: a look-back tile of T = 6144 lost from the prefixes after it is an
    error of T/p at the first element past it (p its position): >= 5.1e-5, 3.3x the bound, anywhere
    in the first 45 % (twice that at 2^27); a wrong first tile is ~100 % wrong; an off-by-one at
    every tile edge is ~1/T at the first edge. A tile lost near the end (T/p < 1.55e-5) is within
    rounding of a correct scan at this size and is caught at the check sizes only.
    "serial" (a student's one-thread chain, declared in --kernels-dir): u*sqrt(n), the random walk
    of n serial adds.
    """
    u = max(unit_roundoff(variant.precision), FP32)  # the output is FP32 whatever the arithmetic
    n = size["n"]
    if _keys.error_model(variant, ERROR_MODELS) == "serial":
        return max(260 * u, u * math.sqrt(n))
    return 260 * u * max(1.0, math.sqrt(n / 2**28))


def make_inputs(size: dict[str, int], seed: int) -> dict[str, Any]:
    cp = cupy()
    rng = generator(seed)
    return {"x": rng.random(size["n"], dtype=cp.float32)}  # uniform [0, 1): no cancellation


def make_output(size: dict[str, int]) -> Any:
    cp = cupy()
    return cp.full(size["n"], cp.nan, dtype=cp.float32)


def kernel_args(inputs: dict[str, Any], out: Any, size: dict[str, int]) -> tuple:
    return (inputs["x"], out, np.int32(size["n"]))


def reference(inputs: dict[str, Any], size: dict[str, int]) -> Any:
    cp = cupy()
    return cp.cumsum(inputs["x"].astype(cp.float64))


def vendor_launch(call: str, inputs: dict[str, Any], out: Any, size: dict[str, int]):
    if call == "cub.DeviceScan.InclusiveSum":  # kernels/scan/vendor/cub_scan.cu
        return cub_call("scan", "cub_scan.cu", "gpuprof_cub_inclusive_sum_f32", inputs["x"], out, int(size["n"]))
    if call != "torch.cumsum":
        raise KeyError(call)
    # cupy.cumsum's CUB path (cupy.cuda.cub.device_scan) scans in place, so it would first copy x
    # into y: 8n more bytes in the timing. torch.cumsum(out=) calls cub::DeviceScan::InclusiveScan
    # from x into y directly.
    t = _torch.torch()
    x, y = _torch.as_tensor(inputs["x"]), _torch.as_tensor(out)

    def launch(stream: Any) -> None:
        with _torch.on_stream(stream):
            t.cumsum(x, 0, out=y)

    return launch


def plan(variant: Any, functions: dict[str, Any], inputs: dict[str, Any], out: Any, size: dict[str, int], ctx: Any):
    """The manifest's plan: "lookback", "propagate" or "single"; workspace is allocated here, once."""
    n = size["n"]
    # (kernel, grid, block, args, dynamic shared memory): only the look-back scan kernel has any
    steps: list[tuple[Any, tuple[int, ...], tuple[int, int, int], tuple, int]] = []
    chosen = _keys.plan(variant, PLANS)
    if chosen == "lookback":  # single pass: zero the look-back state, then one scan kernel
        reset = _keys.helper(variant, functions, "reset")
        tiles = math.ceil(n / variant.tile_dims()[0])  # tiles, not blocks: a persistent kernel loops over them
        steps.append((reset, (math.ceil((tiles + 1) / HELPER_THREADS),), (HELPER_THREADS, 1, 1), (np.int32(tiles),), 0))
        steps.append((functions[variant.kernel], ctx.grid, ctx.block, kernel_args(inputs, out, size), ctx.shared_mem))
    elif chosen == "propagate":
        totals, add = _keys.helper(variant, functions, "totals"), _keys.helper(variant, functions, "add")
        _propagate(steps, functions[variant.kernel], totals, add, variant.tile_dims()[0], ctx.block,
                   inputs["x"], out, n)
    else:  # "single": one kernel on the manifest's grid (a student's scan)
        steps.append((functions[variant.kernel], ctx.grid, ctx.block, kernel_args(inputs, out, size), 0))

    def launch(stream: Any) -> None:
        for fn, grid, block, args, shared_mem in steps:
            fn(grid, block, args, stream=stream, shared_mem=shared_mem)

    return launch


def _propagate(steps: list, scan: Any, totals: Any, add: Any, tile: int, block: tuple[int, int, int],
               src: Any, dst: Any, n: int) -> None:
    """Scan-then-propagate, recursively: scan each tile of src into dst; if there is more than one
    tile, gather the tile totals, scan them the same way, and add each tile's offset to dst."""
    cp = cupy()
    tiles = math.ceil(n / tile)
    steps.append((scan, (tiles,), block, (src, dst, np.int32(n)), 0))
    if tiles == 1:
        return
    count = tiles - 1  # tile b >= 1 needs the scanned total of tiles 0..b-1
    gathered = cp.empty(count, dtype=cp.float32)  # workspace, kept alive by the launch closure's steps
    scanned = cp.empty(count, dtype=cp.float32)
    steps.append((totals, (math.ceil(count / HELPER_THREADS),), (HELPER_THREADS, 1, 1),
                  (dst, gathered, np.int32(count)), 0))
    _propagate(steps, scan, totals, add, tile, block, gathered, scanned, count)
    steps.append((add, (count,), (HELPER_THREADS, 1, 1), (dst, scanned, np.int32(n)), 0))
