"""matmul with a CuPy RawModule holding a C++ template, one instance picked by name expression:

    gpuprof run matmul --variants smem_tiled --add examples/variants/matmul_cupy_module.py

The family's buffers (matmul: inputs["A"] M×K, inputs["B"] K×N, out M×N, row-major float32) reach
make_launch as CuPy arrays; size holds m, n and k. RawModule compiles with NVRTC once, at import."""

from __future__ import annotations

from typing import Any

import cupy as cp
import numpy as np

TILE = 16
INSTANCE = f"matmul_tiled<{TILE}>"

MODULE = cp.RawModule(code=r"""
template <int TILE>
__global__ void matmul_tiled(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int row = blockIdx.y * TILE + threadIdx.y;
    const int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        As[threadIdx.y][threadIdx.x] = (row < M && t + threadIdx.x < K) ? A[row * K + t + threadIdx.x] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (t + threadIdx.y < K && col < N) ? B[(t + threadIdx.y) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
""", options=("-std=c++17",), name_expressions=(INSTANCE,))


def make_launch(inputs: dict[str, Any], out: Any, size: dict[str, int]):
    m, n, k = size["m"], size["n"], size["k"]
    kernel = MODULE.get_function(INSTANCE)
    grid = ((n + TILE - 1) // TILE, (m + TILE - 1) // TILE)
    args = (inputs["A"], inputs["B"], out, np.int32(m), np.int32(n), np.int32(k))

    def launch(stream: Any) -> None:
        kernel(grid, (TILE, TILE), args)  # CuPy's current stream: gpuprof's

    return launch
