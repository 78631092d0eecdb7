// histogram / warp_aggregated
// Changed from shared_privatized: before touching shared memory, the 32 lanes of a warp find the
// lanes holding the same value with __match_any_sync; the lowest lane of each group adds the
// group's size (__popc of the match mask) in one atomic. Equal values in a warp thus cost one
// atomic instead of up to 32, which removes the serialisation of skewed (one-bin) data; on uniform
// data most groups have one lane and match_any itself is the extra cost. The loop runs over
// whole warps (values past n carry an out-of-range key) so every lane takes part in the match.
// Expected limiter: __match_any_sync issue rate on uniform data; DRAM bandwidth on skewed data.

#ifndef BLOCK
#define BLOCK 512
#endif

#define BINS 256

static_assert(BLOCK >= BINS && BLOCK <= 1024 && BLOCK % 32 == 0, "BLOCK must be whole warps, 256..1024");

static __device__ __forceinline__ void add_aggregated(unsigned* local, unsigned key, unsigned lane)
{
    const unsigned peers = __match_any_sync(0xffffffffu, key);
    if (key < BINS && lane == (unsigned)(__ffs(peers) - 1))  // the group's lowest lane adds for all
        atomicAdd(&local[key], (unsigned)__popc(peers));
}

extern "C" __global__ void __launch_bounds__(BLOCK)
histogram_warp_aggregated(const unsigned char* __restrict__ in, unsigned long long* __restrict__ bins, int n)
{
    __shared__ unsigned local[BINS];
    const unsigned tid = threadIdx.x, lane = tid % 32;
    if (tid < BINS)
        local[tid] = 0;
    __syncthreads();

    const unsigned n4 = (unsigned)n / 4;
    const unsigned stride = gridDim.x * BLOCK;
    const unsigned* in4 = reinterpret_cast<const unsigned*>(in);  // cupy buffers are 256-byte aligned
    // Whole warps iterate together: the bound is rounded up to a multiple of 32 lanes.
    const unsigned rounded = (n4 + 31u) & ~31u;
    for (unsigned i = blockIdx.x * BLOCK + tid; i < rounded; i += stride) {
        const bool valid = i < n4;
        const unsigned w = valid ? in4[i] : 0u;
#pragma unroll
        for (int k = 0; k < 4; ++k)
            add_aggregated(local, valid ? (w >> (8 * k)) & 0xffu : BINS, lane);
    }
    const unsigned t = 4 * n4 + blockIdx.x * BLOCK + tid;  // the last n % 4 (< 4) values
    if (t < (unsigned)n)
        atomicAdd(&local[in[t]], 1u);
    __syncthreads();

    if (tid < BINS && local[tid] != 0)
        atomicAdd(&bins[tid], (unsigned long long)local[tid]);
}
