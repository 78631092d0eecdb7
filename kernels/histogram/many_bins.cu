// histogram / many_bins
// Changed from warp_aggregated: instead of detecting collisions, avoid most of them by
// replication: every warp owns its own 256-bin histogram in shared memory (BLOCK/32 copies of the
// bins, 32 KB at BLOCK = 1024), so only the 32 lanes of one warp can ever collide on a counter,
// and no sort or match is needed. Each thread reads 16 values with one 16-byte load, UNROLL loads
// in flight before any is counted, over a grid of two 1024-thread blocks per SM. At the end the
// block sums its warps' copies bin by bin and adds each non-zero total to global memory with one
// 64-bit atomic. Shared counters are 32-bit (n < 2^31). Expected limiter: DRAM bandwidth on
// uniform data; shared atomics on one address (32-way within a warp) on one-bin data.

#ifndef BLOCK
#define BLOCK 1024
#endif
#ifndef UNROLL
#define UNROLL 2
#endif

#define BINS 256
#define WARPS (BLOCK / 32)

static_assert(BLOCK >= 32 && BLOCK <= 1024 && BLOCK % 32 == 0, "BLOCK must be whole warps, 32..1024");
static_assert(UNROLL >= 1 && UNROLL <= 8, "UNROLL 16-byte loads in flight per thread: 1..8");

static __device__ __forceinline__ void count_word(unsigned* hist, unsigned w)
{
    atomicAdd(&hist[w & 0xffu], 1u);
    atomicAdd(&hist[(w >> 8) & 0xffu], 1u);
    atomicAdd(&hist[(w >> 16) & 0xffu], 1u);
    atomicAdd(&hist[w >> 24], 1u);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
histogram_many_bins(const unsigned char* __restrict__ in, unsigned long long* __restrict__ bins, int n)
{
    __shared__ unsigned local[WARPS * BINS];
    const unsigned tid = threadIdx.x;
    for (unsigned b = tid; b < WARPS * BINS; b += BLOCK)
        local[b] = 0;
    __syncthreads();
    unsigned* hist = local + (tid / 32) * BINS;  // this warp's copy of the bins

    const unsigned n16 = (unsigned)n / 16;
    const unsigned stride = gridDim.x * BLOCK;
    const uint4* in16 = reinterpret_cast<const uint4*>(in);  // cupy buffers are 256-byte aligned
    unsigned i = blockIdx.x * BLOCK + tid;
    for (; i + (UNROLL - 1) * stride < n16; i += UNROLL * stride) {
        uint4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
            v[u] = __ldg(&in16[i + u * stride]);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            count_word(hist, v[u].x);
            count_word(hist, v[u].y);
            count_word(hist, v[u].z);
            count_word(hist, v[u].w);
        }
    }
    for (; i < n16; i += stride) {
        const uint4 v = __ldg(&in16[i]);
        count_word(hist, v.x);
        count_word(hist, v.y);
        count_word(hist, v.z);
        count_word(hist, v.w);
    }
    const unsigned t = 16 * n16 + blockIdx.x * BLOCK + tid;  // the last n % 16 (< 16) values
    if (t < (unsigned)n)
        atomicAdd(&hist[in[t]], 1u);
    __syncthreads();

    for (unsigned b = tid; b < BINS; b += BLOCK) {
        unsigned long long total = 0;
#pragma unroll 8
        for (unsigned w = 0; w < WARPS; ++w)
            total += local[w * BINS + b];
        if (total != 0)
            atomicAdd(&bins[b], total);
    }
}
