// scan / pipelined_lookback
// Changed from decoupled_lookback: persistent blocks that keep the next tile's copy in flight while the
// current tile looks back, and publish each prefetched tile's aggregate as soon as its data lands.
// decoupled_lookback's ncu view: 52 % of warp stalls at the barrier after warp 0's look-back, when the
// block has nothing in flight. Here grid = a few blocks per SM (per_sm in the manifest); each block
// claims tiles from the atomic counter and copies them into STAGES shared-memory stages with Hopper's
// bulk copy (cp.async.bulk, one instruction per tile, completion counted in bytes on an mbarrier).
// The first version published a prefetched tile's aggregate only when it came to scan it, after the
// previous tile's look-back, so look-backs chained through prefetched tiles round by round: 1.338 ms at
// 2^28 on an H100 (0.65x CUB), 80 % of stalls at the barrier after the look-back. Now, per tile t:
// the producer (lane 0 of the last warp) claims the next tile t' at the top; once t is read out of
// its stage and the warp totals are in, the stage is refilled with t'; warp 0 looks back for t while
// warps 1..NWARPS-1 wait for t' to land, sum it from shared memory, combine over a named barrier and
// publish t''s AGGREGATE (INCLUSIVE for tile 0), keeping the value for t''s own INCLUSIVE publish
// later. A block's first tile publishes when it is scanned (it waits on nothing before that), and the
// partial last tile too (read from global memory with bounds; no tile looks back past the last).
// Tiles stay at decoupled_lookback's 6144 elements (the tolerance's look-back chain model).
// Deadlock freedom: a tile's status leaves FLAG_INVALID without waiting on any look-back: a prefetched
// tile's aggregate needs only its own copy (claimed at the top of an iteration, published before that
// iteration's end-of-look-back barrier); a block's first tile needs only its copy. A look-back waits
// only on smaller tiles, all claimed by running blocks, and ends at tile 0's INCLUSIVE at the latest,
// so every look-back ends whatever the schedule; look-backs never wait on a block's earlier tile.
// Blocks that do not fit on the GPU at once hold no tile; they start when others exit, claim past the
// end and exit. No data fences: a tile reads only x and its predecessors' status words, whose flag and
// value are one 64-bit relaxed word. Needs sm_90 (bulk copies, mbarrier byte counts) and NWARPS >= 2.
// Expected limiter: DRAM bandwidth (a copy's 2n words); each block has one tile's copy in flight per
// look-back (its wait bounds the iteration from below), so blocks per SM set the bytes in flight:
// STAGES > 1 only holds tiles that have landed, and STAGES = 1 frees shared memory for more blocks.
// Measured on an H100 at 2^28 (defaults: 7 blocks of 128 threads, one stage): 855 us, 1.02x CUB, 0.82
// of copy: the same rate as decoupled_lookback, not copy speed.
#ifndef BLOCK
#define BLOCK 128
#endif
#ifndef ITEMS
#define ITEMS 48  // elements per thread per tile: TILE = 6144 floats = 24 KiB per stage
#endif
#ifndef STAGES
#define STAGES 1  // tiles in shared memory per block: the one being scanned and the next STAGES - 1 claimed
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 7  // __launch_bounds__ minimum blocks per SM: caps registers at 65536 / (BLOCK * MIN_BLOCKS)
#endif
#ifndef STREAM_STORES
#define STREAM_STORES 0  // 1: y is written with st.global.cs (evict-first), as it is never read back here
#endif
#define TILE (BLOCK * ITEMS)
#define TILE_BYTES (TILE * 4)
#define NWARPS (BLOCK / 32)
#define ROUNDS (ITEMS / 4)
#define PRODUCER (BLOCK - 32)  // lane 0 of the last warp claims tiles and starts their copies
#define SUMMERS (BLOCK - 32)   // threads of warps 1..NWARPS-1: they sum each prefetched tile
#define SMEM_BYTES (STAGES * TILE * 4)  // = the manifest's dynamic_smem
static_assert(ITEMS % 4 == 0 && ITEMS >= 4 && ITEMS <= 64, "ITEMS is whole float4s per thread, 4..64");
static_assert(BLOCK % 32 == 0 && BLOCK >= 64 && BLOCK <= 1024,
              "BLOCK must be 2..32 whole warps: warp 0 looks back while the others publish the prefetched tile");
static_assert(STAGES >= 1 && STAGES <= 8, "STAGES is 1..8 tiles per block");
static_assert(MIN_BLOCKS >= 1, "MIN_BLOCKS is at least 1");
static_assert(SMEM_BYTES <= 227 * 1024, "STAGES tiles must fit in the 227 KB of shared memory an H100 block may have");

#include "lookback.cuh"  // decoupled_lookback's status words, warp scans and look-back

