"""poly / inline
The course's PyTorch-extension chapter in one file: a templated CUDA kernel dispatched over the
floating types (AT_DISPATCH_FLOATING_TYPES) and bound to Python, here built with
torch.utils.cpp_extension.load_inline instead of setup.py. Unlike the course's function, which
allocates its output with torch::empty_like, this one writes into the output it is given, so the
timed launch is the kernel alone. 1024 threads per block, as the course launches it. Expected
limiter: DRAM bandwidth (8 bytes and 3 FLOP per element).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from gpuprof.families import _torch

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

template <typename scalar_t>
__global__ void polynomial_activation_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ output,
                                             size_t size) {
    size_t idx = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (idx < size) {
        scalar_t val = x[idx];
        output[idx] = val * val + val + 1;  // x^2 + x + 1
    }
}

void polynomial_activation_into(torch::Tensor x, torch::Tensor output) {
    TORCH_CHECK(x.is_cuda() && output.is_cuda() && x.sizes() == output.sizes(), "CUDA tensors of one shape");
    const int threads = 1024;
    const int64_t blocks = (x.numel() + threads - 1) / threads;
    if (blocks == 0) return;
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "polynomial_activation_into", ([&] {
        polynomial_activation_kernel<scalar_t><<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
            x.data_ptr<scalar_t>(), output.data_ptr<scalar_t>(), x.numel());
    }));
}
"""
CPP_SOURCE = "void polynomial_activation_into(torch::Tensor x, torch::Tensor output);"


@cache
def extension() -> Any:
    from torch.utils.cpp_extension import load_inline

    return load_inline(name="gpuprof_poly_inline", cpp_sources=CPP_SOURCE, cuda_sources=CUDA_SOURCE,
                       functions=["polynomial_activation_into"], extra_cuda_cflags=["-O3"], verbose=False)


def make_launch(inputs: dict[str, Any], out: Any, size: dict[str, int]):
    """gpuprof's entry point: launch(stream) runs the extension on gpuprof's stream, in place."""
    module = extension()
    x, y = _torch.as_tensor(inputs["x"]), _torch.as_tensor(out)

    def launch(stream: Any) -> None:
        with _torch.on_stream(stream):
            module.polynomial_activation_into(x, y)

    return launch
