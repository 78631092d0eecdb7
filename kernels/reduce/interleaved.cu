// reduce / interleaved
// Changed from interleaved_divergent: thread tid works on index 2*s*tid, so the active threads
// are the first BLOCK/(2s) of the block: whole warps retire instead of every warp keeping a few
// live lanes. New problem: the stride-2s shared-memory accesses of a warp land in the same banks
// (a 2-way conflict at s = 1, growing to 16-way at s = 16).
// Expected limiter: shared-memory bank conflicts and the barrier per step.

#ifndef BLOCK
#define BLOCK 256
#endif

static_assert(BLOCK >= 2 && BLOCK <= 1024 && (BLOCK & (BLOCK - 1)) == 0,
              "the tree halves the block each step: BLOCK must be a power of two, 2..1024");

extern "C" __global__ void __launch_bounds__(BLOCK)
reduce_interleaved(const float* __restrict__ in, float* __restrict__ out, int n)
{
    __shared__ float sdata[BLOCK];

    const unsigned tid = threadIdx.x;
    const unsigned i = blockIdx.x * BLOCK + tid;
    sdata[tid] = i < (unsigned)n ? in[i] : 0.0f;
    __syncthreads();

    for (unsigned s = 1; s < BLOCK; s *= 2) {
        const unsigned index = 2 * s * tid;
        if (index < BLOCK)                                // index + s < BLOCK follows: index is a multiple of 2s
            sdata[index] += sdata[index + s];
        __syncthreads();
    }
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}
