// softmax / early_exit — deliberately wrong (issue 39): the row sum walks the row a block-wide tile at
// a time and stops at the first tile that added less than an ulp of the sum so far ("converged").
// On rows of random values no tile is that small, so it sums every tile and is right; on spike
// inputs the tiles of zeros after the first spike add ~1e-40 and the sum stops there, missing a
// later, larger spike.
#include "softmax_block.cuh"

#ifndef BLOCK
#define BLOCK 256
#endif

extern "C" __global__ void __launch_bounds__(BLOCK) softmax_early_exit(const float* __restrict__ x, float* __restrict__ y,
                                                                       int rows, int cols)
{
    __shared__ float red[BLOCK];
    const float* xr = x + (long long)blockIdx.x * cols;  // one block per row
    float* yr = y + (long long)blockIdx.x * cols;
    float m = -3.402823466e38f;
    for (int j = threadIdx.x; j < cols; j += BLOCK)
        m = fmaxf(m, xr[j]);
    m = block_max<BLOCK>(m, red);
    float total = 0.0f;  // the same in every thread: each tile's sum is block-wide
    for (int base = 0; base < cols; base += BLOCK) {
        const int j = base + threadIdx.x;
        const float tile = block_sum<BLOCK>(j < cols ? expf(xr[j] - m) : 0.0f, red);
        total += tile;
        if (total > 0.0f && tile <= total * 5.9604645e-8f)  // 2^-24: the sum has "converged"
            break;
    }
    const float inv = 1.0f / total;
    for (int j = threadIdx.x; j < cols; j += BLOCK)
        yr[j] = expf(xr[j] - m) * inv;
}
