// reduce / warp_shuffle
// Changed from many_per_thread: the tree runs in registers. __shfl_down_sync adds lane + offset
// into lane (offsets 16, 8, 4, 2, 1), so each warp reduces its 32 sums with no shared memory and
// no barrier; only the BLOCK/32 warp sums meet in shared memory, behind one __syncthreads, and
// warp 0 shuffles them down to the block's partial. Same grid-stride load loop, same two launches.
// Expected limiter: DRAM bandwidth, with one 4-byte load per thread in flight at a time.

#ifndef BLOCK
#define BLOCK 256
#endif

static_assert(BLOCK >= 32 && BLOCK <= 1024 && BLOCK % 32 == 0, "BLOCK must be whole warps, 32..1024");

static __device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;                                           // lane 0 holds the warp's sum
}

extern "C" __global__ void __launch_bounds__(BLOCK)
reduce_warp_shuffle(const float* __restrict__ in, float* __restrict__ out, int n)
{
    __shared__ float warp_sums[BLOCK / 32];

    const unsigned tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const unsigned grid_size = 2 * BLOCK * gridDim.x;
    float sum = 0.0f;
    for (unsigned i = blockIdx.x * (2 * BLOCK) + tid; i < (unsigned)n; i += grid_size) {
        sum += in[i];
        if (i + BLOCK < (unsigned)n)
            sum += in[i + BLOCK];
    }

    sum = warp_sum(sum);
    if (lane == 0)
        warp_sums[warp] = sum;
    __syncthreads();
    if (warp == 0) {
        sum = lane < BLOCK / 32 ? warp_sums[lane] : 0.0f;
        sum = warp_sum(sum);
        if (lane == 0)
            out[blockIdx.x] = sum;
    }
}
