"""gemm_bf16: C = A·Bᵀ with BF16 inputs and output and FP32 accumulation (A: M×K row-major, B: N×K
row-major, the layout of nn.Linear's weight and cuBLAS's "TN"); the tensor-core ladder from a naive
CUDA-core kernel through WMMA and mma.sync to Hopper's wgmma with TMA, and cuBLAS."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gpuprof.families import _bf16, _keys, _torch
from gpuprof.families._random import generator
from gpuprof.families._rounding import FP32
from gpuprof.families.op_host import draw
from gpuprof.gpu import cupy

RATE = "flop"
FORMULA = "TFLOP/s = 2·M·N·K (a multiply and an add per term) / median time"
# The check draws A and B from one of these per seed (op_host.draw): uniform, normal, and a clipped
# Cauchy whose rare large values a kernel that drops or reorders terms cannot hide.
DISTRIBUTIONS = ("uniform", "normal", "heavy")
# `plan` in the manifest: "one" (default) launches the kernel with pointers; "tma" passes the buffers
# the variant's `options.tma` names as TMA tensor maps (the kernel's __grid_constant__ parameters).
PLANS = ("one", "tma")


def flop(size: dict[str, int]) -> float:
    return 2.0 * size["m"] * size["n"] * size["k"]


def bytes_read(size: dict[str, int]) -> float:
    return 2.0 * (size["m"] * size["k"] + size["n"] * size["k"])  # A and B, 2 bytes an element


def bytes_moved(size: dict[str, int]) -> float:
    return bytes_read(size) + 2.0 * size["m"] * size["n"]  # and C written once


def dot_tolerance(k: int) -> float:
    """Bound on the scaled error of one output, |c - ref| / max(|ref|, rms(ref)), for BF16 inputs.

    The inputs are exactly BF16 and the reference is their float64 product, so no input rounding
    counts. The output is rounded once to BF16: at most u_bf16 = 2^-8 of |ref| (scaled: at most
    2^-8, and outputs reach it: 3.7e-3 is seen at K = 65). The FP32 accumulation of K products adds
    the FP32 family's bound, 8 u32 sqrt(K) (matmul's dot_tolerance); tensor cores add their partial
    sums in FP32 too. Bound: 2 u_bf16 + 16 u32 sqrt(K), 7.9e-3 at K = 8192
    (tests/families/test_tensor_core_tolerances.py replays it in float32 emulation).

    What it catches: one product missing (an off-by-one at a K tile's edge) moves an output by
    |a b| ~ 0.25 against rms sqrt(K)/3 for uniform inputs: 0.09 at the check sizes' K = 65 and 0.023
    at K = 1024, 3x the bound or more; at K = 8192 (8e-3) it is within it, which is why the check
    sizes are where off-by-ones are judged. Accumulating in BF16 instead of FP32 fails at large K.
    """
    return 2 * _bf16.UNIT_ROUNDOFF + 16 * FP32 * math.sqrt(k)


def tolerance(variant: Any, size: dict[str, int]) -> float:
    return dot_tolerance(size["k"])


def make_inputs(size: dict[str, int], seed: int) -> dict[str, Any]:
    cp = cupy()
    rng = generator(seed)
    kind = DISTRIBUTIONS[seed % len(DISTRIBUTIONS)]
    m, n, k = size["m"], size["n"], size["k"]
    return {"A": _bf16.encode(draw(rng, cp, kind, (m, k))), "B": _bf16.encode(draw(rng, cp, kind, (n, k)))}


def make_output(size: dict[str, int]) -> Any:
    return _bf16.poisoned(cupy(), (size["m"], size["n"]))


def output_values(out: Any) -> Any:
    return _bf16.decode(out)


def kernel_args(inputs: dict[str, Any], out: Any, size: dict[str, int]) -> tuple:
    return (inputs["A"], inputs["B"], out, np.int32(size["m"]), np.int32(size["n"]), np.int32(size["k"]))


def reference(inputs: dict[str, Any], size: dict[str, int]) -> Any:
    cp = cupy()
    a, b = (_bf16.decode(inputs[name]).astype(cp.float64) for name in ("A", "B"))
    return a @ b.T


def plan(variant: Any, functions: dict[str, Any], inputs: dict[str, Any], out: Any, size: dict[str, int], ctx: Any):
    """One launch of the main kernel on the manifest's grid; plan "tma" passes tensor maps in place of
    the buffers its options name (tma_box_A = "BM,BK": rows and columns of the box over the defines),
    built once here (the untimed set-up) for the buffers' addresses, which stay fixed for the launch
    closure."""
    from gpuprof.families._tma import tensor_maps  # the driver's library only when a plan needs it

    passed = {**inputs, **tensor_maps(variant, inputs, ("A", "B"))} if _keys.plan(variant, PLANS) == "tma" else inputs
    args = kernel_args(passed, out, size)
    fn, grid, block, smem = functions[variant.kernel], ctx.grid, ctx.block, ctx.shared_mem

    def launch(stream: Any) -> None:
        fn(grid, block, args, stream=stream, shared_mem=smem)

    return launch


def vendor_launch(call: str, inputs: dict[str, Any], out: Any, size: dict[str, int]):
    """call "torch.matmul": cuBLAS's BF16 GEMM through PyTorch, C = A @ B.T into the output (B.T is a
    transposed view: cuBLAS reads B as it is stored, no copy)."""
    if call != "torch.matmul":
        raise KeyError(call)
    t = _torch.torch()
    a, b, c = (_bf16.as_torch(x) for x in (inputs["A"], inputs["B"], out))

    def launch(stream: Any) -> None:
        with _torch.on_stream(stream):
            t.matmul(a, b.t(), out=c)

    return launch
