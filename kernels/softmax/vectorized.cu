// softmax / vectorized
// Changed from warp_shuffle: the row stays on chip. Each thread loads VPT float4s (16-byte loads)
// into registers, so a row of up to BLOCK*VPT*4 floats (51200 by default: GPT-2's 50304 fits) is
// read from DRAM once and written once, the minimum; expf runs once per element. Rows with
// cols % 4 != 0 use scalar slots; longer rows fall back to one online float4 pass plus a write pass.
// Expected limiter: DRAM bandwidth; one 200 KB row fills an SM's registers, so one block per SM.
#ifndef BLOCK
#define BLOCK 512
#endif
#ifndef VPT
#define VPT 25
#endif
#define NWARPS (BLOCK / 32)
#define CAPACITY (BLOCK * VPT * 4)
static_assert(BLOCK % 32 == 0 && BLOCK >= 64 && BLOCK <= 1024, "BLOCK must be whole warps, 64..1024 threads");
static_assert(VPT >= 1 && VPT * 4 <= 128, "VPT float4 slots per thread must fit in registers (at most 128 floats)");

#define LOWEST (-3.402823466e38f)  // -FLT_MAX: "no element"; expf(LOWEST - m) is 0 and LOWEST - LOWEST is 0, not NaN

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

// Block-wide results for every thread, one __syncthreads() each; max and sum use separate scratch
// arrays so the sum cannot overwrite a partial that a slow warp is still reading for the max.
__device__ __forceinline__ float block_max(float v, float* scratch) {
    v = warp_max(v);
    if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
    __syncthreads();
    return warp_max((threadIdx.x & 31) < NWARPS ? scratch[threadIdx.x & 31] : LOWEST);
}

__device__ __forceinline__ float block_sum(float v, float* scratch) {
    v = warp_sum(v);
    if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
    __syncthreads();
    return warp_sum((threadIdx.x & 31) < NWARPS ? scratch[threadIdx.x & 31] : 0.f);
}

__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
    const float mx = fmaxf(m, m2);
    s = s * expf(m - mx) + s2 * expf(m2 - mx);
    m = mx;
}

__device__ __forceinline__ void block_merge(float& m, float& s, float* sm, float* ss) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) merge(m, s, __shfl_xor_sync(0xffffffffu, m, off), __shfl_xor_sync(0xffffffffu, s, off));
    if ((threadIdx.x & 31) == 0) {
        sm[threadIdx.x >> 5] = m;
        ss[threadIdx.x >> 5] = s;
    }
    __syncthreads();
    const bool mine = (threadIdx.x & 31) < NWARPS;
    m = mine ? sm[threadIdx.x & 31] : LOWEST;
    s = mine ? ss[threadIdx.x & 31] : 0.f;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) merge(m, s, __shfl_xor_sync(0xffffffffu, m, off), __shfl_xor_sync(0xffffffffu, s, off));
}

// Online update with four new values: one rescale per float4 (when its max is a new row max).
__device__ __forceinline__ void online_add4(float& m, float& s, float4 q) {
    const float mq = fmaxf(fmaxf(q.x, q.y), fmaxf(q.z, q.w));
    if (mq > m) {
        s *= expf(m - mq);
        m = mq;
    }
    s += expf(q.x - m) + expf(q.y - m) + expf(q.z - m) + expf(q.w - m);
}

extern "C" __global__ void __launch_bounds__(BLOCK, 1) softmax_vectorized(const float* __restrict__ x, float* __restrict__ y,
                                                                          int rows, int cols) {
    __shared__ float red_a[NWARPS], red_b[NWARPS];
    const int t = threadIdx.x;
    const float* xr = x + (long long)blockIdx.x * cols;  // grid = rows: one block per row
    float* yr = y + (long long)blockIdx.x * cols;
    // float4 needs whole float4s per row (cols % 4 == 0) and 16-byte aligned rows.
    const bool vec = (cols & 3) == 0 &&
                     ((reinterpret_cast<unsigned long long>(xr) | reinterpret_cast<unsigned long long>(yr)) & 15) == 0;

    if (cols <= CAPACITY && vec) {
        // Slot k of thread t holds float4 number k*BLOCK + t: each load instruction is coalesced.
        const int c4 = cols >> 2;
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        float4* y4 = reinterpret_cast<float4*>(yr);
        float4 v[VPT];
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int j = k * BLOCK + t;
            v[k] = j < c4 ? x4[j] : make_float4(LOWEST, LOWEST, LOWEST, LOWEST);
        }
        float m = LOWEST;
#pragma unroll
        for (int k = 0; k < VPT; ++k) m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
        m = block_max(m, red_a);
        float s = 0.f;
#pragma unroll
        for (int k = 0; k < VPT; ++k) {  // exponentials kept in place: expf once per element
            v[k] = make_float4(expf(v[k].x - m), expf(v[k].y - m), expf(v[k].z - m), expf(v[k].w - m));
            s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
        }
        const float inv = 1.f / block_sum(s, red_b);
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const int j = k * BLOCK + t;
            if (j < c4) y4[j] = make_float4(v[k].x * inv, v[k].y * inv, v[k].z * inv, v[k].w * inv);
        }
    } else if (cols <= CAPACITY) {
        // Unaligned rows: the same registers as 4*VPT scalar slots, element k*BLOCK + t (coalesced).
        float v[4 * VPT];
#pragma unroll
        for (int k = 0; k < 4 * VPT; ++k) {
            const int j = k * BLOCK + t;
            v[k] = j < cols ? xr[j] : LOWEST;
        }
        float m = LOWEST;
#pragma unroll
        for (int k = 0; k < 4 * VPT; ++k) m = fmaxf(m, v[k]);
        m = block_max(m, red_a);
        float s = 0.f;
#pragma unroll
        for (int k = 0; k < 4 * VPT; ++k) {
            v[k] = expf(v[k] - m);
            s += v[k];
        }
        const float inv = 1.f / block_sum(s, red_b);
#pragma unroll
        for (int k = 0; k < 4 * VPT; ++k) {
            const int j = k * BLOCK + t;
            if (j < cols) yr[j] = v[k] * inv;
        }
    } else {
        // Too long to keep: one online pass for (max, sum), then a second read (from L2 while the
        // rows in flight fit there) to write. 2 reads + 1 write.
        float m = LOWEST, s = 0.f;
        if (vec) {
            const float4* x4 = reinterpret_cast<const float4*>(xr);
#pragma unroll 4
            for (int j = t; j < (cols >> 2); j += BLOCK) online_add4(m, s, x4[j]);
        } else {
            for (int j = t; j < cols; j += BLOCK) {
                const float q = xr[j];
                if (q > m) {
                    s = s * expf(m - q) + 1.f;
                    m = q;
                } else {
                    s += expf(q - m);
                }
            }
        }
        block_merge(m, s, red_a, red_b);
        const float inv = 1.f / s;
        if (vec) {
            const float4* x4 = reinterpret_cast<const float4*>(xr);
            float4* y4 = reinterpret_cast<float4*>(yr);
#pragma unroll 4
            for (int j = t; j < (cols >> 2); j += BLOCK) {
                const float4 q = x4[j];
                y4[j] = make_float4(expf(q.x - m) * inv, expf(q.y - m) * inv, expf(q.z - m) * inv, expf(q.w - m) * inv);
            }
        } else {
            for (int j = t; j < cols; j += BLOCK) yr[j] = expf(xr[j] - m) * inv;
        }
    }
}
