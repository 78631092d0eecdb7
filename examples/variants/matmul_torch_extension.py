"""matmul as a PyTorch C++/CUDA extension built with torch.utils.cpp_extension.load_inline (the
course's "PyTorch extensions" chapter), as a gpuprof variant:

    gpuprof run matmul --variants naive --add examples/variants/matmul_torch_extension.py

The extension launches on at::cuda::getCurrentCUDAStream(); gpuprof makes its timed stream torch's
current stream around every launch (an ExternalStream on the same handle), so the extension's
kernel is the one timed. The family's CuPy buffers become torch tensors without a copy (DLPack).
Building needs nvcc and ninja, and a CUDA toolkit whose major version matches torch's
(torch.version.cuda); the first import compiles (a minute), later ones load the cached build."""

from __future__ import annotations

from typing import Any

import torch
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__global__ void matmul_naive_kernel(const float* A, const float* B, float* C, int M, int N, int K) {
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}

void matmul_naive(torch::Tensor A, torch::Tensor B, torch::Tensor C) {
    const int M = A.size(0), K = A.size(1), N = B.size(1);
    const dim3 block(16, 16);
    const dim3 grid((N + block.x - 1) / block.x, (M + block.y - 1) / block.y);
    matmul_naive_kernel<<<grid, block, 0, at::cuda::getCurrentCUDAStream()>>>(
        A.data_ptr<float>(), B.data_ptr<float>(), C.data_ptr<float>(), M, N, K);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
}
"""
CPP_SOURCE = "void matmul_naive(torch::Tensor A, torch::Tensor B, torch::Tensor C);"

extension = load_inline(name="gpuprof_example_matmul_naive", cpp_sources=CPP_SOURCE, cuda_sources=CUDA_SOURCE,
                        functions=["matmul_naive"], extra_cuda_cflags=["-O3", "-lineinfo"])


def make_launch(inputs: dict[str, Any], out: Any, size: dict[str, int]):
    a, b, c = (torch.from_dlpack(x) for x in (inputs["A"], inputs["B"], out))

    def launch(stream: Any) -> None:
        extension.matmul_naive(a, b, c)  # torch's current stream: gpuprof's

    return launch
