"""matmul: C = A·B in FP32, row-major; the SGEMM ladder from naive to warp tiling, and cuBLAS."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpuprof.families import _torch
from gpuprof.gpu import cupy

RATE = "flop"
FORMULA = "TFLOP/s = 2·M·N·K (a multiply and an add per term) / median time"


def flop(size: dict[str, int]) -> float:
    return 2.0 * size["m"] * size["n"] * size["k"]  # one multiply and one add per (i, j, p)


def bytes_moved(size: dict[str, int]) -> float:
    m, n, k = size["m"], size["n"], size["k"]
    return 4.0 * (m * k + k * n + m * n)  # each of A, B, C crosses DRAM once at best


def tolerance(variant: str, size: dict[str, int]) -> float:
    # FP32 accumulation lands near 1e-6 of the output scale; TF32 (10-bit mantissa) near 1e-3.
    return 1e-2 if variant.endswith("tf32") else 1e-4


def make_inputs(size: dict[str, int], seed: int) -> dict[str, Any]:
    cp = cupy()
    rng = cp.random.default_rng(seed)
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


def vendor_launch(name: str, inputs: dict[str, Any], out: Any, size: dict[str, int]):
    if name not in ("cublas", "cublas_tf32"):
        raise KeyError(name)
    t = _torch.torch()
    a, b, c = (_torch.as_tensor(x) for x in (inputs["A"], inputs["B"], out))
    tf32 = name == "cublas_tf32"

    def launch(stream: Any) -> None:
        _torch.set_tf32(tf32)
        with _torch.on_stream(stream):
            t.matmul(a, b, out=c)

    return launch
