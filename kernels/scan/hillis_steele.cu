// scan / hillis_steele
// Inclusive scan of one tile of BLOCK elements per block, one element per thread (Hillis & Steele):
// log2(BLOCK) steps, each adding the value `off` places to the left, double-buffered in shared
// memory so a step reads one buffer and writes the other with one __syncthreads(). O(n log n)
// additions. Multi-block by scan-then-propagate (below). Expected limiter: shared-memory traffic
// and barriers (10 steps per element), plus the propagate pass's extra read and write of y.
#ifndef BLOCK
#define BLOCK 1024
#endif
#define TILE BLOCK
static_assert(BLOCK >= 32 && BLOCK <= 1024 && (BLOCK & (BLOCK - 1)) == 0, "BLOCK must be a power of two in 32..1024");

extern "C" __global__ void __launch_bounds__(BLOCK) scan_hillis_steele(const float* __restrict__ x, float* __restrict__ y, int n) {
    __shared__ float buf[2][BLOCK];
    const int t = threadIdx.x;
    const long long i = (long long)blockIdx.x * TILE + t;
    int in = 0;
    buf[0][t] = i < n ? x[i] : 0.f;
    __syncthreads();
    for (int off = 1; off < BLOCK; off <<= 1) {
        float v = buf[in][t];
        if (t >= off) v += buf[in][t - off];
        buf[in ^ 1][t] = v;  // the other buffer: nobody reads it during this step
        in ^= 1;
        __syncthreads();
    }
    if (i < n) y[i] = buf[in][t];
}

// ---- Multi-block: scan-then-propagate. The helpers' code is shared by every variant that scans
// tile by tile (scan_propagate.cuh); these are this variant's entry points, for its TILE.
#include "scan_propagate.cuh"

extern "C" __global__ void scan_hillis_steele_totals(const float* __restrict__ y, float* __restrict__ totals, int count) {
    scan_propagate_totals<TILE>(y, totals, count);
}

extern "C" __global__ void scan_hillis_steele_add(float* __restrict__ y, const float* __restrict__ offsets, int n) {
    scan_propagate_add<TILE>(y, offsets, n);
}
