"""A CuPy program with a shared-memory race: thread 0 sums the block's values before the other
threads are known to have written them (the __syncthreads() is missing).

`gpuprof sanitize --tool racecheck -- python cupy_race.py` reports the race at the lines marked
BUG (the write, and the read that races with it).
"""

import cupy as cp

SOURCE = r"""
extern "C" __global__ void block_sums_racy(const float* x, float* sums) {
    __shared__ float tile[256];
    int t = threadIdx.x;
    tile[t] = x[blockIdx.x * 256 + t];  // BUG (write): no __syncthreads() after it
    if (t == 0) {
        float s = 0.0f;
        for (int k = 0; k < 256; ++k) s += tile[k];  // BUG (read): races with the write
        sums[blockIdx.x] = s;
    }
}
"""


def main() -> None:
    blocks = 4
    x = cp.ones(blocks * 256, dtype=cp.float32)
    sums = cp.zeros(blocks, dtype=cp.float32)
    cp.RawKernel(SOURCE, "block_sums_racy")((blocks,), (256,), (x, sums))
    cp.cuda.Device().synchronize()
    print("sums", sums.get())


if __name__ == "__main__":
    main()
