// scan / decoupled_lookback
// Changed from warp_shuffle: one pass, 8n bytes (Merrill & Garland's single-pass chained scan with
// decoupled look-back). Tiles are numbered by an atomic counter in start order; a tile publishes
// its aggregate at once, then warp 0 looks back over 32 predecessors at a time, summing aggregates
// until one has published its inclusive prefix, and publishes its own. Flag and value share one
// 64-bit word, so a relaxed load sees both or neither. Expected limiter: DRAM bandwidth, with
// the per-tile latency (counter atomic, then loads, then look-back) hidden by 48 elements per thread.
#ifndef BLOCK
#define BLOCK 128
#endif
#ifndef ITEMS
#define ITEMS 48  // 12 float4 loads in flight per thread; of copy bandwidth on an H100: 16 -> 0.71, 32 -> 0.80, 48 -> 0.82
#endif
#define TILE (BLOCK * ITEMS)
#define NWARPS (BLOCK / 32)
#define ROUNDS (ITEMS / 4)
static_assert(ITEMS % 4 == 0 && ITEMS >= 4 && ITEMS <= 64, "ITEMS is whole float4s per thread, 4..64");
static_assert(BLOCK % 32 == 0 && BLOCK >= 32 && BLOCK <= 1024, "BLOCK must be whole warps (NWARPS <= 32)");

#include "lookback.cuh"  // status words, publish / status_of, warp scans, look_back

extern "C" __global__ void __launch_bounds__(BLOCK) scan_decoupled_lookback(const float* __restrict__ x, float* __restrict__ y,
                                                                            int n) {
    __shared__ float warp_sums[NWARPS];
    __shared__ int tile_index;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (threadIdx.x == 0) tile_index = atomicAdd(&g_tile_counter, 1u);  // start order, not blockIdx
    __syncthreads();
    const int tile = tile_index;

    const long long run = (long long)tile * TILE + (long long)warp * (32 * ITEMS);  // warp-striped, as warp_shuffle
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
    float carry = 0.f;
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
    if (warp == 0) {
        const float w = lane < NWARPS ? warp_sums[lane] : 0.f;
        const float wi = warp_inclusive(w, lane);
        const float we = __shfl_up_sync(0xffffffffu, wi, 1);
        const float aggregate = __shfl_sync(0xffffffffu, wi, 31);  // this tile's sum
        float prefix = 0.f;
        if (tile == 0) {
            if (lane == 0) publish(0, FLAG_INCLUSIVE, aggregate);
        } else {
            if (lane == 0) publish(tile, FLAG_AGGREGATE, aggregate);  // successors may use it right away
            prefix = look_back(tile, lane);
            if (lane == 0) publish(tile, FLAG_INCLUSIVE, prefix + aggregate);
        }
        if (lane < NWARPS) warp_sums[lane] = prefix + (lane == 0 ? 0.f : we);  // each warp's full offset
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

// Zero the status words of the first `tiles` tiles and the counter: launched before every scan
// (inside the timed launch), so no state carries over between runs.
extern "C" __global__ void scan_decoupled_lookback_reset(int tiles) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < tiles) g_status[i] = 0ull;
    if (i == 0) g_tile_counter = 0u;
}
