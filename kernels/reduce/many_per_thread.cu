// reduce / many_per_thread
// Changed from complete_unroll: a grid-stride loop. The grid is sized to the SMs (the manifest's
// per_sm), and each thread first sums many elements (pairs BLOCK apart, a stride of the whole
// grid) in a register before the block's tree runs once. The tree and its barriers are now paid
// once per ~n/(grid threads) elements instead of once per two (Brent's theorem: work-efficient).
// The partials (one per block) are summed by a second launch of one block.
// Expected limiter: DRAM bandwidth, with one 4-byte load per thread in flight at a time.

#ifndef BLOCK
#define BLOCK 256
#endif

static_assert(BLOCK >= 64 && BLOCK <= 1024 && (BLOCK & (BLOCK - 1)) == 0,
              "BLOCK must be a power of two, 64..1024: the warp step reads sdata[tid + 32]");

extern "C" __global__ void __launch_bounds__(BLOCK)
reduce_many_per_thread(const float* __restrict__ in, float* __restrict__ out, int n)
{
    __shared__ float sdata[BLOCK];

    const unsigned tid = threadIdx.x;
    const unsigned grid_size = 2 * BLOCK * gridDim.x;
    float sum = 0.0f;
    // i < n < 2^31 and grid_size < 2^31 for any grid sized to the SMs: i + grid_size cannot wrap.
    for (unsigned i = blockIdx.x * (2 * BLOCK) + tid; i < (unsigned)n; i += grid_size) {
        sum += in[i];
        if (i + BLOCK < (unsigned)n)
            sum += in[i + BLOCK];
    }
    sdata[tid] = sum;
    __syncthreads();

    if (BLOCK >= 1024) { if (tid < 512) sdata[tid] = sum = sum + sdata[tid + 512]; __syncthreads(); }
    if (BLOCK >= 512)  { if (tid < 256) sdata[tid] = sum = sum + sdata[tid + 256]; __syncthreads(); }
    if (BLOCK >= 256)  { if (tid < 128) sdata[tid] = sum = sum + sdata[tid + 128]; __syncthreads(); }
    if (BLOCK >= 128)  { if (tid < 64)  sdata[tid] = sum = sum + sdata[tid + 64];  __syncthreads(); }

    if (tid < 32) {
        sum += sdata[tid + 32]; __syncwarp(); sdata[tid] = sum; __syncwarp();
        sum += sdata[tid + 16]; __syncwarp(); sdata[tid] = sum; __syncwarp();
        sum += sdata[tid + 8];  __syncwarp(); sdata[tid] = sum; __syncwarp();
        sum += sdata[tid + 4];  __syncwarp(); sdata[tid] = sum; __syncwarp();
        sum += sdata[tid + 2];  __syncwarp(); sdata[tid] = sum; __syncwarp();
        sum += sdata[tid + 1];
        if (tid == 0)
            out[blockIdx.x] = sum;
    }
}
