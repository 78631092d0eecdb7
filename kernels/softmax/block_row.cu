// softmax / block_row
// Changed from online: a block of BLOCK threads per row, so a warp reads 32 consecutive floats
// (coalesced) and every SM has rows to work on. The max and the sum are each a shared-memory
// tree reduction (log2(BLOCK) steps, a __syncthreads() per step); three passes over the row as in
// naive (the re-reads hit L2 only while the rows in flight fit in it). Expected limiter: DRAM
// traffic of up to 3 reads + 1 write.
#ifndef BLOCK
#define BLOCK 256
#endif
static_assert(BLOCK >= 32 && BLOCK <= 1024 && (BLOCK & (BLOCK - 1)) == 0,
              "the tree reduction halves BLOCK each step: BLOCK must be a power of two in 32..1024");

extern "C" __global__ void __launch_bounds__(BLOCK) softmax_block_row(const float* __restrict__ x, float* __restrict__ y,
                                                                      int rows, int cols) {
    __shared__ float red[BLOCK];
    const int t = threadIdx.x;
    const float* xr = x + (long long)blockIdx.x * cols;  // grid = rows: one block per row
    float* yr = y + (long long)blockIdx.x * cols;

    float m = -3.402823466e38f;  // -FLT_MAX, the identity of max for finite inputs
    for (int j = t; j < cols; j += BLOCK) m = fmaxf(m, xr[j]);
    red[t] = m;
    __syncthreads();
    for (int half = BLOCK / 2; half > 0; half >>= 1) {
        if (t < half) red[t] = fmaxf(red[t], red[t + half]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();  // every thread has read red[0] before the sum reuses red

    float s = 0.f;
    for (int j = t; j < cols; j += BLOCK) s += expf(xr[j] - m);
    red[t] = s;
    __syncthreads();
    for (int half = BLOCK / 2; half > 0; half >>= 1) {
        if (t < half) red[t] += red[t + half];
        __syncthreads();
    }
    const float inv = 1.f / red[0];

    for (int j = t; j < cols; j += BLOCK) yr[j] = expf(xr[j] - m) * inv;
}
