"""scan: inclusive prefix sum of n FP32 values; block scans made global, then a single-pass scan."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gpuprof.families import _torch
from gpuprof.gpu import cupy

RATE = "bytes"
FORMULA = "GB/s = 8·n bytes (x read once, y written once) / median time"

EPS32 = 2.0**-24  # FP32 unit roundoff
HELPER_THREADS = 256  # block size of the small helper kernels (_totals, _add, _reset): any size works


def flop(size: dict[str, int]) -> float:
    return float(size["n"])  # one add per element (the work-efficient count)


def bytes_moved(size: dict[str, int]) -> float:
    return 2.0 * 4 * size["n"]  # x read once, y written once, 4 bytes each


def tolerance(variant: str, size: dict[str, int]) -> float:
    # Inputs are uniform in [0, 1), so prefix i grows like i/2 and the check compares each output
    # with its own prefix. A prefix that went through a chain of k FP32 additions is off by about
    # sqrt(k/3) * eps of itself (random rounding); no variant here chains more than n of them
    # (tiles make it ~sqrt(n / tile)), so sqrt(n) * eps / 4 bounds them with room: measured on an
    # H100 at 2^28 the worst was 3.7e-6 (cub) against 2.4e-4, and a tile lost at 10^6 (a few 1e-3)
    # still fails. The floor is ~30 ulps, for small n where a few roundings dominate.
    return max(2e-6, math.sqrt(size["n"]) * EPS32 / 4)


def make_inputs(size: dict[str, int], seed: int) -> dict[str, Any]:
    cp = cupy()
    rng = cp.random.default_rng(seed)
    return {"x": rng.random(size["n"], dtype=cp.float32)}  # uniform [0, 1): no cancellation


def make_output(size: dict[str, int]) -> Any:
    cp = cupy()
    return cp.full(size["n"], cp.nan, dtype=cp.float32)


def kernel_args(inputs: dict[str, Any], out: Any, size: dict[str, int]) -> tuple:
    return (inputs["x"], out, np.int32(size["n"]))


def reference(inputs: dict[str, Any], size: dict[str, int]) -> Any:
    cp = cupy()
    return cp.cumsum(inputs["x"].astype(cp.float64))


def vendor_launch(name: str, inputs: dict[str, Any], out: Any, size: dict[str, int]):
    if name != "cub":
        raise KeyError(name)
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
    """Every hand-written scan needs more than one kernel; the workspace is allocated here, once."""
    n = size["n"]
    steps: list[tuple[Any, tuple[int, ...], tuple[int, int, int], tuple]] = []
    reset = functions.get(f"{variant.kernel}_reset")
    totals, add = functions.get(f"{variant.kernel}_totals"), functions.get(f"{variant.kernel}_add")
    if reset is not None:  # single pass: zero the look-back state, then one scan kernel
        tiles = math.ceil(n / variant.tile_dims()[0])
        steps.append((reset, (math.ceil((tiles + 1) / HELPER_THREADS),), (HELPER_THREADS, 1, 1), (np.int32(tiles),)))
        steps.append((functions[variant.kernel], ctx.grid, ctx.block, kernel_args(inputs, out, size)))
    elif totals is not None and add is not None:
        _propagate(steps, functions[variant.kernel], totals, add, variant.tile_dims()[0], ctx.block, inputs["x"], out, n)
    else:  # a student's single-kernel scan
        steps.append((functions[variant.kernel], ctx.grid, ctx.block, kernel_args(inputs, out, size)))

    def launch(stream: Any) -> None:
        for fn, grid, block, args in steps:
            fn(grid, block, args, stream=stream)

    return launch


def _propagate(steps: list, scan: Any, totals: Any, add: Any, tile: int, block: tuple[int, int, int],
               src: Any, dst: Any, n: int) -> None:
    """Scan-then-propagate, recursively: scan each tile of src into dst; if there is more than one
    tile, gather the tile totals, scan them the same way, and add each tile's offset to dst."""
    cp = cupy()
    tiles = math.ceil(n / tile)
    steps.append((scan, (tiles,), block, (src, dst, np.int32(n))))
    if tiles == 1:
        return
    count = tiles - 1  # tile b >= 1 needs the scanned total of tiles 0..b-1
    gathered = cp.empty(count, dtype=cp.float32)  # workspace, kept alive by the launch closure's steps
    scanned = cp.empty(count, dtype=cp.float32)
    steps.append((totals, (math.ceil(count / HELPER_THREADS),), (HELPER_THREADS, 1, 1), (dst, gathered, np.int32(count))))
    _propagate(steps, scan, totals, add, tile, block, gathered, scanned, count)
    steps.append((add, (count,), (HELPER_THREADS, 1, 1), (dst, scanned, np.int32(n))))
