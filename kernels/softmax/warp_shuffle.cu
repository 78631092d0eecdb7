// softmax / warp_shuffle
// Changed from block_row: the reductions run in registers with __shfl_xor_sync (5 steps per warp),
// and only one value per warp goes through shared memory: one __syncthreads() per reduction
// instead of log2(BLOCK). The max and the sum are also fused into one online pass (as in online),
// merging (max, sum) pairs, so the row is read twice instead of three times.
// Expected limiter: DRAM/L2 traffic of 2 reads + 1 write.
#ifndef BLOCK
#define BLOCK 256
#endif
#define NWARPS (BLOCK / 32)
static_assert(BLOCK % 32 == 0 && BLOCK >= 32 && BLOCK <= 1024, "BLOCK must be whole warps, at most 1024 threads");

// (m, s) <- (m, s) merged with (m2, s2): sums rescaled to the larger max. -FLT_MAX (not -inf) marks
// "empty", so merging two empty pairs gives expf(0) * 0 = 0, never expf(-inf + inf) = NaN.
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
    const float mx = fmaxf(m, m2);
    s = s * expf(m - mx) + s2 * expf(m2 - mx);
    m = mx;
}

__device__ __forceinline__ void warp_merge(float& m, float& s) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        merge(m, s, __shfl_xor_sync(0xffffffffu, m, off), __shfl_xor_sync(0xffffffffu, s, off));
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK) softmax_warp_shuffle(const float* __restrict__ x, float* __restrict__ y,
                                                                         int rows, int cols) {
    __shared__ float red_m[NWARPS], red_s[NWARPS];
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    const float* xr = x + (long long)blockIdx.x * cols;  // grid = rows: one block per row
    float* yr = y + (long long)blockIdx.x * cols;

    float m = -3.402823466e38f, s = 0.f;
    for (int j = t; j < cols; j += BLOCK) {
        const float v = xr[j];
        if (v > m) {
            s = s * expf(m - v) + 1.f;
            m = v;
        } else {
            s += expf(v - m);
        }
    }
    warp_merge(m, s);
    if (lane == 0) {
        red_m[warp] = m;
        red_s[warp] = s;
    }
    __syncthreads();
    // Every warp merges the NWARPS partials itself: no second broadcast through shared memory.
    m = lane < NWARPS ? red_m[lane] : -3.402823466e38f;
    s = lane < NWARPS ? red_s[lane] : 0.f;
    warp_merge(m, s);
    const float inv = 1.f / s;

    for (int j = t; j < cols; j += BLOCK) yr[j] = expf(xr[j] - m) * inv;
}
