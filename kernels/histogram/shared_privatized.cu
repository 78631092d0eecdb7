// histogram / shared_privatized
// Changed from global_atomics: each block first counts into its own 256 bins in shared memory
// (privatisation), so the n atomic updates hit on-chip shared memory instead of L2, and only
// 256 global atomics per block remain for the merge. The input is read 4 bytes at a time (one
// 32-bit load gives four values), with the n % 4 tail handled by the first threads. Shared
// counters are 32-bit: one block never sees 2^32 values (n < 2^31). One-bin data still
// serialises every shared atomic of a block on one address. Expected limiter: shared-memory
// atomic throughput (bank conflicts and same-address collisions), not DRAM bandwidth.

#ifndef BLOCK
#define BLOCK 512
#endif

#define BINS 256

static_assert(BLOCK >= BINS && BLOCK <= 1024 && BLOCK % 32 == 0, "BLOCK must be whole warps, 256..1024");

extern "C" __global__ void __launch_bounds__(BLOCK)
histogram_shared_privatized(const unsigned char* __restrict__ in, unsigned long long* __restrict__ bins, int n)
{
    __shared__ unsigned local[BINS];
    const unsigned tid = threadIdx.x;
    if (tid < BINS)
        local[tid] = 0;
    __syncthreads();

    const unsigned n4 = (unsigned)n / 4;
    const unsigned stride = gridDim.x * BLOCK;
    const unsigned* in4 = reinterpret_cast<const unsigned*>(in);  // cupy buffers are 256-byte aligned
    for (unsigned i = blockIdx.x * BLOCK + tid; i < n4; i += stride) {
        const unsigned w = in4[i];
        atomicAdd(&local[w & 0xffu], 1u);
        atomicAdd(&local[(w >> 8) & 0xffu], 1u);
        atomicAdd(&local[(w >> 16) & 0xffu], 1u);
        atomicAdd(&local[w >> 24], 1u);
    }
    const unsigned t = 4 * n4 + blockIdx.x * BLOCK + tid;  // the last n % 4 (< 4) values
    if (t < (unsigned)n)
        atomicAdd(&local[in[t]], 1u);
    __syncthreads();

    if (tid < BINS && local[tid] != 0)
        atomicAdd(&bins[tid], (unsigned long long)local[tid]);
}
