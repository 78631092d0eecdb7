// Shared pieces of the estimating reduce kernels (deliberately wrong, for issue 39's tests): a warp
// and block sum that end in one atomicAdd into out[0] (zeroed by the host: zero_output = true).
#pragma once

static __device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

template <int THREADS>
static __device__ __forceinline__ void block_add(float sum, float* out)
{
    __shared__ float warp_sums[THREADS / 32];
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    sum = warp_sum(sum);
    if (lane == 0)
        warp_sums[warp] = sum;
    __syncthreads();
    if (warp == 0) {
        sum = lane < THREADS / 32 ? warp_sums[lane] : 0.0f;
        sum = warp_sum(sum);
        if (lane == 0)
            atomicAdd(out, sum);
    }
}
