// scan / lost_tile — deliberately wrong, for the integrity tests: kernels/scan/
// decoupled_lookback.cu with one change, marked LOST TILE below: above 2^26 elements tile 7
// publishes 0 as its sum, so its own outputs are right but every later prefix misses its ~3000.
// Every check size is far smaller, so only the benchmark size shows it, and only under a
// per-element tolerance (issue 12 item 2). The original's notes follow.
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

// Workspace: one status word per tile and the tile counter. The family signature (x, y, n) has no
// workspace argument, so they live in the module (allocated at load, outside any timing), sized
// for the largest n (2^31 - 1); the _reset kernel zeroes the used part before every scan.
#define MAX_TILES (2147483647 / TILE + 1)
__device__ unsigned long long g_status[MAX_TILES];  // (flag << 32) | float bits of the value
__device__ unsigned int g_tile_counter;

#define FLAG_INVALID 0u    // nothing published yet
#define FLAG_AGGREGATE 1u  // value = this tile's own sum
#define FLAG_INCLUSIVE 2u  // value = sum of all tiles up to and including this one

__device__ __forceinline__ void publish(int tile, unsigned flag, float value) {
    const unsigned long long word = ((unsigned long long)flag << 32) | __float_as_uint(value);
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(g_status + tile), "l"(word) : "memory");
}

__device__ __forceinline__ unsigned long long status_of(int tile) {
    unsigned long long word;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(word) : "l"(g_status + tile) : "memory");
    return word;
}

__device__ __forceinline__ float warp_inclusive(float v, int lane) {
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
        const float u = __shfl_up_sync(0xffffffffu, v, off);
        if (lane >= off) v += u;
    }
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

// Sum of all tiles before `tile`, by one warp: lane l watches tile (last - l). Wait until all 32 have
// published something, add the aggregates up to the nearest inclusive prefix; if none of the 32 had
// one, slide the window 32 tiles back. Predecessors started earlier (counter order) and never wait
// on later tiles, so this terminates whatever order the hardware schedules blocks in.
__device__ __forceinline__ float look_back(int tile, int lane) {
    float prefix = 0.f;
    for (int last = tile - 1;; last -= 32) {
        const int pred = last - lane;
        unsigned long long word;
        unsigned flag;
        do {
            word = pred >= 0 ? status_of(pred) : ((unsigned long long)FLAG_INCLUSIVE << 32);  // before tile 0: 0
            flag = (unsigned)(word >> 32);
        } while (__any_sync(0xffffffffu, flag == FLAG_INVALID));
        const unsigned inclusive = __ballot_sync(0xffffffffu, flag == FLAG_INCLUSIVE);
        const int stop = inclusive ? __ffs(inclusive) - 1 : 31;  // nearest lane with an inclusive prefix
        prefix += warp_sum(lane <= stop ? __uint_as_float((unsigned)word) : 0.f);
        if (inclusive) return prefix;
    }
}

extern "C" __global__ __launch_bounds__(BLOCK) void scan_lost_tile(const float* __restrict__ x, float* __restrict__ y,
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
        const float own = __shfl_sync(0xffffffffu, wi, 31);  // this tile's sum
        const float aggregate = n > (1 << 26) && tile == 7 ? 0.f : own;  // LOST TILE: what it publishes
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
extern "C" __global__ void scan_lost_tile_reset(int tiles) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < tiles) g_status[i] = 0ull;
    if (i == 0) g_tile_counter = 0u;
}
