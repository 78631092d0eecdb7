"""gelu / inline
A PyTorch C++/CUDA extension built with torch.utils.cpp_extension.load_inline, the way a learner
wraps a kernel for PyTorch: the kernel is gelu.cu's, launched from C++ on PyTorch's current stream
with 256 threads per block. The first call compiles it (nvcc and ninja, tens of seconds; cached in
PyTorch's extension folder after that). Expected limiter: DRAM bandwidth, as gelu.cu.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from gpuprof.families import _torch

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void gelu_inline_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
        y[i] = 0.5f * v * (1.0f + tanhf(inner));
    }
}

void gelu_into(torch::Tensor x, torch::Tensor y) {
    TORCH_CHECK(x.is_cuda() && y.is_cuda() && x.scalar_type() == torch::kFloat && y.scalar_type() == torch::kFloat,
                "gelu_into takes float32 CUDA tensors");
    int n = static_cast<int>(x.numel());
    int threads = 256;
    int blocks = (n + threads - 1) / threads;
    if (n > 0) {
        gelu_inline_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
            x.data_ptr<float>(), y.data_ptr<float>(), n);
    }
}
"""
CPP_SOURCE = "void gelu_into(torch::Tensor x, torch::Tensor y);"


@cache
def extension() -> Any:
    from torch.utils.cpp_extension import load_inline

    return load_inline(name="gpuprof_gelu_inline", cpp_sources=CPP_SOURCE, cuda_sources=CUDA_SOURCE,
                       functions=["gelu_into"], extra_cuda_cflags=["-O3"], verbose=False)


def make_launch(inputs: dict[str, Any], out: Any, size: dict[str, int]):
    """gpuprof's entry point: launch(stream) runs the extension on gpuprof's stream, in place."""
    module = extension()
    x, y = _torch.as_tensor(inputs["x"]), _torch.as_tensor(out)

    def launch(stream: Any) -> None:
        with _torch.on_stream(stream):
            module.gelu_into(x, y)

    return launch