__device__ __forceinline__ unsigned shared_address(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}

// Block until the stage's mbarrier has completed the phase of this parity (its tile has landed).
__device__ __forceinline__ void wait_stage(const unsigned long long* bar, unsigned parity) {
    unsigned done;
    do {
        asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done) : "r"(shared_address(bar)), "r"(parity) : "memory");
    } while (!done);
}

// Producer thread only: start the copy of claimed tile t into a stage. A full tile is one bulk copy
// whose bytes complete the stage's phase; a tile past the end, or the partial last tile (read from
// global memory with bounds), completes the phase with a plain arrive.
__device__ __forceinline__ void refill(float4* stage, unsigned long long* bar, int* claimed, int t, const float* x,
                                       int n, int tiles) {
    *claimed = t;  // read after the phase completes (the arrive releases it)
    const unsigned b = shared_address(bar);
    if (t < tiles && (long long)(t + 1) * TILE <= n) {
        // The block's generic reads of this stage (ordered before us by __syncthreads) come before
        // the copy's async-proxy writes.
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(TILE_BYTES) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     ::"r"(shared_address(stage)), "l"(x + (long long)t * TILE), "r"(TILE_BYTES), "r"(b)
                     : "memory");
    } else {
        asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(b) : "memory");
    }
}

__device__ __forceinline__ int claim() { return (int)atomicAdd(&g_tile_counter, 1u); }

// Warps 1..NWARPS-1 only (uniformly): wait for the stage's phase of this parity, and if it holds a full
// tile, sum it from shared memory and publish the sum at once (INCLUSIVE for tile 0, whose prefix is
// 0), keeping it in `aggregate` for the tile's INCLUSIVE publish when it is scanned. A wait does not
// consume the phase: the scan's own wait later finds it complete. The partial last tile is left to its
// scan (nothing looks back past it).
__device__ __forceinline__ void publish_prefetched(const float4* stage, const unsigned long long* bar, unsigned parity,
                                                   const int* claimed, float (*part)[NWARPS], float* aggregate,
                                                   int st, int n, int tiles, int warp, int lane) {
    wait_stage(bar, parity);
    const int t = *claimed;  // the same for every waiting thread: the branch below is uniform
    if (t >= tiles || (long long)(t + 1) * TILE > n) return;
    float sum = 0.f;
#pragma unroll 4
    for (int k = (int)threadIdx.x - 32; k < TILE / 4; k += SUMMERS) {  // 512 B a warp: no bank conflicts
        const float4 q = stage[k];
        sum += (q.x + q.y) + (q.z + q.w);
    }
    sum = warp_sum(sum);
    if (lane == 0) part[st][warp - 1] = sum;  // per stage: iteration 0 publishes several without a second barrier
    __syncwarp();
    asm volatile("bar.sync 1, %0;" ::"n"(SUMMERS) : "memory");  // warps 1..NWARPS-1 only, not warp 0
    if (warp == 1) {
        const float total = warp_sum(lane < NWARPS - 1 ? part[st][lane] : 0.f);
        if (lane == 0) {
            aggregate[st] = total;
            publish(t, t == 0 ? FLAG_INCLUSIVE : FLAG_AGGREGATE, total);
        }
    }
}

