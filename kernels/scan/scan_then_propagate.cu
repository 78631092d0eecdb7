// scan / scan_then_propagate
// Changed from blelloch_conflict_free: each thread scans ITEMS consecutive elements serially in
// registers (float4 loads and stores), so only one total per thread goes through shared memory
// (a short Hillis-Steele scan of BLOCK values). Tiles are ITEMS times longer (4096 elements), so
// the propagate hierarchy is shallower and barriers per element fall ~30x. The 3-kernel
// scan / scan-of-totals / add scheme still reads and writes y twice (16n bytes, not 8n).
// Expected limiter: DRAM bandwidth of the two passes.
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef ITEMS
#define ITEMS 16
#endif
#define TILE (BLOCK * ITEMS)
static_assert(ITEMS % 4 == 0 && ITEMS >= 4 && ITEMS <= 32, "ITEMS is whole float4s, 4..32 registers");
static_assert(BLOCK >= 32 && BLOCK <= 1024 && (BLOCK & (BLOCK - 1)) == 0, "BLOCK must be a power of two in 32..1024");

extern "C" __global__ void __launch_bounds__(BLOCK) scan_scan_then_propagate(const float* __restrict__ x, float* __restrict__ y,
                                                                             int n) {
    __shared__ float buf[2][BLOCK];
    const int t = threadIdx.x;
    const long long first = (long long)blockIdx.x * TILE + (long long)t * ITEMS;  // this thread's elements
    float v[ITEMS];
#pragma unroll
    for (int q = 0; q < ITEMS; q += 4) {
        const long long i = first + q;
        if (i + 4 <= n) {
            const float4 f = *reinterpret_cast<const float4*>(x + i);
            v[q] = f.x;
            v[q + 1] = f.y;
            v[q + 2] = f.z;
            v[q + 3] = f.w;
        } else {
#pragma unroll
            for (int c = 0; c < 4; ++c) v[q + c] = i + c < n ? x[i + c] : 0.f;
        }
    }
#pragma unroll
    for (int k = 1; k < ITEMS; ++k) v[k] += v[k - 1];  // serial inclusive scan of the thread's run

    int in = 0;  // Hillis-Steele over the BLOCK thread totals
    buf[0][t] = v[ITEMS - 1];
    __syncthreads();
    for (int off = 1; off < BLOCK; off <<= 1) {
        float s = buf[in][t];
        if (t >= off) s += buf[in][t - off];
        buf[in ^ 1][t] = s;
        in ^= 1;
        __syncthreads();
    }
    const float excl = t > 0 ? buf[in][t - 1] : 0.f;  // total of the threads before this one

#pragma unroll
    for (int q = 0; q < ITEMS; q += 4) {
        const long long i = first + q;
        if (i + 4 <= n) {
            *reinterpret_cast<float4*>(y + i) = make_float4(v[q] + excl, v[q + 1] + excl, v[q + 2] + excl, v[q + 3] + excl);
        } else {
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                if (i + c < n) y[i + c] = v[q + c] + excl;
            }
        }
    }
}

// ---- Multi-block: scan-then-propagate. The helpers' code is shared by every variant that scans
// tile by tile (scan_propagate.cuh); these are this variant's entry points, for its TILE.
#include "scan_propagate.cuh"

extern "C" __global__ void scan_scan_then_propagate_totals(const float* __restrict__ y, float* __restrict__ totals, int count) {
    scan_propagate_totals<TILE>(y, totals, count);
}

extern "C" __global__ void scan_scan_then_propagate_add(float* __restrict__ y, const float* __restrict__ offsets, int n) {
    scan_propagate_add<TILE>(y, offsets, n);
}
