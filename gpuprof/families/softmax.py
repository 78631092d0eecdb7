"""softmax: row-wise, numerically stable softmax in FP32; from a thread per row to the row in registers."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from gpuprof.errors import InputError
from gpuprof.families import _keys, _torch
from gpuprof.families._random import generator
from gpuprof.families._rounding import FP32, unit_roundoff
from gpuprof.gpu import cupy

# Structured inputs the check adds (families/input_classes.py): spikes (a max or a sum taken from a
# sample misses them; exp of a missed spike overflows), alternating +a/-a rows (a strided sample sees
# one sign), constant rows (y = 1/cols). Each judged by the family's error model: the classes change
# the values, not the order of the sum; spikes per row (their zeros underflow, far below the row).
INPUT_CLASSES = ("spikes", "alternating", "constants")
RATE = "bytes"
FORMULA = "GB/s = 8·rows·cols bytes (x read once, y written once; multi-pass variants read more) / median time"

EPS32 = 2.0**-24  # FP32 unit roundoff
# `plan` in the manifest: "one" (default) is one launch on the manifest's grid; "by_row_length"
# picks, per row length, the smallest row-in-registers instantiation among the helpers (role "<threads>x<vpt>").
PLANS = ("one", "by_row_length")
# `error_model`: how the variant orders a row's sum (see tolerance()). "serial" (default, also for
# students): one thread adds the whole row; "tree": per-thread partial sums, then a tree.
ERROR_MODELS = ("serial", "tree")
ERROR_SCALE = "element"  # y_i against itself: every y_i carries the row sum's relative error


def flop(size: dict[str, int]) -> float:
    # per element: a max compare, x - max, expf (counted as one), an add into the sum, the scale
    return 5.0 * size["rows"] * size["cols"]


def bytes_moved(size: dict[str, int]) -> float:
    return 2.0 * 4 * size["rows"] * size["cols"]  # x read once, y written once, 4 bytes each


def bytes_read(size: dict[str, int]) -> float:
    return 4.0 * size["rows"] * size["cols"]  # x, every element at least once: the byte rule's floor


def tolerance(variant: Any, size: dict[str, int]) -> float:
    """Per-row model, per-element check: y_i = e_i / S, so each y_i's relative error is the row sum
    S's relative error plus expf's and the division's few ulps (__expf: up to ~25 ulp at x - max =
    -20, 1.5e-6; the floor of 1e-5 covers it).

    "serial" (naive, online, and any student variant unless it declares "tree"): one thread adds
    the whole row in order, and the online form rescales its running sum at every new maximum; the
    error drifts with cols (terms below half an ulp of S are rounded away): the classic bound
    cols*u; cols*u/16 stays 4x above what an H100 measured (7.8e-4 at 10^6 columns, 5e-5 at 50304).
    "tree": per-thread partial sums of ~cols/BLOCK terms, then a tree: a random walk near
    sqrt(cols)*u (3e-6 measured at 10^6), bounded with a 4x factor.

    A wrong or dropped element of a row changes its own y by O(1) and the others by ~1/cols of S,
    far above either bound at every check size.
    """
    u = max(unit_roundoff(variant.precision), FP32)
    cols = size["cols"]
    if _keys.error_model(variant, ERROR_MODELS) == "tree":
        return max(1e-5, 4.0 * math.sqrt(cols) * u)
    return max(1e-5, cols * u / 16)


def class_tolerance(variant: Any, size: dict[str, int], kind: str, bound: float) -> float:
    """On alternating rows (+a, -a, ...: two addends, 1 and e^-2a, repeated) a serial sum's roundings
    all lean one way instead of drifting at random, so its error grows as cols*u/12 (float32
    emulation and the H200 agree: 2.06e-5 at 4097 columns, 2.08e-4 at 50304, 5.16e-3 at 10^6; the
    random-input model's cols*u/16 flagged the honest naive and online rungs). The bound there is
    cols*u/4; a statistic taken from part of the row is off by a whole factor, far above it."""
    if kind == "alternating" and _keys.error_model(variant, ERROR_MODELS) == "serial":
        u = max(unit_roundoff(variant.precision), FP32)
        return max(bound, size["cols"] * u / 4)
    return bound


def make_inputs(size: dict[str, int], seed: int) -> dict[str, Any]:
    cp = cupy()
    rng = generator(seed)
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


def vendor_launch(call: str, inputs: dict[str, Any], out: Any, size: dict[str, int]):
    if call != "torch.softmax":
        raise KeyError(call)
    t = _torch.torch()
    x, y = _torch.as_tensor(inputs["x"]), _torch.as_tensor(out)
    # torch.softmax has no out=; the aten overload writes into y, so no copy pollutes the timing.
    softmax_out = t.ops.aten._softmax.out

    def launch(stream: Any) -> None:
        with _torch.on_stream(stream):
            softmax_out(x, 1, False, out=y)

    return launch


def plan(variant: Any, functions: dict[str, Any], inputs: dict[str, Any], out: Any, size: dict[str, int], ctx: Any):
    """One launch; for plan "by_row_length", of the smallest row-in-registers instantiation that holds a row."""
    fn, grid, block = functions[variant.kernel], ctx.grid, ctx.block
    if _keys.plan(variant, PLANS) == "by_row_length":
        fn, block = _sized_kernel(variant, functions, size["cols"])
        grid = (size["rows"],)  # one block per row, whichever instantiation
    args = kernel_args(inputs, out, size)

    def launch(stream: Any) -> None:
        fn(grid, block, args, stream=stream)

    return launch


def _sized_kernel(variant: Any, functions: dict[str, Any], cols: int) -> tuple[Any, tuple[int, int, int]]:
    """Helper role "<B>x<V>" holds B*V*4 floats (B threads, V float4 each); the main kernel (BLOCK,
    VPT) also takes any longer row."""
    main_block = variant.block_dims()
    choices = [(main_block[0] * variant.defines["VPT"] * 4, main_block, functions[variant.kernel])]
    for role in variant.helpers:
        m = re.fullmatch(r"(\d+)x(\d+)", role)
        if m is None:
            raise InputError(
                f"variant {variant.name!r}: helper role {role!r} of plan 'by_row_length' must be <threads>x<vpt>")
        b, v = int(m[1]), int(m[2])
        choices.append((b * v * 4, (b, 1, 1), _keys.helper(variant, functions, role)))
    fitting = [c for c in choices if c[0] >= cols]
    _, block, fn = min(fitting, key=lambda c: c[0]) if fitting else choices[0]
    return fn, block
