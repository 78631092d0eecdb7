// reduce / interleaved_divergent
// Mark Harris's first tree: each block loads BLOCK elements into shared memory and halves the
// active set log2(BLOCK) times; at step s the threads with tid % (2s) == 0 add their neighbour s
// away. The active threads are scattered over every warp, so all warps stay busy with mostly idle
// lanes (divergence), and the % is an extra integer op. The block writes its partial sum to
// out[blockIdx.x]; the host launches again on the partials until one value remains.
// Expected limiter: instruction issue of the divergent tree, far below DRAM bandwidth.

#ifndef BLOCK
#define BLOCK 256
#endif

static_assert(BLOCK >= 2 && BLOCK <= 1024 && (BLOCK & (BLOCK - 1)) == 0,
              "the tree halves the block each step: BLOCK must be a power of two, 2..1024");

extern "C" __global__ void __launch_bounds__(BLOCK)
reduce_interleaved_divergent(const float* __restrict__ in, float* __restrict__ out, int n)
{
    __shared__ float sdata[BLOCK];

    const unsigned tid = threadIdx.x;
    const unsigned i = blockIdx.x * BLOCK + tid;
    sdata[tid] = i < (unsigned)n ? in[i] : 0.0f;         // zeros past the end leave the sum unchanged
    __syncthreads();

    for (unsigned s = 1; s < BLOCK; s *= 2) {
        if (tid % (2 * s) == 0)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}
