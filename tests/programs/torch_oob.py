"""A PyTorch program with an out-of-bounds write into a tensor: a custom CuPy kernel (the way
people add ops without a C++ extension) writes one element past the tensor's storage.

PyTorch's caching allocator would hide it from memcheck; `gpuprof sanitize -- python torch_oob.py`
runs it with PYTORCH_NO_CUDA_MEMORY_CACHING=1 and finds it, at the line marked BUG.
"""

import cupy as cp
import torch

SOURCE = r"""
extern "C" __global__ void fill_past_tensor(float* t, float value, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n + 1) t[i] = value;  // BUG: writes t[n], past the tensor
}
"""


def main() -> None:
    n = 1024  # 4096 bytes of storage
    t = torch.ones(n, device="cuda", dtype=torch.float32)
    torch.cuda.synchronize()
    kernel = cp.RawKernel(SOURCE, "fill_past_tensor")
    pointer = cp.cuda.MemoryPointer(cp.cuda.UnownedMemory(t.data_ptr(), t.numel() * 4, t), 0)
    kernel(((n + 1 + 255) // 256,), (256,), (pointer, cp.float32(2.0), cp.int32(n)))
    cp.cuda.Device().synchronize()
    print("sum", float(t.sum()))


if __name__ == "__main__":
    main()
