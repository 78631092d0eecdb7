// softmax / sized
// Changed from vectorized: the block size and the float4 slots per thread are sized to the row.
// plan() picks the smallest of several instantiations of the same row-in-registers code
// (softmax_sized_<BLOCK>x<VPT>) that holds the row, so short rows do not pay for 100 idle
// registers per thread: at 4096 columns, 256-thread blocks with 4 slots put ~6 rows on each SM
// instead of one. Long rows use the main kernel (= vectorized). Expected limiter: DRAM bandwidth.
#ifndef BLOCK
#define BLOCK 512
#endif
#ifndef VPT
#define VPT 25
#endif

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
template <int NWARPS>
__device__ __forceinline__ float block_max(float v, float* scratch) {
    v = warp_max(v);
    if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
    __syncthreads();
    return warp_max((threadIdx.x & 31) < NWARPS ? scratch[threadIdx.x & 31] : LOWEST);
}

template <int NWARPS>
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

template <int NWARPS>
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

// One row per block of B threads, held in V float4 registers per thread when it fits.
template <int B, int V>
__device__ __forceinline__ void softmax_row(const float* __restrict__ x, float* __restrict__ y, int cols) {
    constexpr int NWARPS = B / 32;
    static_assert(B % 32 == 0 && B >= 64 && B <= 1024, "B must be whole warps, 64..1024 threads");
    static_assert(V >= 1 && V * 4 <= 128, "V float4 slots per thread must fit in registers (at most 128 floats)");
    __shared__ float red_a[NWARPS], red_b[NWARPS];
    const int t = threadIdx.x;
    const float* xr = x + (long long)blockIdx.x * cols;  // grid = rows: one block per row
    float* yr = y + (long long)blockIdx.x * cols;
    // float4 needs whole float4s per row (cols % 4 == 0) and 16-byte aligned rows.
    const bool vec = (cols & 3) == 0 &&
                     ((reinterpret_cast<unsigned long long>(xr) | reinterpret_cast<unsigned long long>(yr)) & 15) == 0;

    if (cols <= B * V * 4 && vec) {
        // Slot k of thread t holds float4 number k*B + t: each load instruction is coalesced.
        const int c4 = cols >> 2;
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        float4* y4 = reinterpret_cast<float4*>(yr);
        float4 v[V];
#pragma unroll
        for (int k = 0; k < V; ++k) {
            const int j = k * B + t;
            v[k] = j < c4 ? x4[j] : make_float4(LOWEST, LOWEST, LOWEST, LOWEST);
        }
        float m = LOWEST;
#pragma unroll
        for (int k = 0; k < V; ++k) m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
        m = block_max<NWARPS>(m, red_a);
        float s = 0.f;
#pragma unroll
        for (int k = 0; k < V; ++k) {  // exponentials kept in place: expf once per element
            v[k] = make_float4(expf(v[k].x - m), expf(v[k].y - m), expf(v[k].z - m), expf(v[k].w - m));
            s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
        }
        const float inv = 1.f / block_sum<NWARPS>(s, red_b);
#pragma unroll
        for (int k = 0; k < V; ++k) {
            const int j = k * B + t;
            if (j < c4) y4[j] = make_float4(v[k].x * inv, v[k].y * inv, v[k].z * inv, v[k].w * inv);
        }
    } else if (cols <= B * V * 4) {
        // Unaligned rows: the same registers as 4*V scalar slots, element k*B + t (coalesced).
        float v[4 * V];
#pragma unroll
        for (int k = 0; k < 4 * V; ++k) {
            const int j = k * B + t;
            v[k] = j < cols ? xr[j] : LOWEST;
        }
        float m = LOWEST;
#pragma unroll
        for (int k = 0; k < 4 * V; ++k) m = fmaxf(m, v[k]);
        m = block_max<NWARPS>(m, red_a);
        float s = 0.f;
#pragma unroll
        for (int k = 0; k < 4 * V; ++k) {
            v[k] = expf(v[k] - m);
            s += v[k];
        }
        const float inv = 1.f / block_sum<NWARPS>(s, red_b);
#pragma unroll
        for (int k = 0; k < 4 * V; ++k) {
            const int j = k * B + t;
            if (j < cols) yr[j] = v[k] * inv;
        }
    } else {
        // Too long to keep: one online pass for (max, sum), then a second read (from L2 while the
        // rows in flight fit there) to write. 2 reads + 1 write.
        float m = LOWEST, s = 0.f;
        if (vec) {
            const float4* x4 = reinterpret_cast<const float4*>(xr);
#pragma unroll 4
            for (int j = t; j < (cols >> 2); j += B) online_add4(m, s, x4[j]);
        } else {
            for (int j = t; j < cols; j += B) {
                const float q = xr[j];
                if (q > m) {
                    s = s * expf(m - q) + 1.f;
                    m = q;
                } else {
                    s += expf(q - m);
                }
            }
        }
        block_merge<NWARPS>(m, s, red_a, red_b);
        const float inv = 1.f / s;
        if (vec) {
            const float4* x4 = reinterpret_cast<const float4*>(xr);
            float4* y4 = reinterpret_cast<float4*>(yr);
#pragma unroll 4
            for (int j = t; j < (cols >> 2); j += B) {
                const float4 q = x4[j];
                y4[j] = make_float4(expf(q.x - m) * inv, expf(q.y - m) * inv, expf(q.z - m) * inv, expf(q.w - m) * inv);
            }
        } else {
            for (int j = t; j < cols; j += B) yr[j] = expf(xr[j] - m) * inv;
        }
    }
}

// The main entry (the manifest's block): long rows, as vectorized, with the streaming fallback.
extern "C" __global__ void __launch_bounds__(BLOCK, 1) softmax_sized(const float* __restrict__ x, float* __restrict__ y,
                                                                     int rows, int cols) {
    softmax_row<BLOCK, VPT>(x, y, cols);
}

// Shorter rows: the manifest lists each instantiation under the helper role <BLOCK>x<VPT>, which
// plan() reads (capacity BLOCK*VPT*4 floats).
#define SIZED(B, V, MINB)                                                                                       \
    extern "C" __global__ void __launch_bounds__(B, MINB) softmax_sized_##B##x##V(const float* __restrict__ x,   \
                                                                                 float* __restrict__ y, int rows, int cols) { \
        softmax_row<B, V>(x, y, cols);                                                                           \
    }
SIZED(128, 2, 16)   // up to 1024 columns, 16 blocks (2048 threads) per SM
SIZED(256, 2, 8)    // up to 2048
SIZED(256, 4, 6)    // up to 4096
SIZED(512, 4, 3)    // up to 8192
SIZED(512, 8, 2)    // up to 16384
SIZED(1024, 8, 1)   // up to 32768
