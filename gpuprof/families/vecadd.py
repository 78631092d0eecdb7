"""vecadd: c = a + b in FP32; a memory-bound ladder from one thread to float4 over a full grid."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpuprof.families import _torch
from gpuprof.families._random import generator
from gpuprof.gpu import cupy

RATE = "bytes"
FORMULA = "GB/s = 12·n bytes (a and b read, c written, 4 B each) / median time"


def flop(size: dict[str, int]) -> float:
    return float(size["n"])  # one add per element


def bytes_moved(size: dict[str, int]) -> float:
    return 3.0 * 4 * size["n"]  # read a, read b, write c; 4 bytes each


def bytes_read(size: dict[str, int]) -> float:
    return 2.0 * 4 * size["n"]  # a and b: the rest of bytes_moved is c, written


def tolerance(variant: Any, size: dict[str, int]) -> float:
    # One rounding of the sum: at most u/2 of |a + b| (u = 2^-24); against max(|ref|, rms(ref)) it
    # is below u everywhere. 1e-6 (17 u) leaves room for any precision down to FP32 and a wrong
    # element (O(1)) still fails.
    return 1e-6


def make_inputs(size: dict[str, int], seed: int) -> dict[str, Any]:
    cp = cupy()
    rng = generator(seed)
    n = size["n"]
    return {"a": rng.uniform(-1.0, 1.0, n, dtype=cp.float32), "b": rng.uniform(-1.0, 1.0, n, dtype=cp.float32)}


def make_output(size: dict[str, int]) -> Any:
    cp = cupy()
    return cp.full(size["n"], cp.nan, dtype=cp.float32)


def kernel_args(inputs: dict[str, Any], out: Any, size: dict[str, int]) -> tuple:
    return (inputs["a"], inputs["b"], out, np.int32(size["n"]))


def reference(inputs: dict[str, Any], size: dict[str, int]) -> Any:
    cp = cupy()
    return inputs["a"].astype(cp.float64) + inputs["b"].astype(cp.float64)


def vendor_launch(call: str, inputs: dict[str, Any], out: Any, size: dict[str, int]):
    if call != "torch.add":
        raise KeyError(call)
    a, b, c = (_torch.as_tensor(x) for x in (inputs["a"], inputs["b"], out))
    t = _torch.torch()

    def launch(stream: Any) -> None:
        with _torch.on_stream(stream):
            t.add(a, b, out=c)

    return launch
