"""A CuPy program with an out-of-bounds write: the kernel writes x[n], one past the array.

CuPy's memory pool would hide it from memcheck (the write lands in pooled memory);
`gpuprof sanitize -- python cupy_oob.py` turns the pool off and finds it, at the line marked BUG.
"""

import cupy as cp

SOURCE = r"""
extern "C" __global__ void fill_one_past(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) x[i] = 1.0f;  // BUG: i == n is one past the end
}
"""


def main() -> None:
    n = 1024  # 4096 bytes: a whole allocation, so x[n] is past it whatever the allocator rounds to
    x = cp.zeros(n, dtype=cp.float32)
    kernel = cp.RawKernel(SOURCE, "fill_one_past")
    kernel(((n + 1 + 255) // 256,), (256,), (x, cp.int32(n)))
    cp.cuda.Device().synchronize()
    print("sum", float(x.sum()))


if __name__ == "__main__":
    main()
