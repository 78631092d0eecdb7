// reduce / unroll_last_warp
// Changed from first_add: once 32 or fewer threads are active they are one warp, so the last six
// steps need no __syncthreads. Since Volta, a warp's lanes are not guaranteed to run in lockstep,
// so the old "volatile, no sync" version is a race: here each step reads its partner into a
// register, __syncwarp(), writes, __syncwarp() (the pattern of NVIDIA's Volta tuning guide).
// Expected limiter: the remaining barriers of the block-wide steps and per-block overhead.

#ifndef BLOCK
#define BLOCK 256
#endif

static_assert(BLOCK >= 64 && BLOCK <= 1024 && (BLOCK & (BLOCK - 1)) == 0,
              "BLOCK must be a power of two, 64..1024: the warp step reads sdata[tid + 32]");

extern "C" __global__ void __launch_bounds__(BLOCK)
reduce_unroll_last_warp(const float* __restrict__ in, float* __restrict__ out, int n)
{
    __shared__ float sdata[BLOCK];

    const unsigned tid = threadIdx.x;
    const unsigned i = blockIdx.x * (2 * BLOCK) + tid;
    float sum = i < (unsigned)n ? in[i] : 0.0f;
    if (i + BLOCK < (unsigned)n)
        sum += in[i + BLOCK];
    sdata[tid] = sum;
    __syncthreads();

    for (unsigned s = BLOCK / 2; s > 32; s >>= 1) {
        if (tid < s)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid < 32) {
        // Warp 0 alone: read the partner, wait for every lane's read, then write (a lane's write
        // of sdata[tid] must not land before lane tid - offset has read it).
        float v = sdata[tid];
        for (unsigned offset = 32; offset > 0; offset >>= 1) {
            v += sdata[tid + offset];
            __syncwarp();
            sdata[tid] = v;
            __syncwarp();
        }
        if (tid == 0)
            out[blockIdx.x] = v;
    }
}
