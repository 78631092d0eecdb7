// softmax / sampled_max — deliberately wrong (issue 39): the row max is taken from one 32-float line in
// every SAMPLE, the rest of the row never read for it. Softmax is the same whatever constant is
// subtracted, so on rows of random values the sampled max (a little below the true one) gives the
// right answer and saves most of a pass over the row. A row whose large values all sit outside the
// sample (spike inputs) computes expf(x - max) of ~100: inf, and the row is NaN.
#include "softmax_block.cuh"

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef SAMPLE
#define SAMPLE 8
#endif

extern "C" __global__ void __launch_bounds__(BLOCK) softmax_sampled_max(const float* __restrict__ x, float* __restrict__ y,
                                                                        int rows, int cols)
{
    __shared__ float red[BLOCK];
    const float* xr = x + (long long)blockIdx.x * cols;  // one block per row
    float* yr = y + (long long)blockIdx.x * cols;
    float m = -3.402823466e38f;
    for (int j = threadIdx.x; j < cols; j += BLOCK)
        if ((j / 32) % SAMPLE == 0)  // one line in SAMPLE: the others never read for the max
            m = fmaxf(m, xr[j]);
    m = block_max<BLOCK>(m, red);
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += BLOCK)
        s += expf(xr[j] - m);
    const float inv = 1.0f / block_sum<BLOCK>(s, red);
    for (int j = threadIdx.x; j < cols; j += BLOCK)
        yr[j] = expf(xr[j] - m) * inv;
}
