// reduce / last_block
// Changed from vectorized_atomic: no memset before the kernel and no float atomics. Each block
// writes its sum to its own slot of a device array, fences, and takes a ticket from a device
// counter; the block that draws the last ticket sums the slots in a fixed order, writes out[0] and
// sets the counter back to 0 for the next launch (the CUDA sample threadFenceReduction's scheme).
// The timed launch is one kernel instead of a 4-byte memset plus the kernel, and the result is the
// same bits on every run. The loads default to LOAD_HINT 1, ld.global.nc.L1::no_allocate.L2::256B:
// L1 skipped (nothing is read twice) and each L2 miss fetches a 256-byte run from DRAM
// (LDG.E.NA.LTC256B.128.CONSTANT in SASS); 0 is vectorized_atomic's plain read-only load, 2 __ldcs
// (evict-first), 3 = 1 with an L2 evict-first policy. The slots and the counter are state kept
// between launches: two launches of this kernel must not run at once (gpuprof launches one at a
// time), and a grid over MAX_BLOCKS blocks writes NaN rather than a wrong sum.
// Expected limiter: DRAM bandwidth.

#ifndef BLOCK
#define BLOCK 1024
#endif
#ifndef UNROLL
#define UNROLL 4
#endif
#ifndef BLOCKS_PER_SM
#define BLOCKS_PER_SM 2                                 // the grid (manifest: per_sm:BLOCKS_PER_SM) and the register cap
#endif
#ifndef LOAD_HINT
#define LOAD_HINT 1
#endif
#define MAX_BLOCKS 4096                                 // slots for per_sm:K up to K = 31 on 132 SMs

static_assert(BLOCK >= 32 && BLOCK <= 1024 && BLOCK % 32 == 0, "BLOCK must be whole warps, 32..1024");
static_assert(UNROLL >= 1 && UNROLL <= 8, "UNROLL float4 loads in flight per thread: 1..8");
static_assert(LOAD_HINT >= 0 && LOAD_HINT <= 3, "LOAD_HINT: 0 plain, 1 L2::256B, 2 __ldcs, 3 L2::256B + evict_first");

__device__ float block_sums[MAX_BLOCKS];               // one per block, rewritten by every launch
__device__ unsigned int blocks_done = 0;               // 0 between launches: the last block resets it

// One 16-byte load of a value read exactly once, with LOAD_HINT's cache hints. volatile: nvcc must
// not hoist a load above its loop's bounds check.
static __device__ __forceinline__ float4 load_once(const float4* p)
{
#if LOAD_HINT == 1
    float4 v;
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.f32 {%0, %1, %2, %3}, [%4];"
        : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(__cvta_generic_to_global(p)));
    return v;
#elif LOAD_HINT == 2
    return __ldcs(p);
#elif LOAD_HINT == 3
    unsigned long long policy;                          // sm_90 takes L2::evict_first only as a policy
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    float4 v;
    asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.L2::256B.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
        : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(__cvta_generic_to_global(p)), "l"(policy));
    return v;
#else
    return *p;
#endif
}

static __device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

// The sum of v over the block, valid in thread 0. Starts and ends with a barrier, so `scratch`
// may be reused by a second call.
static __device__ __forceinline__ float block_sum(float v, float* scratch)
{
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    __syncthreads();
    v = warp_sum(v);
    if (lane == 0)
        scratch[warp] = v;
    __syncthreads();
    v = 0.0f;
    if (warp == 0) {
        v = lane < BLOCK / 32 ? scratch[lane] : 0.0f;
        v = warp_sum(v);
    }
    return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK, BLOCKS_PER_SM)
reduce_last_block(const float* __restrict__ in, float* __restrict__ out, int n)
{
    __shared__ float warp_sums[BLOCK / 32];
    __shared__ bool last;

    const unsigned tid = threadIdx.x;
    const unsigned n4 = (unsigned)n / 4;
    const unsigned stride = gridDim.x * BLOCK;
    const float4* in4 = reinterpret_cast<const float4*>(in);   // cupy buffers are 256-byte aligned

    float acc[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
        acc[u] = 0.0f;

    unsigned i = blockIdx.x * BLOCK + tid;
    // UNROLL independent loads issued before any is used (n4 < 2^29: no unsigned wrap below).
    for (; i + (UNROLL - 1) * stride < n4; i += UNROLL * stride) {
        float4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
            v[u] = load_once(in4 + i + u * stride);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
            acc[u] += (v[u].x + v[u].y) + (v[u].z + v[u].w);
    }
    for (; i < n4; i += stride) {
        const float4 v = load_once(in4 + i);
        acc[0] += (v.x + v.y) + (v.z + v.w);
    }
    const unsigned t = 4 * n4 + blockIdx.x * BLOCK + tid;   // the last n % 4 (< 4) elements
    if (t < (unsigned)n)
        acc[0] += in[t];

    float sum = 0.0f;
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
        sum += acc[u];
    sum = block_sum(sum, warp_sums);

    if (tid == 0) {
        if (blockIdx.x < MAX_BLOCKS)
            block_sums[blockIdx.x] = sum;
        __threadfence();                                // the slot is visible GPU-wide before the ticket
        last = atomicAdd(&blocks_done, 1u) == gridDim.x - 1;
        if (last)
            __threadfence();                            // ... and every other block's slot before the reads below
    }
    __syncthreads();
    if (!last)
        return;

    // The last block: every slot is written. __ldcg reads L2, never a stale L1 line.
    float total = 0.0f;
    for (unsigned b = tid; b < gridDim.x && b < MAX_BLOCKS; b += BLOCK)
        total += __ldcg(&block_sums[b]);
    total = block_sum(total, warp_sums);
    if (tid == 0) {
        out[0] = gridDim.x <= MAX_BLOCKS ? total : __int_as_float(0x7fc00000);  // NaN: too many blocks
        blocks_done = 0;                                // the next launch starts from 0 (kernel boundary)
    }
}