// One 16-byte store, in asm: written in C++, nvcc splits the first of the unrolled float4 stores into
// four 4-byte ones (it cannot prove y + i 16-byte aligned), four times the store instructions.
#if STREAM_STORES
#define STORE_V4 "st.global.cs.v4.f32"
#else
#define STORE_V4 "st.global.v4.f32"
#endif
__device__ __forceinline__ void store4(float* p, float4 o) {
    asm volatile(STORE_V4 " [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(o.x), "f"(o.y), "f"(o.z), "f"(o.w) : "memory");
}

extern "C" __global__ void __launch_bounds__(BLOCK, MIN_BLOCKS) scan_pipelined_lookback(const float* __restrict__ x,
                                                                                        float* __restrict__ y, int n) {
    extern __shared__ float4 stages[];  // SMEM_BYTES: STAGES tiles of TILE floats; 16-byte aligned
    __shared__ __align__(8) unsigned long long full[STAGES];  // one mbarrier per stage: "its tile has landed"
    __shared__ int claimed[STAGES];                           // the tile each stage holds
    __shared__ float aggregate_of[STAGES];                    // its sum, where published when it landed
    __shared__ float part[STAGES][NWARPS];                    // warps 1..NWARPS-1's shares of that sum
    __shared__ float warp_sums[NWARPS];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int tiles = (int)(((long long)n + TILE - 1) / TILE);
    const bool producer = threadIdx.x == PRODUCER;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s)
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(full + s)) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");  // visible to the bulk copies
    }
    __syncthreads();
    if (producer) {
        for (int s = 0; s < STAGES; ++s) refill(stages + s * (TILE / 4), full + s, claimed + s, claim(), x, n, tiles);
    }

    const int chunk = warp * (32 * ITEMS);  // warp-striped, as decoupled_lookback
    unsigned parity = 0;
    bool first = true;  // the block's first tile: published when scanned, as in decoupled_lookback
    for (int s = 0;; s = (s + 1 == STAGES) ? 0 : s + 1) {
        wait_stage(full + s, parity);
        const int tile = claimed[s];
        if (tile >= tiles) break;  // claims only grow, so the later stages hold no tile either: no copy in flight
        // Claimed now, copied once the stage is read out: the atomic's latency hides behind the scan.
        const int next = producer ? claim() : 0;
        const bool full_tile = (long long)(tile + 1) * TILE <= n;  // every tile but a partial last one
        const bool early = full_tile && !first;  // its aggregate went out when it landed
        const float early_aggregate = aggregate_of[s];  // read before warp 1 may write this stage's next one
        const long long run = (long long)tile * TILE + chunk;
        const float4* stage = stages + s * (TILE / 4);
        float4 v[ROUNDS];
        if (full_tile) {
#pragma unroll
            for (int r = 0; r < ROUNDS; ++r) v[r] = stage[chunk / 4 + r * 32 + lane];  // 512 B a warp: no conflicts
        } else {  // the partial last tile, from global memory
#pragma unroll
            for (int r = 0; r < ROUNDS; ++r) {
                const long long i = run + r * 128 + lane * 4;
                if (i + 4 <= n) {
                    v[r] = *reinterpret_cast<const float4*>(x + i);
                } else {
                    v[r] = make_float4(i < n ? x[i] : 0.f, i + 1 < n ? x[i + 1] : 0.f, i + 2 < n ? x[i + 2] : 0.f, 0.f);
                }
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
        __syncthreads();  // the stage is read out and the warp totals are in
        if (warp == 0) {
            const float w = lane < NWARPS ? warp_sums[lane] : 0.f;
            const float wi = warp_inclusive(w, lane);
            const float we = __shfl_up_sync(0xffffffffu, wi, 1);
            const float aggregate = early ? early_aggregate : __shfl_sync(0xffffffffu, wi, 31);  // this tile's sum
            float prefix = 0.f;
            if (tile == 0) {
                if (lane == 0) publish(0, FLAG_INCLUSIVE, aggregate);
            } else {
                if (!early && lane == 0) publish(tile, FLAG_AGGREGATE, aggregate);  // successors may use it right away
                prefix = look_back(tile, lane);
                if (lane == 0) publish(tile, FLAG_INCLUSIVE, prefix + aggregate);
            }
            if (lane < NWARPS) warp_sums[lane] = prefix + (lane == 0 ? 0.f : we);  // each warp's full offset
        } else {
            // Meanwhile the other warps refill the stage and publish what they prefetch, so that no
            // look-back through those tiles waits for this one's.
            if (producer) refill(stages + s * (TILE / 4), full + s, claimed + s, next, x, n, tiles);
            __syncwarp();
            if (first) {  // the stages claimed before the loop, in claim order: their first phase
                for (int p = 1; p < STAGES; ++p)
                    publish_prefetched(stages + p * (TILE / 4), full + p, 0u, claimed + p, part, aggregate_of, p, n,
                                       tiles, warp, lane);
            }
            publish_prefetched(stage, full + s, parity ^ 1u, claimed + s, part, aggregate_of, s, n, tiles, warp, lane);
        }
        __syncthreads();
        const float off = warp_sums[warp];  // read before this warp's next write of it (after its next shuffles)
        if (full_tile) {  // unguarded 16-byte stores (one branch per tile, not per float4)
#pragma unroll
            for (int r = 0; r < ROUNDS; ++r)
                store4(y + run + r * 128 + lane * 4, make_float4(v[r].x + off, v[r].y + off, v[r].z + off, v[r].w + off));
        } else {
#pragma unroll
            for (int r = 0; r < ROUNDS; ++r) {
                const long long i = run + r * 128 + lane * 4;
                if (i < n) y[i] = v[r].x + off;
                if (i + 1 < n) y[i + 1] = v[r].y + off;
                if (i + 2 < n) y[i + 2] = v[r].z + off;
                if (i + 3 < n) y[i + 3] = v[r].w + off;
            }
        }
        first = false;
        if (s + 1 == STAGES) parity ^= 1u;  // the next round of stages waits for their next phase
    }
}

// Zero the status words of the first `tiles` tiles and the counter: launched before every scan
// (inside the timed launch), so no state carries over between runs.
extern "C" __global__ void scan_pipelined_lookback_reset(int tiles) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < tiles) g_status[i] = 0ull;
    if (i == 0) g_tile_counter = 0u;
}
