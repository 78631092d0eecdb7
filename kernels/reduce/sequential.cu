// reduce / sequential
// Changed from interleaved: sequential addressing. Step s (BLOCK/2, BLOCK/4, ..., 1) has thread
// tid < s add sdata[tid + s]; a warp reads 32 consecutive words, so there are no bank conflicts,
// and the active threads stay contiguous. Still: half the threads idle from the first step on,
// and each thread loads only one element.
// Expected limiter: the log2(BLOCK) barriers per element loaded; DRAM is far from busy.

#ifndef BLOCK
#define BLOCK 256
#endif

static_assert(BLOCK >= 2 && BLOCK <= 1024 && (BLOCK & (BLOCK - 1)) == 0,
              "the tree halves the block each step: BLOCK must be a power of two, 2..1024");

extern "C" __global__ void __launch_bounds__(BLOCK)
reduce_sequential(const float* __restrict__ in, float* __restrict__ out, int n)
{
    __shared__ float sdata[BLOCK];

    const unsigned tid = threadIdx.x;
    const unsigned i = blockIdx.x * BLOCK + tid;
    sdata[tid] = i < (unsigned)n ? in[i] : 0.0f;
    __syncthreads();

    for (unsigned s = BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0)
        out[blockIdx.x] = sdata[0];
}
