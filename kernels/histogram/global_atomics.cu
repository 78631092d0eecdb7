// histogram / global_atomics
// The textbook first try: every thread walks the input with a grid-stride loop and adds 1 to the
// value's bin in global memory with atomicAdd. Correct, but every one of the n updates is an
// atomic read-modify-write in L2 on one of only 256 addresses: uniform data spreads them over 256
// counters, one-bin data serialises all n of them on one address. The bins are 64-bit (what CUB
// counts in); the host zeroes them before the launch. Expected limiter: L2 atomic throughput on
// the hot addresses (contention), far below DRAM bandwidth.

#ifndef BLOCK
#define BLOCK 256
#endif

static_assert(BLOCK >= 32 && BLOCK <= 1024 && BLOCK % 32 == 0, "BLOCK must be whole warps, 32..1024");

extern "C" __global__ void __launch_bounds__(BLOCK)
histogram_global_atomics(const unsigned char* __restrict__ in, unsigned long long* __restrict__ bins, int n)
{
    const unsigned stride = gridDim.x * BLOCK;
    for (unsigned i = blockIdx.x * BLOCK + threadIdx.x; i < (unsigned)n; i += stride)
        atomicAdd(&bins[in[i]], 1ull);
}
