// reduce / vectorized_atomic
// Changed from warp_shuffle: 16-byte float4 loads, UNROLL of them in flight per thread per
// iteration (into UNROLL independent sums), and no second launch: each block's sum goes into
// out[0] with one atomicAdd. out must be 0 first: the manifest's zero_output has the host zero it
// with a memset on the same stream, inside the timed launch. Float atomics land in whatever order the blocks finish, so
// the last bits of the result vary from run to run (well within the tolerance). Blocks of 1024
// threads, two per SM (per_sm:2): 264 atomics on an H100. The n % 4 tail is added by the first
// threads of the grid, one scalar each. LOAD_HINT picks the float4 load's cache hints (0, the
// default, is the plain read-only load, LDG.E.128.CONSTANT): 1 = ld.global.nc.L1::no_allocate.L2::256B
// (L1 skipped, L2 fetches 256-byte runs from DRAM per miss), 2 = __ldcs (evict-first in L1 and L2),
// 3 = 1 plus an L2 evict-first cache policy (createpolicy). Expected limiter: DRAM bandwidth.

#ifndef BLOCK
#define BLOCK 1024
#endif
#ifndef UNROLL
#define UNROLL 4
#endif
#ifndef BLOCKS_PER_SM
#define BLOCKS_PER_SM 2                                 // the grid (manifest: per_sm:BLOCKS_PER_SM) and the register cap
#endif

static_assert(BLOCK >= 32 && BLOCK <= 1024 && BLOCK % 32 == 0, "BLOCK must be whole warps, 32..1024");
#ifndef LOAD_HINT
#define LOAD_HINT 0
#endif

static_assert(UNROLL >= 1 && UNROLL <= 8, "UNROLL float4 loads in flight per thread: 1..8");
static_assert(LOAD_HINT >= 0 && LOAD_HINT <= 3, "LOAD_HINT: 0 plain, 1 L2::256B, 2 __ldcs, 3 L2::256B + evict_first");

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

extern "C" __global__ void __launch_bounds__(BLOCK, BLOCKS_PER_SM)
reduce_vectorized_atomic(const float* __restrict__ in, float* __restrict__ out, int n)
{
    __shared__ float warp_sums[BLOCK / 32];

    const unsigned tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
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

    sum = warp_sum(sum);
    if (lane == 0)
        warp_sums[warp] = sum;
    __syncthreads();
    if (warp == 0) {
        sum = lane < BLOCK / 32 ? warp_sums[lane] : 0.0f;
        sum = warp_sum(sum);
        if (lane == 0)
            atomicAdd(out, sum);                        // out[0] was zeroed by the host, same stream
    }
}
