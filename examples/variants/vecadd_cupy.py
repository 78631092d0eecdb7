"""vecadd with a CuPy RawKernel, as a gpuprof variant:

    gpuprof run vecadd --variants grid --add examples/variants/vecadd_cupy.py

gpuprof calls make_launch(inputs, out, size) once per size with the family's CuPy buffers (vecadd:
inputs["a"], inputs["b"], out, all float32 of size["n"]) and times the launch(stream) it returns.
A RawKernel call runs on CuPy's current stream, which gpuprof sets to the timed stream around
every launch, so nothing here names a stream."""

from __future__ import annotations

from typing import Any

import cupy as cp
import numpy as np

THREADS = 256

KERNEL = cp.RawKernel(r"""
extern "C" __global__ void vecadd_cupy(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
""", "vecadd_cupy")


def make_launch(inputs: dict[str, Any], out: Any, size: dict[str, int]):
    n = size["n"]
    grid = ((n + THREADS - 1) // THREADS,)
    args = (inputs["a"], inputs["b"], out, np.int32(n))

    def launch(stream: Any) -> None:
        KERNEL(grid, (THREADS,), args)  # CuPy's current stream: gpuprof's

    return launch
