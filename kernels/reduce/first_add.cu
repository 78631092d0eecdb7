// reduce / first_add
// Changed from sequential: each block covers 2*BLOCK elements and every thread adds its two
// (BLOCK apart, both coalesced) while loading, so no thread idles at the first step and half as
// many blocks run the tree. The manifest's tile is 2*BLOCK for the same reason.
// Expected limiter: the tree's barriers and instruction overhead, per 2 elements loaded.

#ifndef BLOCK
#define BLOCK 256
#endif

static_assert(BLOCK >= 2 && BLOCK <= 1024 && (BLOCK & (BLOCK - 1)) == 0,
              "the tree halves the block each step: BLOCK must be a power of two, 2..1024");

extern "C" __global__ void __launch_bounds__(BLOCK)
reduce_first_add(const float* __restrict__ in, float* __restrict__ out, int n)
{
    __shared__ float sdata[BLOCK];

    const unsigned tid = threadIdx.x;
    const unsigned i = blockIdx.x * (2 * BLOCK) + tid;   // < 2^31 + 2^11: no unsigned overflow
    float sum = i < (unsigned)n ? in[i] : 0.0f;
    if (i + BLOCK < (unsigned)n)
        sum += in[i + BLOCK];
    sdata[tid] = sum;
    __syncthreads();

    for (unsigned s = BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}
