// scan / pipelined_lookback
// Changed from decoupled_lookback: persistent blocks that keep the next tile's loads in flight while
// the current tile looks back. decoupled_lookback's ncu view: 52 % of warp stalls at the barrier after
// warp 0's look-back, when a block's loads are done and its stores not started, so the SM has nothing
// of that block in flight. Here grid = a few blocks per SM (per_sm in the manifest); each block claims
// tiles from the atomic counter and copies STAGES of them ahead into shared memory with Hopper's bulk
// copy (cp.async.bulk, one instruction per tile, completion counted in bytes on an mbarrier): as soon
// as tile t is read out of its stage into registers, the stage is refilled with a newly claimed tile,
// and only then does warp 0 look back for t. In-flight loads no longer live in registers (48 a
// thread, not 68); shared memory sets the occupancy (4 blocks of 2 x 24 KiB). Tiles stay at 6144
// elements, decoupled_lookback's, so the look-back chain rounds as it does (the tolerance's model). The
// look-back, the flag+value words and the output layout are decoupled_lookback's; the partial last tile
// is read from global memory with bounds.
// Deadlock freedom: claims come from one counter, so each block holds its tiles in increasing order and
// finishes them in that order; a tile's look-back waits only on smaller tiles, and every claimed tile
// belongs to a running block. The smallest unfinished tile L is its owner's next tile (all its smaller
// ones are done), its copy is already issued, its predecessors are all finished: L always completes.
// Blocks that do not fit on the GPU at once hold no tile; they start when others exit, claim past the
// end and exit. No data fences: a tile reads only x and its predecessors' status words, whose flag and
// value are one 64-bit word. Needs sm_90 (bulk copies, mbarrier byte counts). Expected limiter: DRAM
// bandwidth (a copy's 2n words), the look-back hidden behind the copies in flight (STAGES per block
// counting the one refilled at the look-back's start).
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef ITEMS
#define ITEMS 24  // elements per thread per tile: TILE = 6144 floats = 24 KiB per stage
#endif
#ifndef STAGES
#define STAGES 2  // tiles in shared memory per block: the one being scanned and STAGES - 1 in flight
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 4  // __launch_bounds__ minimum blocks per SM: caps registers at 65536 / (BLOCK * MIN_BLOCKS)
#endif
#ifndef STREAM_STORES
#define STREAM_STORES 0  // 1: y is written with st.global.cs (evict-first), as it is never read back here
#endif
#define TILE (BLOCK * ITEMS)
#define TILE_BYTES (TILE * 4)
#define NWARPS (BLOCK / 32)
#define ROUNDS (ITEMS / 4)
#define PRODUCER (BLOCK - 32)  // lane 0 of the last warp claims tiles and starts their copies
#define SMEM_BYTES (STAGES * TILE * 4)  // = the manifest's dynamic_smem
static_assert(ITEMS % 4 == 0 && ITEMS >= 4 && ITEMS <= 64, "ITEMS is whole float4s per thread, 4..64");
static_assert(BLOCK % 32 == 0 && BLOCK >= 32 && BLOCK <= 1024, "BLOCK must be whole warps (NWARPS <= 32)");
static_assert(STAGES >= 1 && STAGES <= 8, "STAGES is 1..8 tiles per block");
static_assert(MIN_BLOCKS >= 1, "MIN_BLOCKS is at least 1");
static_assert(SMEM_BYTES <= 227 * 1024, "STAGES tiles must fit in the 227 KB of shared memory an H100 block may have");

// Workspace as in decoupled_lookback: one status word per tile and the tile counter, in the module,
// sized for the largest n (2^31 - 1); the _reset kernel zeroes the used part before every scan.
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

// decoupled_lookback's look-back: lane l watches tile (last - l), 32 predecessors per step.
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

// Producer thread only: claim the next tile for a stage and start its copy. A full tile is one bulk
// copy whose bytes complete the stage's phase; a tile past the end, or the partial last tile (the
// consumers read it from global memory with bounds), completes the phase with a plain arrive.
__device__ __forceinline__ void refill(float4* stage, unsigned long long* bar, int* claimed, const float* x,
                                       int n, int tiles) {
    const int t = (int)atomicAdd(&g_tile_counter, 1u);
    *claimed = t;  // read by the consumers after the phase completes (the arrive releases it)
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
        for (int s = 0; s < STAGES; ++s) refill(stages + s * (TILE / 4), full + s, claimed + s, x, n, tiles);
    }

    const int chunk = warp * (32 * ITEMS);  // warp-striped, as decoupled_lookback
    unsigned parity = 0;
    for (int s = 0;; s = (s + 1 == STAGES) ? 0 : s + 1) {
        wait_stage(full + s, parity);
        const int tile = claimed[s];
        if (tile >= tiles) break;  // claims only grow, so the later stages hold no tile either: no copy in flight
        const long long run = (long long)tile * TILE + chunk;
        const float4* stage = stages + s * (TILE / 4);
        const bool full_tile = (long long)(tile + 1) * TILE <= n;  // every tile but a partial last one
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
        if (producer) refill(stages + s * (TILE / 4), full + s, claimed + s, x, n, tiles);  // in flight during the look-back
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
