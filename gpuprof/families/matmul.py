"""matmul: C = A·B in FP32, row-major; the SGEMM ladder from naive to warp tiling, and cuBLAS."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gpuprof.families import _torch
from gpuprof.families._random import generator
from gpuprof.families._rounding import FP32, unit_roundoff
from gpuprof.gpu import cupy

RATE = "flop"
FORMULA = "TFLOP/s = 2·M·N·K (a multiply and an add per term) / median time"


def flop(size: dict[str, int]) -> float:
    return 2.0 * size["m"] * size["n"] * size["k"]  # one multiply and one add per (i, j, p)


def bytes_moved(size: dict[str, int]) -> float:
    m, n, k = size["m"], size["n"], size["k"]
    return 4.0 * (m * k + k * n + m * n)  # each of A, B, C crosses DRAM once at best


def dot_tolerance(k: int, precision: str) -> float:
    """Bound on a K-term dot product of inputs uniform in [-1, 1], relative to max(|ref|, rms(ref)).

    Accumulation: each of the K FP32 adds rounds the running sum (|S_k| ~ sqrt(k)/3) by up to u,
    independently, so the error is a random walk of ~sqrt(K/54)*K^0.5 u against rms ~ sqrt(K)/3:
    ~0.4 u*sqrt(K) on average; the worst of 16 M outputs is ~2.4 u*sqrt(K) (simulated in
    tests/families/test_tolerances.py, unfused multiply-add: 1.9 u*sqrt(K) over 16 k outputs). Bound: 8 u*sqrt(K).
    Inputs rounded to the variant's precision first (TF32: 10-bit mantissa, u_p = 2^-11): each
    product is off by ~2 u_p, a random walk of K terms against rms ~sqrt(K)/3, about 0.8 u_p on
    average, 2.4..3 u_p at the worst output. Bound: 10 u_p. Plus the final FP32 store, 4 u.

    What it catches: a missing or extra product (an off-by-one at a tile edge) is ~|a*b| ~ 0.25
    against rms sqrt(K)/3: 1.2e-2 at K = 4096, 400x the FP32 bound (3.1e-5) and 2x the TF32 one.
    """
    u_in = max(unit_roundoff(precision), FP32)
    return 8 * FP32 * math.sqrt(k) + 10 * u_in + 4 * FP32


def tolerance(variant: Any, size: dict[str, int]) -> float:
    return dot_tolerance(size["k"], variant.precision)


def make_inputs(size: dict[str, int], seed: int) -> dict[str, Any]:
    cp = cupy()
    rng = generator(seed)
    m, n, k = size["m"], size["n"], size["k"]
    return {"A": rng.uniform(-1.0, 1.0, (m, k), dtype=cp.float32),
            "B": rng.uniform(-1.0, 1.0, (k, n), dtype=cp.float32)}


def make_output(size: dict[str, int]) -> Any:
    cp = cupy()
    return cp.full((size["m"], size["n"]), cp.nan, dtype=cp.float32)


def kernel_args(inputs: dict[str, Any], out: Any, size: dict[str, int]) -> tuple:
    return (inputs["A"], inputs["B"], out, np.int32(size["m"]), np.int32(size["n"]), np.int32(size["k"]))


def reference(inputs: dict[str, Any], size: dict[str, int]) -> Any:
    cp = cupy()
    return cp.matmul(inputs["A"].astype(cp.float64), inputs["B"].astype(cp.float64))


# Scalars a kernel in BLAS's shape takes (C = alpha*A*B + beta*C, the tutorial's signature), with
# the values that leave C = A*B; `args` fills them in this order (variants/arguments.py).
SCALARS = {"alpha": 1.0, "beta": 0.0}


def epilogue(ref: Any, start: Any, scalars: dict[str, float]) -> Any:
    """alpha*A*B + beta*C0 from the float64 A*B; C0 (the output's starting values) only when the
    kernel reads its output. beta != 0 without them cannot be checked (arguments refuse it)."""
    alpha, beta = scalars.get("alpha", 1.0), scalars.get("beta", 0.0)
    out = ref if alpha == 1.0 else alpha * ref
    if start is not None and beta != 0.0:
        out = out + beta * start
    return out


# vendor_launch calls (the manifest's `call`): torch.matmul with TF32 tensor cores off or on, and
# CUTLASS's SIMT SGEMM built by gpuprof (families/_cutlass.py).
_TF32_CALLS = {"torch.matmul": False, "torch.matmul.tf32": True}
CUTLASS_CALL = "cutlass.gemm.device.Gemm.simt"


def vendor_launch(call: str, inputs: dict[str, Any], out: Any, size: dict[str, int]):
    if call == CUTLASS_CALL:
        from gpuprof.families._cutlass import cutlass_sgemm

        return cutlass_sgemm(inputs["A"], inputs["B"], out, size["m"], size["n"], size["k"])
    if call not in _TF32_CALLS:
        raise KeyError(call)
    t = _torch.torch()
    a, b, c = (_torch.as_tensor(x) for x in (inputs["A"], inputs["B"], out))
    tf32 = _TF32_CALLS[call]

    def launch(stream: Any) -> None:
        _torch.set_tf32(tf32)
        with _torch.on_stream(stream):
            t.matmul(a, b, out=c)

    return launch
