"""softmax: row-wise, numerically stable softmax in FP32; from a thread per row to the row in registers."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from gpuprof.families import _torch
from gpuprof.gpu import cupy

RATE = "bytes"
FORMULA = "GB/s = 8·rows·cols bytes (x read once, y written once; multi-pass variants read more) / median time"

EPS32 = 2.0**-24  # FP32 unit roundoff


def flop(size: dict[str, int]) -> float:
    # per element: a max compare, x - max, expf (counted as one), an add into the sum, the scale
    return 5.0 * size["rows"] * size["cols"]


def bytes_moved(size: dict[str, int]) -> float:
    return 2.0 * 4 * size["rows"] * size["cols"]  # x read once, y written once, 4 bytes each


# Variants whose threads (Triton: lanes) each add only ~cols/BLOCK terms before a tree of partial sums.
PARALLEL_SUMS = {"block_row", "warp_shuffle", "vectorized", "sized", "triton", "torch"}


def tolerance(variant: str, size: dict[str, int]) -> float:
    # y_i = e_i / S: the error is mostly the relative error of the row sum S (plus expf's 1-2 ulp).
    # One thread adding a whole row in order (naive, online; and, to be safe, any student variant)
    # drifts systematically: once S is large, terms below half an ulp of S are rounded away. The
    # classic bound is cols * eps; cols * eps / 16 stays 4x above what an H100 measured (7.8e-4 at
    # 10^6 columns, 5e-5 at 50304). Partial sums followed by a tree stay near sqrt(cols) * eps
    # (3e-6 measured at 10^6), so those variants get that bound with a 4x factor, and the 1e-5 floor.
    cols = size["cols"]
    if variant in PARALLEL_SUMS:
        return max(1e-5, 4.0 * math.sqrt(cols) * EPS32)
    return max(1e-5, cols * EPS32 / 16)


def make_inputs(size: dict[str, int], seed: int) -> dict[str, Any]:
    cp = cupy()
    rng = cp.random.default_rng(seed)
    # Around 80: expf(x) alone would overflow FP32 (expf(89) = inf), so a kernel that forgets to
    # subtract the row max writes inf/NaN and fails. x - max is then exact (Sterbenz) and spans 20.
    shape = (size["rows"], size["cols"])
    return {"x": rng.uniform(70.0, 90.0, shape, dtype=cp.float32)}


def make_output(size: dict[str, int]) -> Any:
    cp = cupy()
    return cp.full((size["rows"], size["cols"]), cp.nan, dtype=cp.float32)


def kernel_args(inputs: dict[str, Any], out: Any, size: dict[str, int]) -> tuple:
    return (inputs["x"], out, np.int32(size["rows"]), np.int32(size["cols"]))


def reference(inputs: dict[str, Any], size: dict[str, int]) -> Any:
    cp = cupy()
    x = inputs["x"].astype(cp.float64)
    e = cp.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def vendor_launch(name: str, inputs: dict[str, Any], out: Any, size: dict[str, int]):
    if name != "torch":
        raise KeyError(name)
    t = _torch.torch()
    x, y = _torch.as_tensor(inputs["x"]), _torch.as_tensor(out)
    # torch.softmax has no out=; the aten overload writes into y, so no copy pollutes the timing.
    softmax_out = t.ops.aten._softmax.out

    def launch(stream: Any) -> None:
        with _torch.on_stream(stream):
            softmax_out(x, 1, False, out=y)

    return launch


def plan(variant: Any, functions: dict[str, Any], inputs: dict[str, Any], out: Any, size: dict[str, int], ctx: Any):
    """One launch; for `sized`, of the smallest row-in-registers instantiation that holds a row."""
    fn, grid, block = functions[variant.kernel], ctx.grid, ctx.block
    if variant.name == "sized" and not variant.user:
        fn, block = _sized_kernel(variant, functions, size["cols"])
        grid = (size["rows"],)  # one block per row, whichever instantiation
    args = kernel_args(inputs, out, size)

    def launch(stream: Any) -> None:
        fn(grid, block, args, stream=stream)

    return launch


def _sized_kernel(variant: Any, functions: dict[str, Any], cols: int) -> tuple[Any, tuple[int, int, int]]:
    """softmax_sized_<B>x<V> holds B*V*4 floats; the main kernel (BLOCK, VPT) also takes any longer row."""
    main_block = variant.block_dims()
    choices = [(main_block[0] * variant.defines["VPT"] * 4, main_block, functions[variant.kernel])]
    for name, fn in functions.items():
        m = re.fullmatch(rf"{re.escape(variant.kernel)}_(\d+)x(\d+)", name)
        if m:
            b, v = int(m[1]), int(m[2])
            choices.append((b * v * 4, (b, 1, 1), fn))
    fitting = [c for c in choices if c[0] >= cols]
    _, block, fn = min(fitting, key=lambda c: c[0]) if fitting else choices[0]
    return fn, block
