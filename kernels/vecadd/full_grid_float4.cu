// vecadd / full_grid_float4
// Changed from vectorized: no grid-stride loop. A full grid of short-lived blocks, each thread
// issuing UNROLL independent 16-byte loads of a and of b before any add, at addresses a block
// apart so every load instruction of a warp is one contiguous 512-byte run. The persistent grid of
// `vectorized` leaves each SM's DRAM streams to a few long-lived blocks and ends with a ragged last
// pass; a full grid lets the block scheduler keep every SM fed to the very end (the shape of
// PyTorch's and Triton's elementwise kernels). Cache hints for a one-pass stream, 0 (plain) by
// default: LOAD_HINT 1 = ld.global.nc.L1::no_allocate.L2::256B (each L2 miss fetches a 256-byte run),
// 2 = __ldcs (evict-first), 3 = 1 with an L2 evict-first policy; STORE_HINT 1 = __stcs (st.global.cs,
// evict-first), 2 = st.global.L1::no_allocate with an L2 evict-first policy. With IN_FLIGHT 0 every
// load has its own bounds check, and nvcc sinks each a/b pair into its guard: the SASS loads a pair,
// adds, stores, then loads the next, about one pair in flight per thread (3025 GB/s, 0.988x
// torch.add on an H100). IN_FLIGHT 1 (the default) gives the threads whose UNROLL float4 are all in
// bounds a path without checks, where all 2*UNROLL loads issue before the first add (more
// registers): 3059 GB/s, 0.999x torch.add. The hints measured no better there (1 and 1: 0.965x).
// Expected limiter: DRAM bandwidth.
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef UNROLL
#define UNROLL 4
#endif
#ifndef LOAD_HINT
#define LOAD_HINT 0
#endif
#ifndef STORE_HINT
#define STORE_HINT 0
#endif
#ifndef IN_FLIGHT
#define IN_FLIGHT 1
#endif

static_assert(LOAD_HINT >= 0 && LOAD_HINT <= 3, "LOAD_HINT: 0 plain, 1 L2::256B, 2 __ldcs, 3 L2::256B + evict_first");
static_assert(STORE_HINT >= 0 && STORE_HINT <= 2, "STORE_HINT: 0 plain, 1 __stcs, 2 L1::no_allocate + L2 evict_first");

#if LOAD_HINT == 3 || STORE_HINT == 2
// An L2 evict-first cache policy (sm_90 takes L2::evict_first on 16-byte accesses only as a policy).
static __device__ __forceinline__ unsigned long long evict_first_policy()
{
    unsigned long long policy;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    return policy;
}
#endif

// A 16-byte load of a value read once. volatile: nvcc must not hoist a load above its bounds check.
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
    float4 v;
    asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.L2::256B.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
        : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
        : "l"(__cvta_generic_to_global(p)), "l"(evict_first_policy()));
    return v;
#else
    return *p;
#endif
}

// A 16-byte store of a value nothing in the kernel reads again.
static __device__ __forceinline__ void store_once(float4* p, float4 v)
{
#if STORE_HINT == 1
    __stcs(p, v);
#elif STORE_HINT == 2
    asm volatile("st.global.L1::no_allocate.L2::cache_hint.v4.f32 [%0], {%1, %2, %3, %4}, %5;"
                 :: "l"(__cvta_generic_to_global(p)), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w),
                    "l"(evict_first_policy()) : "memory");
#else
    *p = v;
#endif
}

extern "C" __global__ void __launch_bounds__(BLOCK)
vecadd_full_grid_float4(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int n) {
    const int n4 = n / 4;
    const float4* a4 = reinterpret_cast<const float4*>(a);
    const float4* b4 = reinterpret_cast<const float4*>(b);
    float4* c4 = reinterpret_cast<float4*>(c);
    const long long first = static_cast<long long>(blockIdx.x) * (BLOCK * UNROLL) + threadIdx.x;
    float4 x[UNROLL], y[UNROLL];
#if IN_FLIGHT
    if (first + (UNROLL - 1) * BLOCK < n4) {  // the whole range in bounds: no guards, every load first
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            x[u] = load_once(a4 + first + u * BLOCK);
            y[u] = load_once(b4 + first + u * BLOCK);
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
            store_once(c4 + first + u * BLOCK,
                       make_float4(x[u].x + y[u].x, x[u].y + y[u].y, x[u].z + y[u].z, x[u].w + y[u].w));
    } else
#endif
    {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {  // loads first; nvcc may still sink each pair into its guard
        const long long i = first + u * BLOCK;
        if (i < n4) {
            x[u] = load_once(a4 + i);
            y[u] = load_once(b4 + i);
        }
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
        const long long i = first + u * BLOCK;
        if (i < n4) {
            store_once(c4 + i, make_float4(x[u].x + y[u].x, x[u].y + y[u].y, x[u].z + y[u].z, x[u].w + y[u].w));
        }
    }
    }
    // Tail: the last n % 4 elements, done by the first block's first threads.
    if (blockIdx.x == 0 && threadIdx.x < n - 4 * n4) {
        const int t = 4 * n4 + threadIdx.x;
        c[t] = a[t] + b[t];
    }
}
