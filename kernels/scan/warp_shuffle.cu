// scan / warp_shuffle
// Changed from scan_then_propagate: warp-level scans in registers with __shfl_up_sync (5 steps,
// no shared memory, no barrier) composed into a block scan with one small shared-memory exchange
// of NWARPS warp totals. Warp-striped layout: in round r, lane l holds float4 number r*32 + l of its
// warp's run, so every load and store instruction is 512 contiguous bytes. Multi-block by
// scan-then-propagate, as before. Expected limiter: DRAM bandwidth of the two passes (16n bytes).
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef ITEMS
#define ITEMS 16
#endif
#define TILE (BLOCK * ITEMS)
#define NWARPS (BLOCK / 32)
#define ROUNDS (ITEMS / 4)
static_assert(ITEMS % 4 == 0 && ITEMS >= 4 && ITEMS <= 32, "ITEMS is whole float4s per thread, 4..32");
static_assert(BLOCK % 32 == 0 && BLOCK >= 32 && BLOCK <= 1024, "BLOCK must be whole warps (NWARPS <= 32)");

__device__ __forceinline__ float warp_inclusive(float v, int lane) {
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
        const float u = __shfl_up_sync(0xffffffffu, v, off);
        if (lane >= off) v += u;
    }
    return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK) scan_warp_shuffle(const float* __restrict__ x, float* __restrict__ y, int n) {
    __shared__ float warp_sums[NWARPS];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const long long run = (long long)blockIdx.x * TILE + (long long)warp * (32 * ITEMS);  // this warp's elements
    float4 v[ROUNDS];
#pragma unroll
    for (int r = 0; r < ROUNDS; ++r) {
        const long long i = run + r * 128 + lane * 4;
        if (i + 4 <= n) {
            v[r] = *reinterpret_cast<const float4*>(x + i);
        } else {
            v[r] = make_float4(i < n ? x[i] : 0.f, i + 1 < n ? x[i + 1] : 0.f, i + 2 < n ? x[i + 2] : 0.f, 0.f);
        }
    }
    float carry = 0.f;  // the warp's total over the rounds so far
#pragma unroll
    for (int r = 0; r < ROUNDS; ++r) {
        v[r].y += v[r].x;
        v[r].z += v[r].y;
        v[r].w += v[r].z;
        const float incl = warp_inclusive(v[r].w, lane);
        float excl = __shfl_up_sync(0xffffffffu, incl, 1);
        excl = (lane == 0 ? 0.f : excl) + carry;
        v[r].x += excl;
        v[r].y += excl;
        v[r].z += excl;
        v[r].w += excl;
        carry += __shfl_sync(0xffffffffu, incl, 31);
    }
    if (lane == 0) warp_sums[warp] = carry;
    __syncthreads();
    if (warp == 0) {  // exclusive scan of the warp totals, in place
        const float w = lane < NWARPS ? warp_sums[lane] : 0.f;
        const float wi = warp_inclusive(w, lane);
        const float we = __shfl_up_sync(0xffffffffu, wi, 1);
        if (lane < NWARPS) warp_sums[lane] = lane == 0 ? 0.f : we;
    }
    __syncthreads();
    const float off = warp_sums[warp];
#pragma unroll
    for (int r = 0; r < ROUNDS; ++r) {
        const long long i = run + r * 128 + lane * 4;
        const float4 o = make_float4(v[r].x + off, v[r].y + off, v[r].z + off, v[r].w + off);
        if (i + 4 <= n) {
            *reinterpret_cast<float4*>(y + i) = o;
        } else {
            if (i < n) y[i] = o.x;
            if (i + 1 < n) y[i + 1] = o.y;
            if (i + 2 < n) y[i + 2] = o.z;
        }
    }
}

// ---- Multi-block: scan-then-propagate. The helpers' code is shared by every variant that scans
// tile by tile (scan_propagate.cuh); these are this variant's entry points, for its TILE.
#include "scan_propagate.cuh"

extern "C" __global__ void scan_warp_shuffle_totals(const float* __restrict__ y, float* __restrict__ totals, int count) {
    scan_propagate_totals<TILE>(y, totals, count);
}

extern "C" __global__ void scan_warp_shuffle_add(float* __restrict__ y, const float* __restrict__ offsets, int n) {
    scan_propagate_add<TILE>(y, offsets, n);
}
